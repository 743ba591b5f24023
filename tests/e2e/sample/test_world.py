"""The sample-world generator: files parse, checksums verify, output is deterministic,
filler never changes truth, and truth.jsonl agrees with an independent checker."""

from __future__ import annotations

import bz2
import hashlib
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import mwxml
import pytest
from truth_checker import check_world, clean, seconds

from emerge_lib.dumps.compressed import open_dump
from emerge_lib.sample import SampleSpec, generate_world

# articles: the two casts' planted articles (123) and 9 filler articles, some of which add
# a link-free paragraph inside a window (a planted page more means a filler article less)
SMALL = dict(items=260, articles=132, revisions=3)
NAME = re.compile(r"^(wikidatawiki|enwiki)-(\d{8})-pages-meta-history(\d+)\.xml-p(\d+)p(\d+)\.bz2$")
OPS = {"X", "E", "EE", "EE-KG", "D"}


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "world"
    generate_world(out, SampleSpec(seed=7, **SMALL))
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _history(world: Path) -> dict[tuple[str, str], list[Path]]:
    out = defaultdict(list)
    for path in sorted((world / "mirror").glob("*/*/*.bz2")):
        out[(path.parent.parent.name, path.parent.name)].append(path)
    return out


def _pages(path: Path) -> list[tuple[mwxml.Page, list[mwxml.Revision]]]:
    return [(p, list(p)) for p in mwxml.Dump.from_file(bz2.open(path))]


def test_every_file_parses_and_every_entity_json_loads(world: Path) -> None:
    manifest = json.loads((world / "world.json").read_text())
    models: Counter[str] = Counter()
    for (wiki, date), paths in _history(world).items():
        listed = {f["name"]: f for f in manifest["dumps"]["files"][f"{wiki}/{date}"]}
        for path in paths:
            pages = _pages(path)
            revisions = sum(len(revs) for _, revs in pages)
            assert (len(pages), revisions) == (listed[path.name]["pages"], listed[path.name]["revisions"])
            for _page, revs in pages:
                for rev in revs:
                    models[rev.model] += 1
                    if rev.text is not None and rev.model.startswith("wikibase"):
                        data = json.loads(rev.text)
                        assert "entity" in data or data.get("id", "").startswith(("Q", "P"))
                    if rev.text is not None:
                        assert rev.bytes == len(rev.text.encode())
    assert set(models) == {"wikibase-item", "wikibase-property", "wikitext"}


def test_checksums_and_dumpstatus_verify(world: Path) -> None:
    """Both formats, each in its job (as Wikimedia's), every file in the sums files."""
    for (wiki, date), bz2_paths in _history(world).items():
        folder = bz2_paths[0].parent
        sevens = sorted(folder.glob("*.7z"))
        assert [p.name[:-3] for p in sevens] == [p.name[:-4] for p in bz2_paths]
        jobs = json.loads((folder / "dumpstatus.json").read_text())["jobs"]
        assert set(jobs) == {"metahistorybz2dump", "metahistory7zdump"}
        status = {"files": {}}
        for job, paths in (("metahistorybz2dump", bz2_paths), ("metahistory7zdump", sevens)):
            assert jobs[job]["status"] == "done"
            assert set(jobs[job]["files"]) == {p.name for p in paths}
            status["files"].update(jobs[job]["files"])
        for seven, packed in zip(sevens, bz2_paths, strict=True):  # the same XML inside
            with open_dump(seven) as fh:
                assert fh.read() == bz2.decompress(packed.read_bytes())
        paths = bz2_paths + sevens
        sums = {kind: dict(reversed(line.split("  ")) for line in
                           (folder / f"{wiki}-{date}-{kind}sums.txt").read_text().splitlines())
                for kind in ("md5", "sha1")}
        assert set(status["files"]) == {p.name for p in paths} == set(sums["md5"]) == set(sums["sha1"])
        for path in paths:
            data = path.read_bytes()
            meta = status["files"][path.name]
            assert meta["size"] == len(data)
            assert meta["md5"] == sums["md5"][path.name] == hashlib.md5(data).hexdigest()
            assert meta["sha1"] == sums["sha1"][path.name] == hashlib.sha1(data).hexdigest()
            assert meta["url"] == f"/{wiki}/{date}/{path.name}"


