"""The Great Expectations gate: a snapshot that holds every rule passes; planted violations
fail exactly the checks that name them; a check that cannot run fails the gate itself;
the release records the verdict at the rows it releases, and the publisher obeys it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from stagekit import run
from tablekit import put

from emerge_lib.catalog import Catalog
from emerge_lib.formats.manifest import read_manifest
from emerge_lib.validation.gate import (
    Check,
    Suite,
    ValidationFailed,
    ValidationGateError,
    rows_check,
    run_gate,
)

GOOD = "2024-01-01T00:00:00Z"
BAD = "2024-04-01T00:00:00Z"
SNAPSHOTS = {"timestamps": [GOOD, BAD], "windows": 2}


def t0(snap: str) -> datetime:
    return datetime.fromisoformat(snap.replace("Z", "+00:00")).astimezone(UTC)


TEXT = "Alma Keller founded Northam Observatory with Bruno Tal in Eastport during the survey."


def world(snap: str) -> dict[str, list[dict[str, Any]]]:
    """One snapshot whose tables hold every rule: V_t = Q1..Q4, T_t = two triples, one
    passage mentioning Q1, Q2 and Q3, and one instance of each operation."""
    t = t0(snap)
    old, new = t - timedelta(days=400), t + timedelta(days=2)

    def m(anchor: str, qid: str) -> dict[str, Any]:
        start = TEXT.index(anchor)
        return {"start": start, "end": start + len(anchor), "anchor": anchor, "target": anchor,
                "qid": qid}

    def inst(op: str, s: str, o: str, **kw: Any) -> dict[str, Any]:
        row = {"snapshot": snap, "window": 1, "passage_id": "p1", "op": op, "s": s, "p": "P1",
               "o": o, "signal": None, "s_label": s, "p_label": "founded by", "o_label": o,
               "emerging_head": False, "emerging_tail": False, "head_created_at": old,
               "tail_created_at": old, "lifespan_from": new, "lifespan_to": None,
               "qualifier_pid": None, "qualifier_label": None, "qualifier_at": None,
               "source_delta_type": None if op == "X" else "all"}
        row.update(kw)
        return row

    return {
        "entities": [{"snapshot": snap, "qid": f"Q{i}", "title": f"T{i}", "label": f"L{i}",
                      "description": "", "text_description": "", "created_at": old}
                     for i in range(1, 5)],
        "relations": [{"snapshot": snap, "pid": "P1", "label": "founded by",
                       "description": "d"}],
        "kg_triples": [{"snapshot": snap, "s": "Q1", "p": "P1", "o": "Q2"},
                       {"snapshot": snap, "s": "Q2", "p": "P1", "o": "Q3"}],
        "passages": [{"snapshot": snap, "window": 1, "passage_id": "p1", "page_id": 1,
                      "page_title": "Alma Keller", "page_qid": "Q1", "rev_id": 7,
                      "rev_timestamp": t + timedelta(days=3), "paragraph_idx": 0,
                      "text": " ".join([TEXT] * 3),
                      "mentions": [m("Northam Observatory", "Q2"), m("Bruno Tal", "Q3")]}],
        "instances": [
            inst("X", "Q1", "Q2", lifespan_from=old),
            inst("E", "Q1", "Q3"),
            inst("EE", "Q9", "Q1", emerging_head=True, head_created_at=new),
            inst("EE-KG", "Q9", "Q4", emerging_head=True, head_created_at=new),
            inst("D", "Q2", "Q3", signal="removed", lifespan_from=old, lifespan_to=new),
        ],
        "selection": [{"snapshot": snap, "window": 1, "passage_id": "p1", "kept": True,
                       "duplicate_of": None, "jaccard": None, "edit_distance": None,
                       "rank": 1, "evaluation_set": True}],
    }


def spoil(tables: dict[str, list[dict[str, Any]]], snap: str) -> None:
    """Plant one violation per rule checked below."""
    t = t0(snap)
    x = tables["instances"][0]
    x["o"] = "Q4"  # an X triple that is not in T_t
    tables["instances"][1]["emerging_tail"] = True  # an E triple flagged emerging
    tables["instances"].append({**x, "op": "D", "o": "Q2", "passage_id": "ghost",
                                "signal": "removed"})  # an orphan instance
    tables["passages"][0]["rev_timestamp"] = t + timedelta(days=30)  # outside window 1
    tables["passages"][0]["mentions"][0]["start"] += 1  # an offset that misses its anchor
    tables["kg_triples"].append({"snapshot": snap, "s": "Q1", "p": "P1", "o": "Q77"})
    # s07c: a kept copy of the passage, one word longer, with the same triples
    copy = {**tables["passages"][0], "passage_id": "p2",
            "text": tables["passages"][0]["text"] + " Again"}
    tables["passages"].append(copy)
    tables["instances"] += [{**r, "passage_id": "p2"} for r in tables["instances"]
                            if r["passage_id"] == "p1"]
    tables["selection"].append({**tables["selection"][0], "passage_id": "p2", "rank": 2,
                                "evaluation_set": False})
    # and its near miss: a kept copy of the same article with other triples (one of p1's):
    # s07 keeps both, as theirs did; s07c's pair is a warning, not a failure
    near = {**tables["passages"][0], "passage_id": "p3",
            "text": tables["passages"][0]["text"] + " Twice"}
    tables["passages"].append(near)
    tables["instances"].append({**next(r for r in tables["instances"]
                                       if r["passage_id"] == "p1"), "passage_id": "p3"})
    tables["selection"].append({**tables["selection"][0], "passage_id": "p3", "rank": 3,
                                "evaluation_set": False})


EXPECTED_FAILURES = {
    ("instances", "X triples are in T_t"),
    ("instances", "E triples: both ends created before t (neither emerging)"),
    ("instances", "emerging_tail is set exactly when the tail was created at or after t"),
    ("instances", "every instance has its passage"),
    ("passages", "revision times lie inside their window (t, τ_k]"),
    ("passage_mentions", "mention offsets select the anchor in the passage text"),
    ("kg_triples", "both ends of a triple are in V_t"),
    ("near_duplicates", "s07c: no two kept lines of a delta file with the same triples are "
                        "near-duplicates by pass 2's thresholds"),
    # a warning (it does not block the release): the planted same-article pair p1/p3
    ("near_duplicates", "s07c: kept lines of one article that pass 2's thresholds call "
                        "near-duplicates (their triples differ, so s07 keeps both, as theirs did)"),
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, spark) -> Catalog:
    cat = Catalog(tmp_path_factory.mktemp("validate") / "warehouse", spark)
    good, bad = world(GOOD), world(BAD)
    spoil(bad, BAD)
    for name in good:
        put(cat, name, good[name] + bad[name])
    return cat


def failures(cat: Catalog, snap: str) -> set[tuple[str, str]]:
    return {(r["suite"], r["expectation"]) for r in cat.read_arrow(
        "validation_results", filters=[("snapshot", "=", snap)]).to_pylist() if not r["success"]}


def test_a_snapshot_that_holds_every_rule_passes(warehouse: Catalog) -> None:
    result = run(warehouse, "validate", GOOD, snapshots=SNAPSHOTS)
    assert result.rows["validation_results"] == result.metrics["checks passed"] > 40
    assert failures(warehouse, GOOD) == set()
    docs = Path(f"{warehouse.warehouse}/_validation/snapshot_2024-01-01")
    assert json.loads((docs / "results.json").read_text())["success"] is True
    page = (docs / "index.html").read_text()  # the checks for a browser, offline
    assert "every check passed" in page and "X triples are in T_t" in page
    assert sorted(p.name for p in docs.iterdir()) == ["index.html", "results.json"]


def test_planted_violations_fail_exactly_their_checks(warehouse: Catalog) -> None:
    with pytest.raises(ValidationFailed, match="checks failed") as info:
        run(warehouse, "validate", BAD, snapshots=SNAPSHOTS)
    assert "X triples are in T_t" in str(info.value) and "\n" not in str(info.value)
    assert failures(warehouse, BAD) == EXPECTED_FAILURES
    row = next(r for r in warehouse.read_arrow("validation_results").to_pylist()
               if r["expectation"] == "X triples are in T_t")
    # the row, shown (and its copies in p2 and p3, the planted near-duplicate and near miss)
    assert row["unexpected_count"] == 3 and "Q4" in row["observed"]


def test_the_release_publishes_only_what_passed_at_those_rows(warehouse: Catalog,
                                                              tmp_path: Path) -> None:
    from emerge_lib.validation.validate import passed_for

    run(warehouse, "validate", GOOD, snapshots=SNAPSHOTS)
    # the spoilt snapshot's checks run here too, so that the test holds alone (-k)
    with pytest.raises(ValidationFailed, match="checks failed"):
        run(warehouse, "validate", BAD, snapshots=SNAPSHOTS)
    versions = {n: warehouse.version(n) for n in
                ("kg_triples", "entities", "relations", "passages", "instances", "selection",
                 "verdicts")}
    assert passed_for(warehouse, GOOD, versions)
    assert not passed_for(warehouse, BAD, versions)
    # the good snapshot alone: validated, publishable
    one = {"timestamps": [GOOD], "windows": 2}
    run(warehouse, "release", release_dir=tmp_path / "good", snapshots=one)
    manifest = read_manifest(tmp_path / "good")
    assert manifest["validation"]["success"] is True
    state = manifest["validation"]["snapshots"][GOOD]
    assert state == {"tables": "passed", "release": "passed"}  # no run time: the warehouse's
    validated_at = min(r["validated_at"] for r in warehouse.read_arrow(
        "validation_results", filters=[("snapshot", "=", GOOD)]).to_pylist()).isoformat()
    results = json.loads((tmp_path / "good" / "validation" / "results.json").read_text())
    assert results["success"] and results["snapshots"][GOOD]["tables"]["checks"]
    # one page of every check, no Data Docs folder; released again from the same tables,
    # the same bytes (no run time in it)
    folder = tmp_path / "good" / "validation"
    assert sorted(p.name for p in folder.iterdir()) == ["index.html", "results.json"]
    page = (folder / "index.html").read_text()
    assert validated_at not in page and manifest["version"] in page and \
        "X triples are in T_t" in page
    run(warehouse, "release", release_dir=tmp_path / "again", snapshots=one)
    assert (tmp_path / "again" / "validation" / "index.html").read_text() == page
    # both: the failed snapshot fails the release, and the manifest says why
    with pytest.raises(ValidationFailed, match="2024-04-01T00:00:00Z: tables failed"):
        run(warehouse, "release", release_dir=tmp_path / "both", snapshots=SNAPSHOTS)
    verdict = read_manifest(tmp_path / "both")["validation"]
    assert verdict["success"] is False and "tables failed" in verdict["reason"]
    # and the publisher refuses it (before sending anything), while it takes the good one
    from emerge_lib.publish import check_release
    from emerge_lib.publish.s3 import ReleaseGateError

    with pytest.raises(ReleaseGateError, match="tables failed"):
        check_release(tmp_path / "both")
    assert check_release(tmp_path / "good")[0]["validation"]["success"] is True
    # rows of the good snapshot rewritten after validation: no longer publishable
    put(warehouse, "instances", world(GOOD)["instances"][:4])
    versions["instances"] = warehouse.version("instances")
    assert not passed_for(warehouse, GOOD, versions)
    with pytest.raises(ValidationFailed, match="changed after their validation") as info:
        run(warehouse, "release", release_dir=tmp_path / "stale", snapshots=one)
    assert info.value.retryable and "emerge build" in str(info.value)  # a command that exists
    stale = read_manifest(tmp_path / "stale")["validation"]
    assert stale["success"] is False and "not validated on the rows released" in stale["reason"]


def test_another_snapshots_writes_and_its_own_rows_rewritten_leave_a_validation_valid(
        warehouse: Catalog) -> None:
    from emerge_lib.validation.validate import passed_for

    put(warehouse, "instances", world(GOOD)["instances"])
    run(warehouse, "validate", GOOD, snapshots=SNAPSHOTS)

    def versions() -> dict[str, int | None]:
        return {n: warehouse.version(n) for n in ("kg_triples", "entities", "relations",
                                                   "passages", "instances", "selection",
                                                   "verdicts")}

    before = versions()
    bad = world(BAD)
    spoil(bad, BAD)
    put(warehouse, "instances", bad["instances"])  # another snapshot's partition
    assert versions() != before and passed_for(warehouse, GOOD, versions())
    # its own rows written again, the same (new Delta files, as `emerge build` rewrites
    # them): still valid, its fingerprints are of the rows
    put(warehouse, "instances", list(reversed(world(GOOD)["instances"])))
    assert passed_for(warehouse, GOOD, versions())


def test_checks_passed_on_the_same_rows_with_the_same_suites_are_kept(
        warehouse: Catalog) -> None:
    """A snapshot validated again with nothing changed keeps its stored results (nothing
    runs, validation_results gets no commit, validated_at stays); a rerun asked for, other
    suites' settings, changed rows, or a failed snapshot run the checks again."""
    one = {"timestamps": [GOOD], "windows": 2}

    def stored() -> tuple[int | None, set[str]]:
        rows = warehouse.read_arrow("validation_results",
                                    filters=[("snapshot", "=", GOOD)]).to_pylist()
        return warehouse.version("validation_results"), {str(r["validated_at"]) for r in rows}

    put(warehouse, "instances", world(GOOD)["instances"])  # (the module's tables, as made)
    first = run(warehouse, "validate", GOOD, snapshots=one, validation={"rerun": True})
    assert first.metrics["checks passed"] > 40 and "kept" not in first.note
    before = stored()
    kept = run(warehouse, "validate", GOOD, snapshots=one)
    assert "kept" in kept.note and kept.metrics == {"checks kept": first.metrics["checks passed"]}
    assert kept.rows == {"validation_results": 0} and stored() == before
    forced = run(warehouse, "validate", GOOD, snapshots=one, validation={"rerun": True})
    assert "kept" not in forced.note and stored()[0] == before[0] + 1
    before = stored()
    other = run(warehouse, "validate", GOOD, snapshots=one, validation={"min_instances": 2})
    assert "kept" not in other.note and stored()[0] == before[0] + 1
    # back to the defaults: the suites' key differs from the last run's, so it runs again
    assert "kept" not in run(warehouse, "validate", GOOD, snapshots=one).note
    assert "kept" in run(warehouse, "validate", GOOD, snapshots=one).note
    put(warehouse, "instances", world(GOOD)["instances"][:4])  # its rows changed
    assert "kept" not in run(warehouse, "validate", GOOD, snapshots=one).note
    put(warehouse, "instances", world(GOOD)["instances"])
    # a failed snapshot is never kept
    for _ in range(2):
        with pytest.raises(ValidationFailed, match="checks failed"):
            run(warehouse, "validate", BAD, snapshots=SNAPSHOTS)


