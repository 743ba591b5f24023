"""``generate_world``: plan, truth, filler and the mirror, streamed to disk.

Order of work: build the planted plan (small, in memory), place its pages among the
filler page ids, assign revision ids, compute truth from the plan and check the plan's
promises (expected rows present, traps absent), then stream every page of both wikis
once, in page-id order, into one history file per page-id range and dump date (older
dumps get the revisions before their cutoff). Memory stays constant: one page at a time.
"""

from __future__ import annotations

import calendar
import functools
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from emerge_lib.core.children import die_with
from emerge_lib.sample import render
from emerge_lib.sample.filler import Filler, FillerSettings, IdSpace, RevOut
from emerge_lib.sample.mirror import FORMATS, DumpRun, HistoryWriter, WrittenFile, publish
from emerge_lib.sample.model import (
    DAY,
    Article,
    ItemState,
    Plan,
    PlanEntity,
    PlanPage,
    Redirect,
    iso,
    to_seconds,
    ymd,
)
from emerge_lib.sample.plan import LEGACY_END, PROPERTY_LABELS, WINDOW, WINDOWS, build_plan
from emerge_lib.sample.semantics import (
    DESIGN,
    RELEASED,
    UNSELECTED,
    PlanTruth,
    TruthSettings,
    applies,
)

DEFAULT_SNAPSHOTS = ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")
WIKIDATA, ENWIKI = "wikidatawiki", "enwiki"
WIKIDATA_EPOCH = to_seconds("2012-10-29T00:00:00Z")
ENWIKI_EPOCH = to_seconds("2001-01-15T00:00:00Z")
MIN_SNAPSHOT_GAP = 60 * DAY
_BADGES = to_seconds("2013-04-01T00:00:00Z")


class PlanError(RuntimeError):
    """The planted world does not deliver what its scenarios promise (a generator bug)."""


@dataclass
class SampleSpec:
    """What to generate. ``revisions`` is the mean number of revisions per filler page."""

    seed: int = 0
    items: int = 1000
    articles: int = 300
    revisions: int = 4
    snapshots: tuple[str, ...] = DEFAULT_SNAPSHOTS
    dump_dates: tuple[str, ...] | None = None
    pages_per_file: int | None = None
    compress: bool = True
    compress_level: int = 9
    formats: tuple[str, ...] = FORMATS  # each history file in bz2 and 7z, as Wikimedia
    jobs: int = 1
    # bench mode (opt-in, see filler.py): extra item-valued statements per filler item and
    # linked filler paragraphs inside the windows; truth.jsonl then lists planted rows only
    bench_statements: int = 0
    bench_passages: int = 0
    # the planted scenarios around each t (plan.SCENARIOS); None: every one. A subset makes
    # the worlds of histories that give a stage nothing (plan.EMPTY_CASES)
    scenarios: tuple[str, ...] | None = None
    new_text: bool = True  # False: no paragraph is added after t (no passage)
    # Wikimedia's daily adds/changes dumps too (sample.incr), mirror/other/incr/…: one per
    # day from the first dump date to the day before the newest
    increments: bool = False
    # of a filler page's later edits, the share in the last 200 days before the newest dump
    # (the rest spread from its creation on): with --revisions, sets the history's size
    # apart from the newest quarter's (benchmarks/extension.py: history doubled, the same
    # quarter)
    recent_share: float = 0.5
    # Wikimedia's logging dump beside each full dump (sample.logdump), and the planted
    # deletions, restoration and move inside the last quarter that only it (or the newer
    # full dump) reveals; off: the world is unchanged
    logging: bool = False
    # each logging dump in this many parts (pages-logging1..N.xml.gz, a range of log ids
    # each, as the largest wikis' are); 1: one pages-logging.xml.gz
    logging_parts: int = 1

    @property
    def bench(self) -> bool:
        return bool(self.bench_statements or self.bench_passages)


@dataclass
class WorldReport:
    """What was written (sizes) and how long it took (not written to disk: not deterministic)."""

    out: Path
    dumps: dict[str, list[str]]
    truth_rows: int
    trap_rows: int
    xml_bytes: int = 0
    compressed_bytes: int = 0  # of the first format
    compressed: dict[str, int] = field(default_factory=dict)  # bytes per format
    pages: int = 0
    revisions: int = 0
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.xml_bytes / 1e6 / self.seconds if self.seconds else 0.0


