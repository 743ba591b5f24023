"""``emerge validate --release DIR``: the verdict and the checks that did not pass, in a
table, from the manifest and validation/results.json; exit 1 when not publishable."""

from __future__ import annotations

import json
from pathlib import Path

from hubkit import CHECKED_AT, validated_release

from emerge_lib.cli import main
from emerge_lib.formats.layout import corpus_path


def test_the_verdict_and_the_failed_checks_in_a_table(tmp_path: Path, capsys) -> None:
    root = validated_release(tmp_path / "release")
    assert main(["validate", "--release", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "NOT publishable: 2024-01-01T00:00:00Z: release files: 1 of 2 checks failed" in out[0]
    assert out[1].split() == ["snapshot", "table", "suites", "release", "suites"]
    assert out[2].split() == ["2024-01-01", "passed", "failed"]
    assert CHECKED_AT not in "\n".join(out)  # no run time in a release
    assert any(line.startswith("files: ") and "match manifest.json" in line for line in out)
    assert "checks: 7: 1 failed, 5 passed, 1 warning" in out
    head = out.index(next(line for line in out if line.startswith("status ")))
    rows = [line.split("  ") for line in out[head + 1:]]
    assert [(r[0].strip(), r[-1].strip()) for r in rows] == [
        ("warning", "missing D; present E, X"),
        ("failed", '[{"file": "corpus/x.jsonl", "hash_id": "a"}]')]
    assert main(["validate", "--release", str(root), "--all"]) == 1
    assert capsys.readouterr().out.count("\npassed ") == 5


def test_a_publishable_release_and_a_changed_file(tmp_path: Path, capsys) -> None:
    root = validated_release(tmp_path / "release", failed=False)
    assert main(["validate", "--release", str(root)]) == 0
    out = capsys.readouterr().out
    assert "validated, publishable" in out and "\nwarning " in out  # the warning is shown
    (root / corpus_path("2024-01-01", 1, 7)).write_text("{}\n")
    assert main(["validate", "--release", str(root), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["publishable"] is False and report["files"]["changed"] == [
        corpus_path("2024-01-01", 1, 7)]
    assert main(["validate", "--release", str(root)]) == 1
    assert "NOT publishable: its files no longer match the manifest" in capsys.readouterr().out
    assert main(["validate", "--release", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("emerge: validate: ") and err.count("\n") == 1


def test_a_release_built_without_the_gate_says_so(tmp_path: Path, capsys) -> None:
    from hubkit import SNAPS, build_release, line

    root = build_release(tmp_path / "release", {(SNAPS[0], 1): [line(SNAPS[0], 1, "a", [
        ("E", "Q1", "Q2")])]}, {})
    assert main(["validate", "--release", str(root)]) == 1
    out = capsys.readouterr().out
    assert "NOT publishable: the manifest records no validation" in out
    assert any(x.startswith("files: ") and "match manifest.json" in x for x in out.splitlines())