def test_release_files_that_break_the_format_fail_their_suite(spark) -> None:
    from emerge_lib.formats.format import RELEASE_FIELDS
    from emerge_lib.validation.suites import flatten_release, release_suites

    record = {k: None for k in RELEASE_FIELDS}
    record.update({"hash_id": "h1", "passage": "Ada met Charles.", "revision_date":
                   "2024-01-03T12:00:00Z", "delta_dates": ["2024-01-01", "2024-01-08T00:00Z"],
                   "mentions": [{"mention_text": "Charles", "target_entity": "Charles",
                                 "start_char": 9, "end_char": 16, "qid": "Q2"}],
                   "tkgu_triples": [{"triple": ["Q1", "P1", "Q2"],
                                     "tkgu_operations": ["e-triples", "z-triples"],
                                     "head_creation_date": "2012-10-29",
                                     "tail_creation_date": "2012-10-29T00:00:00Z",
                                     "llm_assessment": [], "human_assessment": None,
                                     "qualifier_info": {}}]})
    report = run_gate(release_suites(spark, *flatten_release([("d.jsonl", record)]),
                                     RELEASE_FIELDS))
    failed = {(r.suite, r.check) for r in report.failed}
    assert failed == {
        ("release_lines", "delta_date_last is a date-only string"),
        ("release_mentions", "mention offsets select the mention text in the passage"),
        ("release_triples", "tail_creation_date is a date-only string"),
        ("release_triples", "tkgu_operations holds one or two of the release's op names"),
        ("release_triples", "human_assessment and llm_assessment are lists"),
    }
    assert not report.raised