# --------------------------------------------------------------------------- dates


def covering_dump_date(ts: int) -> int:
    """The first 1st-or-20th-of-month date at or after ts (Wikimedia's dump schedule)."""
    t = time.gmtime(ts)
    year, month = t.tm_year, t.tm_mon
    while True:
        for day in (1, 20):
            d = calendar.timegm((year, month, day, 0, 0, 0))
            if d >= ts:
                return d
        month += 1
        if month > 12:
            year, month = year + 1, 1


def default_dump_dates(snapshots: list[int]) -> list[int]:
    """One dump covering each snapshot's windows plus the stability span, and at least two."""
    need = [covering_dump_date(t + WINDOWS * WINDOW + 7 * DAY + DAY) for t in snapshots]
    dates = sorted(set(need))
    if len(dates) == 1:
        dates.append(covering_dump_date(dates[0] + 25 * DAY))
    return dates


def validate_snapshots(snapshots: list[int]) -> None:
    if not snapshots:
        raise ValueError("at least one snapshot is needed")
    for a, b in zip(snapshots, snapshots[1:], strict=False):
        if b - a < MIN_SNAPSHOT_GAP:
            raise ValueError("snapshots must be at least 60 days apart so that planted scenarios "
                             f"do not overlap ({iso(a)} and {iso(b)})")
    if snapshots[0] < to_seconds("2015-01-01T00:00:00Z"):
        raise ValueError("snapshots must be in 2015 or later (the core world is built in 2012-14)")


# --------------------------------------------------------------------------- the world