def test_files_split_by_page_range_and_older_dump_is_a_prefix(world: Path) -> None:
    history = _history(world)
    dates = sorted({date for _, date in history})
    assert len(dates) == 2
    revs_by_date: dict[str, dict[int, dict[int, str]]] = {}
    for (wiki, date), paths in history.items():
        ranges = []
        for path in paths:
            m = NAME.match(path.name)
            assert m and m.group(1) == wiki and m.group(2) == date
            lo, hi = int(m.group(4)), int(m.group(5))
            ids = [p.id for p, _ in _pages(path)]
            assert ids == sorted(ids) and ids[0] == lo and ids[-1] == hi
            ranges.append((lo, hi))
            if wiki == "wikidatawiki":
                for page, revs in _pages(path):
                    revs_by_date.setdefault(date, {})[page.id] = {r.id: str(r.timestamp) for r in revs}
        ranges.sort()
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    old, new = (revs_by_date[d] for d in dates)
    cutoff = f"{dates[0][:4]}-{dates[0][4:6]}-{dates[0][6:]}T00:00:00Z"
    assert set(old) < set(new), "the newer dump has new pages"
    for pid, revs in old.items():
        assert revs.items() <= new[pid].items()
        assert {r: ts for r, ts in new[pid].items() if ts < cutoff} == revs
    assert sum(map(len, new.values())) > sum(map(len, old.values()))


def test_same_seed_is_byte_identical_and_seed_matters(tmp_path: Path) -> None:
    spec = dict(items=120, articles=60, revisions=2)
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_world(a, SampleSpec(seed=3, **spec))
    generate_world(b, SampleSpec(seed=3, jobs=2, **spec))  # parallel writing changes nothing
    generate_world(c, SampleSpec(seed=4, **spec))
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert len(files) > 20
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert (a / "world.json").read_bytes() != (c / "world.json").read_bytes()


@pytest.mark.parametrize("variant", ["released", "design", "unselected"])
def test_truth_agrees_with_the_independent_checker(world: Path, variant: str) -> None:
    assert check_world(world, variant=variant) == []


def test_the_selection_rules_leave_out_lines_and_nothing_else(world: Path) -> None:
    """truth.jsonl (the authors' rules) against truth-unselected.jsonl (none): every
    released row is an unselected one but for R4's (an item older than t merged into a new
    one: E, not EE) and their s02's (a statement re-pointed to a merge's surviving item: X,
    not E); the rules leave out whole lines (a line is kept with all its rows or not at
    all); every released line has an E, EE or D triple between its entities."""
    def rows(name: str) -> list[dict]:
        return _rows(world / name)

    released, unselected = rows("truth.jsonl"), rows("truth-unselected.jsonl")
    key = lambda r: (r["snapshot"], r["window"], r["page_id"], r["op"], r["s"], r["p"], r["o"])  # noqa: E731
    line = lambda r: (r["snapshot"], r["window"], r["page_id"], r["paragraph"])  # noqa: E731
    r4 = {key(r) for r in released if r["scenario"] == "merged-into-new"}
    s02 = {key(r) for r in released if "merged-histories" in r["tags"]}
    only_released = {key(r) for r in released} - {key(r) for r in unselected}
    assert r4 and s02 and s02 <= only_released <= r4 | s02
    assert {k[3] for k in s02} == {"X"}
    kept_lines = {line(r) for r in released}
    # in a kept line, the rules remove rows only as R2a (a D added back), R3 (an EE-KG
    # that does not persist) and s07's relation filter (a relation not in R_t) do
    removed = {(r["op"], key(r)) for r in unselected if line(r) in kept_lines
               and r["scenario"] not in ("merged-into-new", "merged-before")} - {
        (r["op"], key(r)) for r in released}
    relations = {k for op, k in removed if op == "E"}
    assert relations and {k[5] for k in relations} == {
        r["p"] for r in unselected if r["scenario"] == "new-relation" and r["p"] != "P108"}
    assert removed - {("E", k) for k in relations} and {op for op, _ in removed} <= {
        "D", "EE-KG", "E"}
    assert len(kept_lines) < len({line(r) for r in unselected})
    by_line: dict[tuple, list[dict]] = {}
    for r in released:
        by_line.setdefault(line(r), []).append(r)
    for rs in by_line.values():
        assert any(r["op"] in ("E", "EE", "D") and r["s"] in r["mentioned"]
                   and r["o"] in r["mentioned"] for r in rs), rs[0]["paragraph"]
        assert not all(r["op"] == "X" for r in rs)


