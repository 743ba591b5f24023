"""The ingest's first step: which dump files (given paths, or the configured mirror's dump
dates), their sizes and the mirror's sha1, and which the warehouse already holds as they
are now (*done*: neither read nor committed again). Paths are checked before anything
starts (``check_inputs``); a plan travels between Airflow tasks as JSON (``to_dict``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config, ConfigError
from emerge_lib.core.errors import InputError
from emerge_lib.ingest.files import DumpFileRef, refs_by_date

if TYPE_CHECKING:
    from emerge_lib.dumps.mirror import ProgressFactory

log = logging.getLogger(__name__)

Kind = Literal["wikidata", "wikipedia"]


Range = tuple[int, int]


KINDS: tuple[Kind, ...] = ("wikidata", "wikipedia")


DELETED = "text_deleted"  # normal in real dumps: counted, not held against the reject ratio


FILE_ERROR = "file_error"


# -- plan ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedFile:
    """One dump file of a plan; ``ranges``: the paragraph ranges a Wikipedia file is read for."""

    ref: DumpFileRef
    bytes: int
    ranges: tuple[Range, ...] = ()
    done: bool = False

    @property
    def name(self) -> str:
        return self.ref.name


@dataclass
class IngestPlan:
    kind: Kind
    wiki: str
    files: list[PlannedFile]
    needed: list[Range] = field(default_factory=list)  # Wikipedia: what the snapshots need
    rewrite: bool = False  # dumps.reingest: every page rewritten unless stored newer
    # per full dump date, the files it consists of (names without compression suffix, from
    # its dumpstatus.json): a date without one never removes a page (``ingest.absent``)
    listing: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pending(self) -> list[PlannedFile]:
        return [f for f in self.files if not f.done]

    def pending_by_date(self) -> list[list[PlannedFile]]:
        by_ref = {f.ref: f for f in self.pending}
        return [[by_ref[r] for r in refs] for refs in refs_by_date(list(by_ref)).values()]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (a plan travels between Airflow tasks through XCom)."""
        return {"kind": self.kind, "wiki": self.wiki, "rewrite": self.rewrite,
                "needed": [list(r) for r in self.needed],
                "files": [{"path": str(f.ref.path), "dump_date": f.ref.dump_date,
                           "sha1": f.ref.sha1, "bytes": f.bytes,
                           "ranges": [list(r) for r in f.ranges], "done": f.done}
                          for f in self.files],
                "listing": {d: list(names) for d, names in self.listing.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IngestPlan:
        files = [PlannedFile(DumpFileRef(Path(f["path"]), f["dump_date"], f["sha1"]), f["bytes"],
                             tuple((a, b) for a, b in f["ranges"]), f["done"])
                 for f in data["files"]]
        return cls(data["kind"], data["wiki"], files,
                   [(a, b) for a, b in data["needed"]], data["rewrite"],
                   {d: list(names) for d, names in data.get("listing", {}).items()})


def check_inputs(paths: Sequence[str | Path]) -> list[Path]:
    """Every path must be a non-empty regular file that looks like a dump (XML or a known
    compression by its magic bytes); one InputError names every bad one, before any
    engine starts or any file is read."""
    from emerge_lib.dumps.compressed import DumpInputError, check_input, detect_codec

    problems, out = [], []
    for raw in paths:
        p = Path(raw)
        try:
            check_input(p)
            detect_codec(p)
        except DumpInputError as exc:
            problems.append(str(exc))
        else:
            out.append(p)
    if len(problems) == 1:
        raise InputError(f"cannot read {problems[0]}")
    if problems:
        raise InputError(f"cannot use {len(problems)} dump files: " + "; ".join(problems))
    seen: dict[str, Path] = {}
    for p in out:  # Wikimedia publishes each history file as .bz2 and .7z: one will do
        same = seen.setdefault(_content_name(p), p)
        if same != p:
            raise InputError(f"{same.name} and {p.name} are the same dump file in two formats "
                             "(or twice): give one of them")
    return out


def _content_name(path: str | Path) -> str:
    """A dump file's name without its compression suffix (the same pages in any format)."""
    name = Path(path).name
    for suffix in (".bz2", ".7z", ".gz", ".xz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def local_inputs(cfg: Config, paths: Sequence[str | Path],
                 progress_factory: ProgressFactory | None = None) -> list[str | Path]:
    """Paths as given; a ``file://`` URL as its path; an ``http(s)://`` URL of a file on a
    dump mirror (``…/{wiki}/{YYYYMMDD}/{name}``) downloaded into ``dumps.download_dir``,
    resumably and verified against the mirror's published size and checksums."""
    from urllib.parse import unquote, urlparse

    out: list[str | Path] = []
    for raw in paths:
        text = str(raw)
        url = urlparse(text)
        if url.scheme == "file":
            out.append(Path(unquote(url.path)))
        elif url.scheme in ("http", "https"):
            out.append(_download_url(cfg, text, progress_factory))
        else:
            out.append(raw)
    return out


def _download_url(cfg: Config, url: str, progress_factory: ProgressFactory | None) -> Path:
    from emerge_lib.dumps.mirror import Mirror

    base, _, tail = url.rstrip("/").rpartition("/")
    base, _, date = base.rpartition("/")
    base, _, wiki = base.rpartition("/")
    if not (len(date) == 8 and date.isdigit() and wiki and base):
        raise InputError(f"{url}: not a dump file URL of the form MIRROR/WIKI/YYYYMMDD/NAME")
    with Mirror(base) as mirror:
        found = [f for f in mirror.files(wiki, date, require_done=False) if f.name == tail]
        if not found:
            raise InputError(f"{url}: {tail} is not listed in {wiki} {date}'s dumpstatus.json")
        progress = progress_factory(found[0]) if progress_factory else None
        return mirror.download(found[0], Path(cfg.dumps.download_dir) / wiki / date,
                               progress=progress)


def wiki_of(cfg: Config, kind: Kind) -> str:
    return (cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia).wiki


def needed_ranges_of(cfg: Config, kind: Kind) -> list[Range]:
    if kind != "wikipedia":
        return []
    from emerge_lib.ingest.wikipedia.coverage import ranges_from_config

    ranges = ranges_from_config(cfg)
    if not ranges:
        raise ConfigError("ingesting Wikipedia needs snapshots.timestamps: paragraphs are "
                          "kept for the time ranges the snapshots need")
    return ranges


def refs_from_mirror(cfg: Config, kind: Kind, done: Callable[[str, int | None, str | None], bool],
                     progress_factory: ProgressFactory | None = None,
                     listing: dict[str, list[str]] | None = None) -> list[DumpFileRef]:
    """The configured mirror's history files of the configured dump dates, as local files
    (a file:// mirror is read in place, an http(s) one downloaded, resumably), one per page
    range in the ``dumps.prefer`` format where both are published (a file the warehouse
    already holds in the other format stays as it is); files the warehouse already holds
    are not verified or downloaded again. ``listing`` gets each date's files (names
    without compression suffix)."""
    from emerge_lib.dumps.mirror import Mirror

    dumps = cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia
    out: list[DumpFileRef] = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for date in dumps.dates:
            files = mirror.history_files(dumps.wiki, date, cfg.dumps.prefer,
                                         held=lambda held: done(held.name, held.size, held.sha1))
            if listing is not None:
                listing[date] = sorted(_content_name(f.name) for f in files)
            for f in files:
                skip = done(f.name, f.size, f.sha1)
                if mirror.scheme == "file":
                    path = mirror.local_path(f, verify=not skip)
                elif skip:
                    path = Path(cfg.dumps.download_dir) / dumps.wiki / date / f.name
                else:
                    progress = progress_factory(f) if progress_factory else None
                    dest = Path(cfg.dumps.download_dir) / dumps.wiki / date
                    path = mirror.download(f, dest, progress=progress)
                out.append(DumpFileRef(path, date, f.sha1))
    return out


def listing_beside(wiki: str, refs: Sequence[DumpFileRef]) -> dict[str, list[str]]:
    """Per full dump date of ``refs`` (files given by path), the files its dumpstatus.json
    lists when the files lie in their dump folder as a mirror publishes them
    (``…/{wiki}/{date}/``, dumpstatus.json beside them); dates without one are left out."""
    from emerge_lib.dumps.mirror import Mirror, MirrorError

    out: dict[str, list[str]] = {}
    for ref in refs:
        folder = ref.path.resolve().parent
        if ref.increment or not ref.dump_date or ref.dump_date in out or \
                folder.name != ref.dump_date or folder.parent.name != wiki or \
                not (folder / "dumpstatus.json").is_file():
            continue
        try:
            with Mirror(folder.parent.parent.as_uri()) as mirror:
                out[ref.dump_date] = sorted(_content_name(f.name)
                                            for f in mirror.history_files(wiki, ref.dump_date))
        except MirrorError as exc:
            log.info("%s: the dump's file list is unreadable (%s): it removes no page",
                     ref.name, exc)
    return out


def increment_refs(cfg: Config, catalog: Catalog, kind: Kind, first: str, last: str,
                   progress_factory: ProgressFactory | None = None) -> list[DumpFileRef]:
    """The configured mirror's daily adds/changes dumps of ``first`` … ``last`` (YYYYMMDD)
    as local files (a file:// mirror's in place, verified; an http(s) one's downloaded into
    ``dumps.download_dir``/WIKI/incr/DATE, resumably and verified against its md5sums),
    oldest first. Days before the newest full dump the warehouse holds are left out: that
    dump has their revisions. Every other day of the range must be published and done."""
    from emerge_lib.dumps.mirror import Mirror

    wiki = wiki_of(cfg, kind)
    full = [r["dump_date"] for r in catalog.read_arrow(
        "ingested_files", filters=[("wiki", "=", wiki)],
        columns=["dump_date", "dump_file", "error"]).to_pylist()
        if r["error"] is None and not DumpFileRef.of(r["dump_file"]).increment]
    covered = max(full, default="")
    if covered > first:
        log.info("%s: increments before %s are in the full dump of that date: from %s",
                 wiki, covered, covered)
        first = covered
    if first > last:
        return []
    out: list[DumpFileRef] = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for f in mirror.increments(wiki, first, last):
            if mirror.scheme == "file":
                path = mirror.local_path(f, verify=True)
            else:
                progress = progress_factory(f) if progress_factory else None
                path = mirror.download(f, Path(cfg.dumps.download_dir) / wiki / "incr" / f.date,
                                       progress=progress)
            out.append(DumpFileRef(path, f.date))
    return out


def plan_ingest(cfg: Config, catalog: Catalog, kind: Kind,
                paths: Sequence[str | Path] | None,
                progress_factory: ProgressFactory | None) -> IngestPlan:
    """The files to ingest (``paths``, else the configured mirror's dump dates)."""
    wiki = wiki_of(cfg, kind)
    needed = needed_ranges_of(cfg, kind)
    stored = {r["dump_file"]: r for r in catalog.read_arrow(
        "ingested_files", filters=[("wiki", "=", wiki)]).to_pylist()}
    cov: dict[str, list[Range]] = {}
    kept: tuple[Range, ...] = ()
    if kind == "wikipedia":
        from emerge_lib.ingest.wikipedia.coverage import coverage, covers, merge_ranges

        cov = coverage(catalog, wiki)
        # coverage accumulates: a file is read for what the warehouse covers and what the
        # snapshots now need, so no earlier snapshot loses its paragraphs
        kept = tuple(merge_ranges([r for have in cov.values() for r in have] + needed))

    def is_done(name: str, size: int | None, sha1: str | None) -> bool:
        if cfg.dumps.reingest:
            return False
        row = stored.get(name)
        if row is None or row["error"] is not None or size is None or row["bytes"] != size:
            return False
        if sha1 and row["sha1"] and row["sha1"] != sha1:
            return False
        return kind != "wikipedia" or covers(cov.get(name, []), needed)

    listing: dict[str, list[str]] = {}
    if paths:
        refs = [DumpFileRef.of(p) for p in check_inputs(local_inputs(cfg, paths,
                                                                   progress_factory))]
        listing = listing_beside(wiki, refs)
    else:
        refs = refs_from_mirror(cfg, kind, is_done, progress_factory, listing)
    files = []
    for ref in refs:
        size = ref.path.stat().st_size
        row = stored.get(ref.name)
        if row is not None and (row["bytes"] != size or (ref.sha1 and row["sha1"]
                                                         and row["sha1"] != ref.sha1)):
            log.warning("%s: the warehouse %s already holds a different file of this name "
                        "(%s bytes, now %s): it is read again, and pages only the other one "
                        "had stay; use a fresh warehouse for unrelated dumps", ref.name,
                        catalog.warehouse, row["bytes"], size)
        files.append(PlannedFile(ref, size, kept, is_done(ref.name, size, ref.sha1)))
    return IngestPlan(kind, wiki, files, needed, rewrite=cfg.dumps.reingest, listing=listing)


def refuse_uncovered_snapshots(cfg: Config, wikidata: Sequence[str | Path] | None) -> None:
    """Refuse, before an engine starts or a file is read, a configured snapshot whose last
    window ends after the newest Wikidata dump the build will have: the files given (by
    the date in their names), else the configured dump dates, and those the warehouse
    holds. The snapshot stage refuses it too, with the same words, but only after the
    ingest. Dumps without a date in their names, or a warehouse that cannot be read here,
    say nothing: nothing is refused on a guess."""
    from datetime import UTC, datetime

    from emerge_lib.ingest.wikipedia.coverage import CoverageError

    wiki = cfg.dumps.wikidata.wiki
    dates = ([DumpFileRef.of(str(p).rsplit("/", 1)[-1]).dump_date for p in wikidata]
             if wikidata else list(cfg.dumps.wikidata.dates))
    try:
        catalog = Catalog.for_config(cfg)
        if catalog.exists("ingested_files"):
            dates += catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                                        columns=["dump_date"]).column(0).to_pylist()
    except Exception:  # noqa: BLE001 (an S3 warehouse without credentials here: no guess)
        return
    known = [d for d in dates if d]
    if not known:
        return
    newest = max(known)
    reached = datetime.strptime(newest, "%Y%m%d").replace(tzinfo=UTC)
    for plan in (cfg.plan(t) for t in cfg.snapshots.timestamps):
        if reached < plan.horizon:
            raise CoverageError(
                f"the newest {wiki} dump of this build ({newest}) is older than "
                f"{plan.horizon:%Y-%m-%d}, the end of the last window of snapshot "
                f"{plan.key}: edits after the dump are unknown; give a newer dump, or "
                "choose an earlier snapshot or fewer windows (nothing was started)")