class World:
    """The plan placed into page-id spaces, with filler, ready to be rendered page by page."""

    def __init__(self, spec: SampleSpec) -> None:
        self.spec = spec
        self.snapshots = sorted(to_seconds(s) for s in spec.snapshots)
        validate_snapshots(self.snapshots)
        if spec.dump_dates:
            self.cutoffs = sorted(to_seconds(d) for d in spec.dump_dates)
        else:
            self.cutoffs = default_dump_dates(self.snapshots)
        last_need = self.snapshots[-1] + WINDOWS * WINDOW + 7 * DAY
        if self.cutoffs[-1] < last_need:
            raise ValueError(f"the newest dump date must be at or after {ymd(last_need)}")
        self.dates = [ymd(c) for c in self.cutoffs]
        self.plan: Plan = build_plan(
            self.snapshots, None if spec.scenarios is None else frozenset(spec.scenarios),
            spec.new_text)
        self.removals: list = []
        if spec.logging:
            from emerge_lib.sample.logdump import plant

            if len(self.cutoffs) < 2:
                raise ValueError("a world with logging dumps needs two dump dates (the "
                                 "deletions are planted between the last two)")
            self.removals = plant(self.plan, self.cutoffs[-2], self.cutoffs[-1])
        end = self.cutoffs[-1] - DAY
        self.end = end

        items = [e for e in self.plan.entities.values() if not e.is_property]
        n_items_f = max(0, spec.items - len(items))
        articles = [p for p in self.plan.pages.values() if isinstance(p.revs[0].content, Article)]
        n_articles_f = max(0, spec.articles - len(articles))

        wd_total = n_items_f + len(self.plan.entities)
        wd_ids = IdSpace.place([(e.created, k) for k, e in self.plan.entities.items()],
                               wd_total, WIKIDATA_EPOCH, end)
        en_total = Filler.enwiki_total(n_articles_f) + len(self.plan.pages)
        en_ids = IdSpace.place([(p.created, k) for k, p in self.plan.pages.items()],
                               en_total, ENWIKI_EPOCH, end)
        self.wd = IdSpace(wd_total, list(wd_ids.values()), WIKIDATA_EPOCH, end, WIKIDATA_EPOCH)
        self.en = IdSpace(en_total, list(en_ids.values()), ENWIKI_EPOCH, end, ENWIKI_EPOCH)
        for key, e in self.plan.entities.items():
            e.page_id = wd_ids[key]
            e.qid = e.pid if e.is_property else f"Q{e.page_id}"  # type: ignore[assignment]
            _assign_rev_ids(e.revs, self.wd, e.page_id)
            e.revs.sort(key=lambda r: r.rev_id)
        for key, p in self.plan.pages.items():
            p.page_id = en_ids[key]
            _assign_rev_ids(p.revs, self.en, p.page_id)
            p.revs.sort(key=lambda r: r.rev_id)
        self.by_wd_pid = {e.page_id: e for e in self.plan.entities.values()}
        self.by_en_pid = {p.page_id: p for p in self.plan.pages.values()}
        # (wiki, page id) -> its deletion (and restoration), for the dumps that leave it out
        self.gone = {(r.wiki, (self.plan.pages[r.key] if r.wiki == ENWIKI
                               else self.plan.entities[r.key]).page_id): r
                     for r in self.removals}

        forbidden = [(t - 3600, t + WINDOWS * WINDOW + 3600) for t in self.snapshots]
        self.filler = Filler(
            FillerSettings(spec.seed, n_items_f, n_articles_f, spec.revisions, end, LEGACY_END, forbidden,
                           spec.bench_statements, spec.bench_passages,
                           tuple((t + (k - 1) * WINDOW, t + k * WINDOW)
                                 for t in self.snapshots for k in range(1, WINDOWS + 1)),
                           spec.recent_share),
            self.wd, self.en, {k: e.qid for k, e in self.plan.entities.items()},
            frozenset(t for p in self.plan.pages.values() for _, t in p.titles),
        )
        self.ref_qid = self.plan.entities["core:archive"].qid

    def qid(self, key: str) -> str:
        return self.plan.entities[key].qid

    # ---- truth
    def truth(self, settings: TruthSettings = RELEASED) -> tuple[list[dict], list[dict]]:
        """truth rows and traps under ``settings`` (RELEASED: the defaults, what the
        released data shows; DESIGN: docs/semantics.md §1.1-1.2), after checking the plan's
        promises."""
        calc = PlanTruth(self.plan, settings)
        rows = []
        for t in self.snapshots:
            rows.extend(calc.instances(t))
        self._check_promises(rows, settings.name)
        tags: dict[tuple, list[str]] = {}
        for x in self.plan.expectations:
            if applies(x.settings, settings.name):
                tags.setdefault((x.snapshot, x.window, x.op, x.s, x.p, x.o, x.page), []).extend(x.tags)
        out = []
        for r in rows:
            page = self.plan.pages[r["page"]]
            out.append({
                "snapshot": iso(r["snapshot"]), "window": r["window"], "op": r["op"],
                "s": self.qid(r["s"]), "p": r["p"], "o": self.qid(r["o"]), "signal": r["signal"],
                "page_title": page.title, "page_id": page.page_id,
                "paragraph": r["paragraph"], "paragraph_first_seen": iso(r["first_seen"]),
                "mentioned": sorted(self.qid(m) for m in r["mentioned"]),
                "qualifiers": [{"p": p, "time": v, "precision": n} for p, v, n in r["qualifiers"]],
                "s_label": self.plan.labels[r["s"]], "p_label": PROPERTY_LABELS.get(r["p"]) or self.plan.labels.get(
                    "prop:" + r["p"], r["p"]),
                "o_label": self.plan.labels[r["o"]],
                "scenario": self.plan.scenario_of.get((r["page"], r["paragraph"]), "incidental"),
                "tags": sorted(set(tags.get((r["snapshot"], r["window"], r["op"], r["s"], r["p"], r["o"], r["page"]), []))),
            })
        out.sort(key=lambda r: (r["snapshot"], r["window"], r["page_id"], r["paragraph"], r["op"], r["s"], r["p"], r["o"]))
        traps = []
        for tr in self.plan.traps:
            if not applies(tr.settings, settings.name):
                continue
            page = self.plan.pages[tr.page] if tr.page else None
            traps.append({
                "snapshot": iso(tr.snapshot), "window": tr.window, "kind": tr.kind, "op": tr.op,
                "s": self.qid(tr.s) if tr.s else None, "p": tr.p, "o": self.qid(tr.o) if tr.o else None,
                "page_title": page.title if page else None, "page_id": page.page_id if page else None,
                "paragraph": tr.paragraph, "reason": tr.reason,
            })
        return out, traps

    def _check_promises(self, rows: list[dict], settings: str) -> None:
        keyed = {(r["snapshot"], r["window"], r["op"], r["s"], r["p"], r["o"], r["page"]): r for r in rows}
        for x in self.plan.expectations:
            if not applies(x.settings, settings):
                continue
            got = keyed.get((x.snapshot, x.window, x.op, x.s, x.p, x.o, x.page))
            if got is None or got["signal"] != x.signal:
                raise PlanError(f"expected row missing or different ({settings}): {x} (got {got})")
        for tr in self.plan.traps:
            if not applies(tr.settings, settings):
                continue
            for r in rows:
                if r["snapshot"] != tr.snapshot:
                    continue
                if tr.window is not None and r["window"] != tr.window:
                    continue
                if tr.paragraph is not None and r["paragraph"] != tr.paragraph:
                    continue
                if tr.op is not None and (r["op"], r["s"], r["p"], r["o"]) != (tr.op, tr.s, tr.p, tr.o):
                    continue
                if tr.op is not None and tr.page is not None and r["page"] != tr.page:
                    continue  # the same row may rightly come from another page
                if tr.op is None and tr.paragraph is None:
                    continue
                raise PlanError(f"trap {tr.kind} sprung ({settings}): {r}")

    # ---- pages
    def wikidata_page(self, pid: int) -> tuple[str, int, list[RevOut]]:
        e = self.by_wd_pid.get(pid)
        if e is None:
            return self.filler.item_page(self.wd.filler_index(pid), pid)  # type: ignore[arg-type]
        return self._entity_page(e)

    def enwiki_page(self, pid: int) -> tuple[str, int, list[RevOut]]:
        p = self.by_en_pid.get(pid)
        if p is None:
            return self.filler.enwiki_page(self.en.filler_index(pid), pid)  # type: ignore[arg-type]
        return self._article_page(p)

    def title_at(self, wiki: str, pid: int, cutoff: int) -> str | None:
        """A planted article's title in a dump cut at ``cutoff`` (it may have moved since;
        None: the page's one title)."""
        p = self.by_en_pid.get(pid) if wiki == ENWIKI else None
        return p.title_at(cutoff - 1) if p is not None and len(p.titles) > 1 else None

    def visible(self, wiki: str, pid: int, cutoff: int) -> bool:
        """Whether the full dump cut at ``cutoff`` has the page (a deleted one: not)."""
        gone = self.gone.get((wiki, pid))
        return gone is None or gone.visible(cutoff)

    def _entity_page(self, e: PlanEntity) -> tuple[str, int, list[RevOut]]:
        model = "wikibase-property" if e.is_property else "wikibase-item"
        out: list[RevOut] = []
        parent = 0
        for r in e.revs:
            if r.content is None:
                text, target = None, None
            else:
                assert isinstance(r.content, ItemState)
                if r.legacy:
                    text = render.render_legacy(e.qid, r.content, self.qid, self.ref_qid, badges=r.ts >= _BADGES)
                else:
                    text = render.render_current(e.qid, r.content, self.qid, self.ref_qid)
                target = self.qid(r.content.redirect) if r.content.redirect else ""
            xml = render.revision(
                r.rev_id, parent, iso(r.ts), render.contributor(r.user, r.ip, r.user_hidden),
                None if r.comment_hidden else r.comment, model, "application/json", text, minor=r.minor)
            out.append((r.ts, r.rev_id, xml, target))
            parent = r.rev_id
        return e.title, 120 if e.is_property else 0, out

    def _article_page(self, p: PlanPage) -> tuple[str, int, list[RevOut]]:
        out: list[RevOut] = []
        parent = 0
        for r in p.revs:
            if r.content is None:
                text, target = None, None
            elif isinstance(r.content, Redirect):
                text, target = r.content.raw, r.content.target
            else:
                assert isinstance(r.content, Article)
                text, target = r.content.raw, ""
            xml = render.revision(
                r.rev_id, parent, iso(r.ts), render.contributor(r.user, r.ip, r.user_hidden),
                None if r.comment_hidden else r.comment, "wikitext", "text/x-wiki", text, minor=r.minor)
            out.append((r.ts, r.rev_id, xml, target))
            parent = r.rev_id
        return p.title, 0, out

    # ---- files
    def chunks(self, wiki: str) -> list[tuple[int, int]]:
        total = self.wd.total if wiki == WIKIDATA else self.en.total
        per = self.spec.pages_per_file or max(50, -(-total // max(4, -(-total // 20000))))
        return [(lo, min(lo + per - 1, total)) for lo in range(1, total + 1, per)]


def _assign_rev_ids(revs: list, space: IdSpace, page_id: int) -> None:
    used: set[int] = set()
    for r in sorted(revs, key=lambda r: (r.ts, r.id_ts or 0)):
        ts = r.id_ts if r.id_ts is not None else r.ts
        rid = space.rev_id(ts, page_id)
        while rid in used:
            ts += 1
            rid = space.rev_id(ts, page_id)
        used.add(rid)
        r.rev_id = rid


def page_xml_for(title: str, ns: int, pid: int, revs: list[RevOut], cutoff: int) -> tuple[str, int] | None:
    """The ``<page>`` for one dump: revisions before its cutoff, redirect as of its latest."""
    kept = [r for r in revs if r[0] < cutoff]
    if not kept:
        return None
    readable = [r for r in kept if r[3] is not None]
    latest = max(readable, key=lambda r: (r[0], r[1])) if readable else None
    redirect = latest[3] if latest is not None and latest[3] else None
    return (render.page_open(title, ns, pid, redirect) + "".join(r[2] for r in kept)
            + render.PAGE_CLOSE), len(kept)


# --------------------------------------------------------------------------- streaming

_WORLD: World | None = None
_BAR: object | None = None  # a tqdm bar, updated per page when writing in this process


def _write_chunk(task: tuple[str, int, int, int, str]) -> list[tuple[str, WrittenFile]]:
    """Write one page-id range of one wiki into every dump date; returns (date, file)."""
    wiki, part, lo, hi, mirror = task
    world = _WORLD
    assert world is not None
    header = render.siteinfo(wiki)
    writers = [HistoryWriter(Path(mirror) / wiki / date, wiki, date, part, header,
                             compress=world.spec.compress, level=world.spec.compress_level,
                             formats=world.spec.formats)
               for date in world.dates]
    page_fn = world.wikidata_page if wiki == WIKIDATA else world.enwiki_page
    for pid in range(lo, hi + 1):
        if _BAR is not None and pid % 100 == 0:
            _BAR.update(100)  # type: ignore[attr-defined]
        title, ns, revs = page_fn(pid)
        for writer, cutoff in zip(writers, world.cutoffs, strict=True):
            if not world.visible(wiki, pid, cutoff):
                continue
            page = page_xml_for(world.title_at(wiki, pid, cutoff) or title, ns, pid, revs, cutoff)
            if page is not None:
                writer.write_page(pid, page[0], page[1])
    return [(date, written) for writer, date in zip(writers, world.dates, strict=True)
            for written in writer.close(render.FOOTER)]


def _tasks(world: World, mirror: Path) -> Iterator[tuple[str, int, int, int, str]]:
    for wiki in (WIKIDATA, ENWIKI):
        chunks = world.chunks(wiki)
        parts = min(27, len(chunks))
        for c, (lo, hi) in enumerate(chunks):
            yield wiki, c * parts // len(chunks) + 1, lo, hi, str(mirror)


def generate_world(out: str | Path, spec: SampleSpec | None = None, *, progress: bool = False) -> WorldReport:
    """Generate the sample world into ``out``: mirror/, truth.jsonl, traps.jsonl,
    config.yaml and world.json. Deterministic for a given spec (except the timing)."""
    global _WORLD, _BAR
    spec = spec or SampleSpec()
    if not spec.formats or set(spec.formats) - set(FORMATS):
        raise ValueError(f"dump formats are {', '.join(FORMATS)}, not {', '.join(spec.formats)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    world = World(spec)
    truth, traps = world.truth(RELEASED)
    _write_jsonl(out / "truth.jsonl", truth)
    _write_jsonl(out / "traps.jsonl", traps)
    for variant in (DESIGN, UNSELECTED):
        variant_truth, variant_traps = world.truth(variant)
        _write_jsonl(out / f"truth-{variant.name}.jsonl", variant_truth)
        _write_jsonl(out / f"traps-{variant.name}.jsonl", variant_traps)

    mirror = out / "mirror"
    runs = {(wiki, date): DumpRun(wiki, date) for wiki in (WIKIDATA, ENWIKI) for date in world.dates}
    tasks = list(_tasks(world, mirror))
    _WORLD = world
    bar = _progress(world, progress)
    try:
        if spec.jobs > 1:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(spec.jobs, initializer=die_with, initargs=(os.getpid(),)) as pool:
                for task, result in zip(tasks, pool.imap(_write_chunk, tasks), strict=True):
                    _collect(runs, task[0], result, bar, task)
        else:
            _BAR = bar
            for task in tasks:
                _collect(runs, task[0], _write_chunk(task), None, task)
            if bar is not None:
                bar.update(world.wd.total + world.en.total - bar.n)  # type: ignore[attr-defined]
    finally:
        _WORLD = _BAR = None
        if bar is not None:
            bar.close()

    report = WorldReport(out, {w: list(world.dates) for w in (WIKIDATA, ENWIKI)}, len(truth), len(traps))
    manifest_files = {}
    primary = spec.formats[0] if spec.compress else "xml"
    if spec.logging:
        _logging_dumps(world, mirror, runs)
    for (wiki, date), run in runs.items():
        folder = mirror / wiki / date
        publish(folder, run)
        manifest_files[f"{wiki}/{date}"] = [asdict(f) for f in sorted(run.files, key=lambda f: f.name)]
        for f in run.files:
            report.compressed[f.format] = report.compressed.get(f.format, 0) + f.size
            report.files.append(f"{wiki}/{date}/{f.name}")
            if f.format == primary:  # the same XML in each format: counted once
                report.xml_bytes += f.xml_bytes
                report.compressed_bytes += f.size
                report.pages += f.pages
                report.revisions += f.revisions
    about = manifest(world, spec, truth, traps, manifest_files)
    if spec.increments:
        about["dumps"]["increments"] = _increments(world, mirror)
    if spec.logging:
        about["logging"] = _planted_log(world)
    (out / "config.yaml").write_text(config_yaml(world, spec), encoding="utf-8")
    (out / "world.json").write_text(json.dumps(about, indent=1, sort_keys=True) + "\n",
                                    encoding="utf-8")
    report.seconds = time.perf_counter() - started
    return report


def _logging_dumps(world: World, mirror: Path, runs: dict) -> None:
    """The logging dump of every dump run (sample.logdump), listed with its files."""
    from emerge_lib.sample.logdump import events, write_logging

    by_wiki = events(world.plan, world.removals)
    for (wiki, date), run in runs.items():
        cutoff = world.cutoffs[world.dates.index(date)]
        run.files.extend(write_logging(mirror / wiki / date, wiki, date, cutoff, by_wiki[wiki],
                                       parts=world.spec.logging_parts))


def _planted_log(world: World) -> dict[str, list[dict]]:
    """world.json's record of the planted log events: what a reconciliation must find."""
    from emerge_lib.sample.logdump import MOVED_ARTICLE

    out: dict[str, list[dict]] = {"deleted": [], "restored": [], "moved": []}
    for r in world.removals:
        page = world.plan.pages[r.key] if r.wiki == ENWIKI else world.plan.entities[r.key]
        row = {"wiki": r.wiki, "page_id": page.page_id, "title": page.title,
               "deleted": iso(r.deleted)}
        if r.restored is None:
            out["deleted"].append(row)
        else:
            out["restored"].append(row | {"restored": iso(r.restored)})
    moved = world.plan.pages[MOVED_ARTICLE]
    out["moved"].append({"wiki": ENWIKI, "page_id": moved.page_id, "title": moved.title,
                         "from": moved.titles[0][1], "moved": iso(moved.titles[-1][0])})
    return out


def _increments(world: World, mirror: Path) -> list[str]:
    """The daily adds/changes dumps of both wikis (sample.incr); returns their dates."""
    from emerge_lib.sample.incr import day_start, write_increments

    first, last = day_start(world.dates[0]), day_start(world.dates[-1]) - DAY
    if last < first:
        return []
    dates: list[str] = []
    for wiki, total, page_of in ((WIKIDATA, world.wd.total, world.wikidata_page),
                                 (ENWIKI, world.en.total, world.enwiki_page)):
        dates = write_increments(mirror, wiki, range(1, total + 1), page_of, first, last,
                                 functools.partial(world.title_at, wiki))
    return dates


def _collect(runs: dict, wiki: str, result: list[tuple[str, WrittenFile]], bar: object, task: tuple) -> None:
    for date, written in result:
        runs[(wiki, date)].files.append(written)
    if bar is not None:
        bar.update(task[3] - task[2] + 1)  # type: ignore[attr-defined]


def _progress(world: World, enabled: bool) -> object | None:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=world.wd.total + world.en.total, unit="page", file=sys.stderr,
                desc="emerge sample", dynamic_ncols=True)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def config_yaml(world: World, spec: SampleSpec) -> str:
    """A ready configuration; paths are relative to the file (load_config resolves them)."""
    dates = ", ".join(f"'{d}'" for d in world.dates)
    stamps = ", ".join(f"'{iso(t)}'" for t in world.snapshots)
    return (
        f"# Generated by `emerge sample --seed {spec.seed} --items {spec.items} "
        f"--articles {spec.articles} --revisions {spec.revisions}"
        + (f" --bench-statements {spec.bench_statements} --bench-passages {spec.bench_passages}"
           if spec.bench else "")
        + (f" --recent-share {spec.recent_share}"
           if spec.recent_share != SampleSpec.recent_share else "") + "`.\n"
        "# Relative paths (and file://mirror) are resolved against this file's folder.\n"
        "warehouse: warehouse\n"
        "dumps:\n"
        "  mirror: file://mirror\n"
        "  download_dir: downloads\n"
        "  synthetic: true  # a generated mirror: the release's card says so\n"
        "  wikidata:\n"
        "    wiki: wikidatawiki\n"
        f"    dates: [{dates}]\n"
        "  wikipedia:\n"
        "    wiki: enwiki\n"
        f"    dates: [{dates}]\n"
        "snapshots:\n"
        f"  timestamps: [{stamps}]\n"
        f"  windows: {WINDOWS}\n"
        "  window_days: 7\n"
    )


def manifest(world: World, spec: SampleSpec, truth: list[dict], traps: list[dict],
             files: dict[str, list[dict]]) -> dict:
    """world.json: the spec, dumps and planted entities (for tests and curious humans)."""
    out = {
        "generator": "emerge sample",
        "spec": {k: v for k, v in asdict(spec).items()
                 if k not in ("jobs",) and not ((k.startswith("bench_") or k in ("increments", "logging"))
                                                and not v)
                 and not (k == "recent_share" and v == SampleSpec.recent_share)
                 and not (k == "logging_parts" and v == SampleSpec.logging_parts)},
        "snapshots": [iso(t) for t in world.snapshots],
        "dumps": {"dates": world.dates, "cutoffs": [iso(c) for c in world.cutoffs], "files": files},
        "truth": {"rows": len(truth), "by_op": dict(sorted(Counter(r["op"] for r in truth).items())),
                  "traps": len(traps)},
        "pages": {WIKIDATA: world.wd.total, ENWIKI: world.en.total},
        "planted": {
            "entities": {k: {"qid": e.qid, "page_id": e.page_id, "label": world.plan.labels.get(k, "")}
                         for k, e in sorted(world.plan.entities.items())},
            "pages": {k: {"page_id": p.page_id, "title": p.title,
                          "titles": [[iso(ts), t] for ts, t in p.titles]}
                      for k, p in sorted(world.plan.pages.items())},
        },
    }
    if spec.bench:
        out["bench"] = {"statements_per_item": spec.bench_statements, "passages": spec.bench_passages,
                        "truth": "planted rows only: filler bench statements and paragraphs add "
                                 "instances that truth.jsonl does not list"}
    return out