def test_the_two_semantics_differ_where_the_released_data_does(world: Path) -> None:
    """Released (the default) against docs/semantics.md §1.1: cumulative windows repeat a
    passage in
    every later delta; an item older than t is not emerging; an addition ended inside the
    window is also D."""
    released = {(r["snapshot"], r["window"], r["page_id"], r["op"], r["s"], r["p"], r["o"])
                for r in _rows(world / "truth.jsonl")}
    design = {(r["snapshot"], r["window"], r["page_id"], r["op"], r["s"], r["p"], r["o"])
              for r in _rows(world / "truth-design.jsonl")}
    first_windows = {r[:1] + r[2:]: r[1] for r in sorted(design, key=lambda r: -r[1])}
    later = {r for r in released if r[1] > first_windows.get(r[:1] + r[2:], 99)}
    assert later, "no passage repeated in a later delta"
    scenarios = {r["scenario"] for r in _rows(world / "truth.jsonl")}
    assert {"window-addition-ended", "ee-sitelink-added"} <= scenarios
    two_ops = {r[:3] + r[4:] for r in released if r[3] == "D"} & {
        r[:3] + r[4:] for r in released if r[3] == "E"}
    assert two_ops and not ({r[:3] + r[4:] for r in design if r[3] == "D"}
                            & {r[:3] + r[4:] for r in design if r[3] == "E"})
    ee_design = {r[4:] for r in design if r[3] == "EE"}
    e_released = {r[4:] for r in released if r[3] == "E"}
    assert ee_design & e_released  # the abbey: EE by V_t, E by creation time


def test_first_snapshot_truth_holds_on_the_older_dump(world: Path) -> None:
    dates = sorted(p.name for p in (world / "mirror" / "wikidatawiki").iterdir())
    first = min(r["snapshot"] for r in _rows(world / "truth.jsonl"))
    assert check_world(world, date=dates[0], snapshots={first}) == []