MEDIAN = Check("median n in 0..9", "ExpectColumnMedianToBeBetween",
               {"column": "n", "min_value": 0, "max_value": 9})


def test_a_check_the_engine_cannot_run_fails_the_gate_not_the_data(spark, warehouse: Catalog,
                                                                     monkeypatch) -> None:
    """GX's median needs approxQuantile, which Sail lacks: GX reports success=False without
    raising; the gate must call that a gate error, never bad (or good) data."""
    frame = spark.createDataFrame([(1,), (2,), (3,)], "n int")
    report = run_gate([Suite("numbers", frame, [
        MEDIAN,
        rows_check("the median through SQL", "SELECT * FROM (SELECT percentile_approx(n, 0.5)"
                   " AS m FROM {batch}) WHERE m <> 2")])])
    by_name = {r.check: r for r in report.results}
    assert by_name["median n in 0..9"].raised and not by_name["median n in 0..9"].success
    assert by_name["the median through SQL"].success and not by_name["the median through SQL"].raised
    assert [r.check for r in report.raised] == ["median n in 0..9"]
    # through the stage: the snapshot's data is good, the gate still fails, as a gate error
    from emerge_lib.validation import suites

    real = suites.snapshot_suites

    def with_a_median(spark, catalog, cfg, plan, frames, versions):
        out = real(spark, catalog, cfg, plan, frames, versions)
        return [*out, Suite("numbers", frame, [MEDIAN])]

    monkeypatch.setattr(suites, "snapshot_suites", with_a_median)
    with pytest.raises(ValidationGateError, match="could not run on this engine"):
        run(warehouse, "validate", GOOD, snapshots=SNAPSHOTS)


def test_a_missing_operation_is_named(spark) -> None:
    """The "every required op" check names the operations that are missing, and those
    present, not "observed None"."""
    ops = Check("every required op is present (X, E, EE, EE-KG, D)",
                "ExpectColumnDistinctValuesToContainSet",
                {"column": "op", "value_set": ["X", "E", "EE", "EE-KG", "D"]})
    some = spark.createDataFrame([("X",), ("E",), ("E",)], "op string")
    none = spark.createDataFrame([], "op string")
    report = run_gate([Suite("instances", some, [ops]), Suite("empty", none, [ops])])
    lines = [r.line() for r in report.failed]
    assert lines == [
        "instances: every required op is present (X, E, EE, EE-KG, D) (observed missing EE, "
        "EE-KG, D; present E, X)",
        "empty: every required op is present (X, E, EE, EE-KG, D) (observed missing X, E, EE, "
        "EE-KG, D; present none)"]
    assert "missing EE, EE-KG, D" in report.summary()
