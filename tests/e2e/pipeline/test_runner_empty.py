"""Histories that give a stage nothing build to a valid release that says what is empty.

One generated world per case of ``emerge_lib.sample.plan.EMPTY_CASES`` (no removal, no
addition, no emerging entity, no new passage, no line selected, nothing at all around
t), planted without filler, built with the Great Expectations gate on: every build
returns, its instances are exactly the planted truth (empty where the case says so), the
release passes validation, and its verdict and card name what the snapshot lacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from emerge_lib.sample import SampleSpec
from emerge_lib.sample.compare import built as produced
from emerge_lib.sample.compare import planted as expected
from emerge_lib.sample.plan import EMPTY_CASES

T = "2024-01-01T00:00:00Z"
#: the ops each case's instances lack (the validation's warning names them)
LACKS = {"no_removal": {"D"}, "no_addition": {"E", "EE", "EE-KG"},
         "no_emerging": {"EE", "EE-KG"}, "no_new_passage": {"X", "E", "EE", "EE-KG", "D"},
         "no_line": {"X", "E", "EE", "EE-KG", "D"}, "quiet": {"X", "E", "EE", "EE-KG", "D"}}


def spec(case: str) -> SampleSpec:
    scenarios, new_text = EMPTY_CASES[case]
    return SampleSpec(seed=5, items=1, articles=1, snapshots=(T,), formats=("bz2",),
                      scenarios=scenarios, new_text=new_text)


def test_every_case_is_tested() -> None:
    assert set(LACKS) == set(EMPTY_CASES)


@pytest.mark.parametrize("case", sorted(set(EMPTY_CASES) - {"no_removal"}))
def test_an_empty_case_builds_to_a_valid_release_that_says_so(worlds, spark, case) -> None:
    built = worlds.built(spec(case), {"validation": {"enabled": True}})
    check(case, built.world, built.catalog(spark), built.release)


def check(case: str, world, catalog, release) -> None:
    """The case's instances are exactly its truth; its release passed validation, and its
    verdict and card say what it lacks."""
    got, _ = produced(catalog)
    want = expected(world, "released")
    assert got == want  # exactly the planted truth, empty or not
    ops = {k[3] for k in got}
    assert not ops & LACKS[case]
    deltas = {r["op"] for r in catalog.read_arrow("delta_triples").to_pylist()}
    if case == "no_removal":
        assert "D" not in deltas and deltas  # the history itself has no removal
    if case in ("no_addition",):
        assert not deltas & {"E", "EE", "EE-KG"}
    if case == "no_new_passage":
        assert deltas and catalog.read_arrow("passages").num_rows == 0
    manifest = json.loads((release / "manifest.json").read_text())
    verdict = manifest["validation"]
    assert verdict["success"], verdict
    state = verdict["snapshots"][T]
    assert state["tables"] == state["release"] == "passed"
    warned = " ".join(state.get("warnings", []))
    for op in LACKS[case]:
        assert op in warned.split("missing ", 1)[1].split(";")[0], warned
    card = (release / "README.md").read_text()
    assert "What this release does not hold" in card
    lines = [line for f in release.glob("corpus/snapshot_*/delta_*.jsonl")
             for line in f.read_text().splitlines()]
    assert (len(lines) == 0) == (not got)


def test_the_command_says_what_is_empty(worlds, spark, tmp_path) -> None:
    """`emerge build` on a history with no removal (the case of the hang reported in the
    deltas stage): a valid release, exit 0, and a line naming what the snapshot lacks."""
    world = worlds.world(spec("no_removal"))
    done = subprocess.run(
        [sys.executable, "-m", "emerge_lib.cli", "build", "-c", str(world / "config.yaml"),
         "--warehouse", str(tmp_path / "warehouse"), "--out", str(tmp_path / "release")],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("empty in ")]
    assert said and "missing D;" in " ".join(said), done.stdout
    from emerge_lib.catalog import Catalog

    check("no_removal", world, Catalog(tmp_path / "warehouse", spark), tmp_path / "release")