def test_checker_catches_wrong_and_missing_rows(world: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(world, copy)
    rows = _rows(copy / "truth.jsonl")
    d_row = next(r for r in rows if r["op"] == "D")
    d_row["signal"] = "rank" if d_row["signal"] != "rank" else "removed"
    dropped = rows.pop(next(i for i, r in enumerate(rows) if r["op"] == "EE-KG"))
    (copy / "truth.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = check_world(copy)
    assert any("KG disagrees" in p and d_row["s"] in p for p in problems)
    assert any("missing" in p and dropped["s"] in p and "EE-KG" in p for p in problems)


def test_truth_covers_every_operation_signal_and_trap(world: Path) -> None:
    rows = _rows(world / "truth.jsonl")
    traps = _rows(world / "traps.jsonl")
    snapshots = {r["snapshot"] for r in rows}
    assert len(snapshots) == 2
    for snap in snapshots:
        mine = [r for r in rows if r["snapshot"] == snap]
        assert {r["op"] for r in mine} == OPS
        assert {r["window"] for r in mine} == {1, 2, 3, 4, 5}
        assert {r["signal"] for r in mine if r["op"] == "D"} == {"removed", "rank", "qualifier:P582"}
    for r in rows:
        assert set(r) >= {"snapshot", "window", "op", "s", "p", "o", "signal", "page_title", "page_id",
                          "paragraph", "mentioned", "qualifiers"}
        assert (r["signal"] is None) == (r["op"] != "D")
        assert re.match(r"^Q\d+$", r["s"]) and re.match(r"^P\d+$", r["p"]) and re.match(r"^Q\d+$", r["o"])
        assert 25 <= len(r["paragraph"].split()) <= 1000
    start = [q for r in rows if r["op"] == "E" for q in r["qualifiers"] if q["p"] == "P580"]
    assert start and all(q["time"].startswith(r"+20") for q in start)
    # cases in lines the authors' rules leave out are planted in truth-unselected.jsonl
    tags = {t for r in rows + _rows(world / "truth-unselected.jsonl") for t in r["tags"]}
    assert {"link-via-redirect", "link-underscore-lowercase", "link-via-page-move",
            "out-of-order-revisions", "legacy-json-at-t", "rank-restored", "entered-V"} <= tags
    kinds = {t["kind"] for t in traps}
    assert {"reverted-addition", "vandalism-reverted", "no-english-article", "after-last-window",
            "end-qualifier-outside-window", "single-mention-paragraph", "too-short-passage",
            "reverted-removal", "merged-entity", "timestamp-tie"} <= kinds
    # every selection rule removes a planted case (and keeps its near miss, truth.jsonl)
    assert {"r1-no-delta-between-mentions", "r2a-removal-added-back",
            "r2b-passage-before-removal", "r3-ee-kg-not-persistent",
            "r4-created-over-redirects", "r5-only-removals", "r5-not-interesting",
            "s07-relation-outside-r-t"} <= kinds
    assert {"removal-kept", "rank-kept", "removal-added-back", "passage-before-removal",
            "ee-kg-transient", "merged-into-new", "sparse-line", "new-relation",
            "removal-start-qualifier", "merged-before"} <= {r["scenario"] for r in rows}
    assert {"merged-histories"} <= kinds
    assert {r["op"] for r in rows if "removal-start-qualifier" in r["tags"]} == {"D"}
    assert {"guard-title-colon", "title-colon-kept"} <= {t for r in rows for t in r["tags"]}
    assert all(t["reason"] for t in traps)


def test_an_unlinked_repeat_of_an_earlier_anchor_is_a_mention(world: Path) -> None:
    """Their coreference_regex, planted: the second paragraph of a new article names the
    birth place its lead linked only in plain text; the place is mentioned there, so the
    birth place triple is EE in that line (without the repeat it would be EE-KG)."""
    rows = [r for r in _rows(world / "truth.jsonl") if r["scenario"] == "repeat-mention"]
    assert rows and {r["window"] for r in rows} == {4, 5}
    for snap in {r["snapshot"] for r in rows}:
        mine = [r for r in rows if r["snapshot"] == snap and r["window"] == 4]
        born = [r for r in mine if r["p"] == "P19"]
        assert [r["op"] for r in born] == ["EE"] and born[0]["o"] in born[0]["mentioned"]
        assert {r["op"] for r in mine if r["p"] == "P69"} == {"EE-KG"}  # not repeated


def test_repeat_mention_near_misses_follow_their_rule_exactly(world: Path) -> None:
    """Their coreference_regex has no word boundaries: the lead links Veloria and the
    second paragraph's "Velorian" is a mention of it (citizenship EE there). Its anchors
    are the same revision's earlier new paragraphs only: a later revision's paragraph that
    repeats the university the first revision linked does not mention it (EE-KG), while
    the employer its own revision's earlier paragraph linked is (EE)."""
    rows = _rows(world / "truth.jsonl")
    snaps = {r["snapshot"] for r in rows if r["scenario"] == "repeat-mention"}
    assert len(snaps) == 2
    def ops(snap: str, scenario: str, window: int) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            if (r["snapshot"], r["scenario"], r["window"]) == (snap, scenario, window):
                out[r["p"]].add(r["op"])
        return dict(out)

    for snap in snaps:
        for window in (4, 5):
            # inside a longer word: Velorian names Veloria
            body = ops(snap, "repeat-mention", window)
            assert body == {"P19": {"EE"}, "P27": {"EE"}, "P69": {"EE-KG"}, "P108": {"EE"},
                            "P31": {"EE-KG"}, "P17": {"X"}}  # P17: Pellham in Veloria
            # another revision's anchor: the university is no mention; the employer is
            assert ops(snap, "repeat-other-revision", window) == {
                "P19": {"EE-KG"}, "P27": {"EE-KG"}, "P69": {"EE-KG"}, "P108": {"EE"},
                "P31": {"EE-KG"}}
            assert ops(snap, "repeat-same-revision-lead", window) == ops(
                snap, "repeat-other-revision", window)
            veloria = {r["o"] for r in rows if r["snapshot"] == snap and r["p"] == "P27"
                       and r["scenario"] == "repeat-mention" and r["window"] == window}
            teaching = [r for r in rows if (r["snapshot"], r["scenario"], r["window"]) ==
                        (snap, "repeat-other-revision", window)]
            (place,) = veloria
            assert all(place not in r["mentioned"] for r in teaching)


def test_filler_size_and_seed_do_not_change_truth(world: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    generate_world(other, SampleSpec(seed=99, items=150, articles=70, revisions=5))

    def semantic(rows: list[dict]) -> set[tuple]:
        return {(r["snapshot"], r["window"], r["op"], r["s_label"], r["p"], r["o_label"], r["signal"],
                 r["page_title"], r["paragraph"]) for r in rows}

    assert semantic(_rows(world / "truth.jsonl")) == semantic(_rows(other / "truth.jsonl"))


def test_filler_articles_add_no_linked_paragraphs_inside_windows(world: Path) -> None:
    manifest = json.loads((world / "world.json").read_text())
    planted = {p["page_id"] for p in manifest["planted"]["pages"].values()}
    spans = [(seconds(s) - 3600, seconds(s) + 35 * 86400 + 3600) for s in manifest["snapshots"]]
    newest = manifest["dumps"]["dates"][-1]
    checked = 0
    for path in sorted((world / "mirror" / "enwiki" / newest).glob("*.bz2")):
        for page, revs in _pages(path):
            if page.id in planted:
                continue
            seen: set[str] = set()
            for rev in sorted(revs, key=lambda r: (str(r.timestamp), r.id)):
                if rev.text is None:
                    continue
                blocks = {b for b in re.split(r"\n\s*\n", rev.text)}
                if any(lo <= seconds(str(rev.timestamp)) <= hi for lo, hi in spans):
                    for block in blocks - seen:
                        if not block.lstrip().startswith(("{{", "[[Category", "==", "*", "{|", "[[File")):
                            assert "[[" not in block, (page.title, block[:80])
                            checked += 1
                seen |= blocks
    assert checked > 0, "some filler article should add a link-free paragraph inside a window"


def test_history_has_the_real_world_oddities(world: Path) -> None:
    newest = sorted((world / "mirror" / "wikidatawiki").iterdir())[-1]
    found: Counter[str] = Counter()
    for path in sorted(newest.glob("*.bz2")):
        for page, revs in _pages(path):
            stamps = [str(r.timestamp) for r in revs]
            if stamps != sorted(stamps):
                found["out-of-order"] += 1
            if len(set(stamps)) < len(stamps):
                found["same-timestamp"] += 1
            if page.redirect:
                found["page-redirect"] += 1
            ids = [r.id for r in revs]
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
            for rev in revs:
                if rev.deleted.text:
                    found["deleted-text"] += 1
                if rev.deleted.user:
                    found["suppressed-user"] += 1
                if rev.text is None:
                    continue
                data = json.loads(rev.text)
                if "redirect" in data:
                    found["entity-redirect"] += 1
                if "links" in data:
                    found["legacy"] += 1
                    if any("m" in c for c in data.get("claims", [])):
                        found["legacy-claims"] += 1
                elif data.get("type") == "item":
                    if len(data["labels"]) >= 20:
                        found["many-languages"] += 1
                    for statements in (data["claims"] or {}).values():
                        for s in statements:
                            found["rank-" + s["rank"]] += 1
                            if "P582" in s.get("qualifiers", {}):
                                found["end-qualifier"] += 1
                            if s.get("references"):
                                found["references"] += 1
    for need in ("out-of-order", "same-timestamp", "page-redirect", "deleted-text", "suppressed-user",
                 "entity-redirect", "legacy", "legacy-claims", "many-languages", "rank-deprecated",
                 "rank-preferred", "end-qualifier", "references"):
        assert found[need] > 0, need


def test_planted_articles_have_realistic_wikitext(world: Path) -> None:
    manifest = json.loads((world / "world.json").read_text())
    newest = manifest["dumps"]["dates"][-1]
    texts, comments, redirects = [], [], 0
    for path in sorted((world / "mirror" / "enwiki" / newest).glob("*.bz2")):
        for page, revs in _pages(path):
            redirects += page.redirect is not None
            texts.extend(r.text for r in revs if r.text)
            comments.extend(r.comment or "" for r in revs)
    blob = "\n".join(texts)
    for marker in ("{{Infobox", "<ref", "{{cite", "{|", "== ", "[[File:", "[[Category:", "<!--",
                   "#REDIRECT", "|", "_"):
        assert marker in blob, marker
    assert redirects > 3
    assert any(c.startswith("Reverted edits by") for c in comments)
    assert any(" moved page [[" in c for c in comments)
    assert clean("[[a b|c]] d<ref>{{x|y}}</ref> '''e'''") == "c d e"


def test_config_is_valid_and_points_at_the_mirror(world: Path) -> None:
    from emerge_lib.core.config import load_config

    cfg = load_config(world / "config.yaml")
    rows = _rows(world / "truth.jsonl")
    assert cfg.dumps.mirror == (world / "mirror").resolve().as_uri()
    assert cfg.dumps.wikidata.dates == sorted(p.name for p in (world / "mirror" / "wikidatawiki").iterdir())
    assert cfg.dumps.wikipedia.dates == cfg.dumps.wikidata.dates
    assert {t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in cfg.snapshots.timestamps} == {r["snapshot"] for r in rows}
    assert (cfg.snapshots.windows, cfg.snapshots.window_days) == (5, 7)
    assert Path(cfg.warehouse) == (world / "warehouse").resolve()


def test_a_release_of_the_world_says_it_is_synthetic(world: Path, tmp_path: Path) -> None:
    """The generator marks its config (``dumps.synthetic``); the settings a build records
    carry it to the release's card, croissant.json and manifest."""
    from hubkit import described

    from emerge_lib.core.config import load_config

    cfg = load_config(world / "config.yaml")
    assert cfg.dumps.synthetic is True
    card, croissant, manifest = described(tmp_path / "release", cfg.dataset_settings())
    assert "**Synthetic data.**" in card and "- synthetic" in card
    assert croissant["rai:dataCollectionType"] == ["Others"]
    assert manifest["settings"]["synthetic"] is True


def test_snapshots_too_close_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="60 days"):
        generate_world(tmp_path, SampleSpec(snapshots=("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z")))


def test_cli_writes_a_world_and_refuses_to_clobber(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from emerge_lib.cli import main

    out = tmp_path / "cli"
    args = ["sample", "--out", str(out), "--items", "100", "--articles", "60", "--revisions", "2",
            "--snapshot", "2024-06-01T00:00:00Z", "--quiet"]
    assert main(args) == 0
    assert "truth.jsonl" in capsys.readouterr().out
    rows = _rows(out / "truth.jsonl")
    assert {r["snapshot"] for r in rows} == {"2024-06-01T00:00:00Z"}
    assert len(list((out / "mirror" / "enwiki").iterdir())) == 2
    assert main(args) == 2
    assert main([*args, "--force"]) == 0


def _revisions_by_date(world: Path) -> dict[str, list[int]]:
    """wiki -> the revisions of each dump date, oldest first (world.json)."""
    about = json.loads((world / "world.json").read_text())
    return {wiki: [sum(f["revisions"] for f in about["dumps"]["files"][f"{wiki}/{d}"]
                       if f["format"] == "bz2") for d in about["dumps"]["dates"]]
            for wiki in ("wikidatawiki", "enwiki")}


def test_recent_share_moves_history_before_the_quarter_and_keeps_truth(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--recent-share sizes the history apart from its newest quarter (the extension
    benchmark's two worlds): the same revisions per page, fewer of them between the two
    dumps, and the planted truth unchanged."""
    from emerge_lib.cli import main

    spec = dict(seed=5, items=300, articles=200, revisions=8, formats=("bz2",), compress_level=1)
    usual, early = tmp_path / "usual", tmp_path / "early"
    generate_world(usual, SampleSpec(**spec))
    generate_world(early, SampleSpec(recent_share=0.1, **spec))
    assert (usual / "truth.jsonl").read_bytes() == (early / "truth.jsonl").read_bytes()
    a, b = _revisions_by_date(usual), _revisions_by_date(early)
    for wiki in a:
        (a0, a1), (b0, b1) = a[wiki], b[wiki]
        if wiki == "wikidatawiki":  # the same revisions (enwiki: edits falling in the
            assert a1 == b1  # snapshots' forbidden ranges are dropped, fewer when early)
        assert b1 - b0 < 0.6 * (a1 - a0), (wiki, a[wiki], b[wiki])  # the quarter shrinks
    assert "recent_share" not in json.loads((usual / "world.json").read_text())["spec"]
    assert json.loads((early / "world.json").read_text())["spec"]["recent_share"] == 0.1
    assert "--recent-share 0.1`" in (early / "config.yaml").read_text().splitlines()[0]

    assert main(["sample", "--out", str(tmp_path / "bad"), "--recent-share", "1.5",
                 "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["emerge sample: --recent-share 1.5: give a share from 0 to 1"]
