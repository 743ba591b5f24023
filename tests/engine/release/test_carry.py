"""The release carries over what did not change (release/carry.py): a snapshot added to a
release leaves the snapshots before it linked, not written, and the result is, byte for
byte, the release written whole; changed inputs, a changed setting and a damaged file
are written again; a rerun with nothing changed writes nothing."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from stagekit import run
from tablekit import put

from emerge_lib.catalog import Catalog
from emerge_lib.core.stage import StageResult
from emerge_lib.formats.manifest import MANIFEST, verify_release
from emerge_lib.release.carry import sidecar_of

A, B = "2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z"


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def passage(snap: str, window: int, pid: str, page: int, qid: str) -> dict[str, Any]:
    text = f"{pid} was founded by Jane Roe in Paris."
    start = text.index("Jane Roe")
    return {"snapshot": snap, "window": window, "passage_id": pid, "page_id": page,
            "page_title": f"Page {page}", "page_qid": qid, "rev_id": page * 10 + window,
            "rev_timestamp": ts(snap) .replace(day=2 + window), "paragraph_idx": 0,
            "text": text, "mentions": [{"start": start, "end": start + 8, "anchor": "Jane Roe",
                                        "target": "Jane Roe", "qid": "Q901"}]}


def instance(p: dict[str, Any], op: str, o: str) -> dict[str, Any]:
    return {"snapshot": p["snapshot"], "window": p["window"], "passage_id": p["passage_id"],
            "op": op, "s": p["page_qid"], "p": "P112", "o": o, "signal": None,
            "s_label": "s", "p_label": "founded by", "o_label": "o", "emerging_head": False,
            "emerging_tail": False, "head_created_at": ts("2012-10-29T00:00:00Z"),
            "tail_created_at": ts("2013-01-02T00:00:00Z"), "lifespan_from": None,
            "lifespan_to": None, "qualifier_pid": None, "qualifier_label": None,
            "qualifier_at": None, "source_delta_type": None if op == "X" else "all"}


#: per snapshot: passages of two windows, each with an instance; articles 10/20 in A,
#: 30/40 in B (so B's lines change no A article's split)
PASSAGES = {A: [passage(A, 1, "a1", 10, "Q10"), passage(A, 2, "a2", 20, "Q20")],
            B: [passage(B, 1, "b1", 30, "Q30"), passage(B, 2, "b2", 40, "Q40")]}


def instances(snap: str) -> list[dict[str, Any]]:
    return [instance(p, op, "Q901") for p in PASSAGES[snap] for op in ("X", "E")]


@pytest.fixture
def warehouse(tmp_path: Path, spark) -> Catalog:
    cat = Catalog(tmp_path / "warehouse", spark)
    put(cat, "passages", [p for ps in PASSAGES.values() for p in ps])
    put(cat, "instances", instances(A) + instances(B))
    put(cat, "kg_triples", [{"snapshot": s, "s": f"Q{n}", "p": "P112", "o": "Q901"}
                            for s in (A, B) for n in (10, 20, 30, 40)])
    put(cat, "entities", [{"snapshot": s, "qid": "Q901", "title": "Jane Roe",
                           "label": "Jane Roe", "description": "", "text_description": "",
                           "created_at": ts("2012-10-29T00:00:00Z")} for s in (A, B)])
    put(cat, "relations", [{"snapshot": s, "pid": "P112", "label": "founded by",
                            "description": ""} for s in (A, B)])
    return cat


def release(cat: Catalog, out: Path, *snapshots: str, **release: Any) -> StageResult:
    validation = release.pop("validation", {})
    return run(cat, "release", release_dir=out, release=release, validation=validation,
               snapshots={"timestamps": list(snapshots), "windows": 2, "window_days": 7})


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def inodes(root: Path, part: str = "") -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_ino for p in sorted(root.rglob("*"))
            if p.is_file() and part in p.relative_to(root).as_posix()}


def same_release(got: Path, want: Path) -> None:
    """Every file byte for byte (the manifest, card and croissant.json too), and the
    fingerprints beside them."""
    a, b = files(got), files(want)
    assert sorted(a) == sorted(b), sorted(set(a) ^ set(b))
    assert [name for name in b if a[name] != b[name]] == []
    assert {"README.md", "croissant.json", MANIFEST, "release.json"} <= set(b)
    assert sidecar_of(got).read_bytes() == sidecar_of(want).read_bytes()


def a_files(root: Path) -> dict[str, int]:
    """A's own files (the splits excepted: they are shared)."""
    return {rel: ino for rel, ino in inodes(root, "2024-01-01").items()
            if not rel.startswith("parquet/splits/")}


def test_a_new_snapshot_carries_the_others_and_equals_a_full_rewrite(
        warehouse: Catalog, tmp_path: Path, caplog) -> None:
    out, whole = tmp_path / "release", tmp_path / "whole"
    first = release(warehouse, out, A)
    assert first.metrics["carried_files"] == 0
    before = a_files(out)
    assert len(before) == 13  # 2 windows × (JSONL + 3 Parquet) + 3 KG + TSV + priors
    with caplog.at_level(logging.INFO, logger="emerge_lib.release"):
        second = release(warehouse, out, A, B)
    release(warehouse, whole, A, B, carry_unchanged=False)
    same_release(out, whole)
    assert a_files(out) == before  # the same inodes: linked, not written
    assert second.metrics["carried_files"] == 13
    assert second.metrics["carried_mb"] == pytest.approx(
        sum((out / rel).stat().st_size for rel in before) / 1e6, abs=0.05)
    assert not set(inodes(out, "2024-04-01").values()) & set(inodes(whole).values())
    said = caplog.text
    assert f"{A}: carried 13 files" in said
    assert f"{B}: written (not in the earlier release)" in said
    assert "shared files: written (a snapshot was written)" in said
    assert second.note.startswith("carried 13 files") and "wrote 2 groups" in second.note
    # A's lines are not checked again: the release suites' report on them is kept (and
    # validation/results.json is still the full rewrite's, compared above)
    assert "the release suites' reports of 1 carried snapshots kept" in said
    assert verify_release(out).ok
    # other suites (here: other validation settings) check the carried lines again
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="emerge_lib.release"):
        stricter = release(warehouse, out, A, B, validation={"min_instances": 2})
    assert stricter.metrics["carried_files"] == 26
    assert "reports of" not in caplog.text
    # their lines read back from the carried files: the checks see what a rewrite wrote
    release(warehouse, tmp_path / "strict", A, B, validation={"min_instances": 2},
            carry_unchanged=False)
    same_release(out, tmp_path / "strict")


def test_a_carried_snapshots_statistics_on_the_card_are_kept(
        warehouse: Catalog, tmp_path: Path, monkeypatch, caplog) -> None:
    """A's statistics on the card are the last release's (its lines are not read for
    them), unless the code that collects them changed or their record is malformed:
    then they are collected again. Every case gives the full rewrite's bytes."""
    import emerge_lib.release.writer as writer

    read: list[str] = []

    def card_stats(reads: Any, out: Path, snap: str, kg_rows: Any) -> Any:
        read.append(snap)
        return collected(reads, out, snap, kg_rows)

    collected = writer.card_stats
    monkeypatch.setattr(writer, "card_stats", card_stats)
    out, whole = tmp_path / "release", tmp_path / "whole"
    release(warehouse, out, A, workers=1)
    assert read == [A]
    read.clear()
    with caplog.at_level(logging.INFO, logger="emerge_lib.release"):
        release(warehouse, out, A, B, workers=1)
    assert read == [B]  # A's kept
    assert "the statistics on the card of 1 carried snapshots kept" in caplog.text
    release(warehouse, whole, A, B, carry_unchanged=False, workers=1)
    same_release(out, whole)
    recorded = json.loads(sidecar_of(out).read_text())["snapshots"]
    assert recorded[A]["stats"]["record"]["passages"] == 2
    assert recorded[A]["stats"]["record"]["ops"] == {"X": 2, "E": 2}
    for n, (spoil, warned) in enumerate((
            (lambda st: {**st, "code": "another code"}, False),
            (lambda st: {**st, "record": {"snapshot": A, "passages": "two"}}, True),
            (lambda st: "not an object", True))):
        state = json.loads(sidecar_of(out).read_text())
        for key in (A, B):
            state["snapshots"][key]["stats"] = spoil(state["snapshots"][key]["stats"])
        sidecar_of(out).write_text(json.dumps(state))
        read.clear()
        caplog.clear()
        validation = {"min_instances": 1 + n}  # the shared files written again
        with caplog.at_level(logging.WARNING, logger="emerge_lib.release.carry"):
            again = release(warehouse, out, A, B, workers=1, validation=validation)
        assert again.metrics["carried_files"] == 26 and sorted(read) == [A, B]
        assert ("is malformed" in caplog.text) is warned
        release(warehouse, whole, A, B, carry_unchanged=False, workers=1,
                validation=validation)
        same_release(out, whole)


def test_in_several_processes_the_carried_release_is_the_same_bytes(
        warehouse: Catalog, tmp_path: Path) -> None:
    """release.workers: 3 with A carried and B written (the quarter's case: A's statistics
    on the card are a unit from the start, beside B's files; the splits and B's statistics
    once B is written; the release suites meanwhile in this process) gives, byte for byte,
    the release one process writes whole, and A's files stay linked."""
    out, whole = tmp_path / "release", tmp_path / "whole"
    release(warehouse, out, A, workers=3)
    before = a_files(out)
    second = release(warehouse, out, A, B, workers=3)
    assert second.metrics["carried_files"] == 13 and a_files(out) == before
    release(warehouse, whole, A, B, carry_unchanged=False, workers=1)
    same_release(out, whole)
    assert verify_release(out).ok


def test_changed_inputs_or_settings_are_written_again(warehouse: Catalog, tmp_path: Path,
                                                      spark) -> None:
    out = tmp_path / "release"
    release(warehouse, out, A, B)
    linked = a_files(out)
    # one of A's instances of window 1 changed (a label)
    changed = [r for r in instances(A) if r["window"] == 1]
    changed[0] = {**changed[0], "o_label": "o, relabelled"}
    warehouse.replace_partition("instances", warehouse.frame("instances", changed),
                                {"snapshot": A, "window": 1})
    again = release(warehouse, out, A, B)
    assert again.metrics["carried_files"] == 13  # B's
    assert not set(a_files(out).values()) & set(linked.values())  # A written anew
    whole = tmp_path / "whole"
    release(warehouse, whole, A, B, carry_unchanged=False)
    same_release(out, whole)
    # a setting that shapes every snapshot's files (the context's hops): both written
    hops = release(warehouse, out, A, B, context={"hops": 2})
    assert hops.metrics["carried_files"] == 0
    release(warehouse, tmp_path / "whole2", A, B, context={"hops": 2}, carry_unchanged=False)
    same_release(out, tmp_path / "whole2")


def test_a_snapshot_whose_stages_ran_again_on_the_same_rows_is_carried(
        warehouse: Catalog, tmp_path: Path, caplog) -> None:
    """What `emerge build` does to a snapshot whose inputs did not change: its stages
    write the same rows again, into new Delta files (here: every table the release reads,
    each partition of A replaced by the same rows, in another order). Its fingerprint is
    of the rows (``Catalog.partition_digest``), so every file of A is carried, linked,
    and the release is a full rewrite's bytes."""
    from emerge_lib.release.carry import SNAPSHOT_READS

    out, off = tmp_path / "release", {"enabled": False}
    release(warehouse, out, A, B, validation=off)
    linked = inodes(out)

    def data_files() -> set[str]:
        return {f for name in SNAPSHOT_READS if warehouse.exists(name)
                for f in warehouse._delta(name).file_uris(
                    file_pruning_predicate=[("snapshot", "=", A)])}

    held = data_files()
    for name in SNAPSHOT_READS:
        if warehouse.exists(name):
            rows = warehouse.read_arrow(name, filters=[("snapshot", "=", A)]).to_pylist()
            put(warehouse, name, list(reversed(rows)))
    assert held and data_files().isdisjoint(held)  # every file of A's rows is new
    with caplog.at_level(logging.INFO, logger="emerge_lib.release"):
        again = release(warehouse, out, A, B, validation=off)
    assert f"{A}: carried 13 files" in caplog.text
    assert inodes(out) == linked  # A's, B's and the shared files: nothing written
    assert again.metrics["carried_files"] == len(linked)
    assert again.note.startswith(f"carried {len(linked)} files")
    release(warehouse, tmp_path / "whole", A, B, validation=off, carry_unchanged=False)
    same_release(out, tmp_path / "whole")


def test_a_damaged_or_missing_file_is_written_again(warehouse: Catalog, tmp_path: Path,
                                                     caplog) -> None:
    out = tmp_path / "release"
    release(warehouse, out, A, B)
    damaged = out / "corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl"
    data = bytearray(damaged.read_bytes())
    data[5] ^= 1
    damaged.write_bytes(bytes(data))
    (out / "kg_snapshots/kg_snapshot_2024-04-01.tsv.gz").unlink()
    with caplog.at_level(logging.WARNING, logger="emerge_lib.release.carry"):
        again = release(warehouse, out, A, B)
    assert again.metrics["carried_files"] == 0
    assert "delta_2024-01-08.jsonl no longer matches the manifest's sha256" in caplog.text
    assert "kg_snapshot_2024-04-01.tsv.gz is missing" in caplog.text
    release(warehouse, tmp_path / "whole", A, B, carry_unchanged=False)
    same_release(out, tmp_path / "whole")
    assert verify_release(out).ok


def test_a_rerun_with_nothing_changed_writes_nothing(warehouse: Catalog, tmp_path: Path) -> None:
    """Every file carried, the manifest too (the validation off: a release whose checks
    did not pass is never carried whole); the result still a full rewrite's bytes."""
    out, off = tmp_path / "release", {"enabled": False}
    release(warehouse, out, A, B, validation=off)
    before = inodes(out)
    again = release(warehouse, out, A, B, validation=off)
    assert inodes(out) == before  # nothing written: every file the same inode
    assert again.metrics["carried_files"] == len(before) == \
        len(json.loads((out / MANIFEST).read_text())["files"]) + 1
    assert again.rows["instances"] == 8 and again.metrics["files"] == len(before) - 1
    release(warehouse, tmp_path / "whole", A, B, validation=off, carry_unchanged=False)
    same_release(out, tmp_path / "whole")
    # with the carry-over off, the same bytes, every file written again
    forced = release(warehouse, out, A, B, validation=off, carry_unchanged=False)
    assert forced.metrics["carried_files"] == 0
    assert not set(inodes(out).values()) & set(before.values())
    same_release(out, tmp_path / "whole")


def test_a_malformed_sidecar_carries_nothing_and_says_so(warehouse: Catalog, tmp_path: Path,
                                                         caplog) -> None:
    out = tmp_path / "release"
    release(warehouse, out, A)
    want = files(out)
    state = json.loads(sidecar_of(out).read_text())
    state["snapshots"][A]["part"] = "not a part"
    sidecar_of(out).write_text(json.dumps(state))
    with caplog.at_level(logging.WARNING, logger="emerge_lib.release.carry"):
        again = release(warehouse, out, A)
    assert again.metrics["carried_files"] == 0 and files(out) == want
    assert f"{sidecar_of(out)} is malformed" in caplog.text
    sidecar_of(out).write_text("{not json")
    assert release(warehouse, out, A).note.startswith("carried 0 files")
    assert files(out) == want


def test_a_sidecar_of_a_release_never_swapped_in_carries_nothing_wrong(
        warehouse: Catalog, tmp_path: Path) -> None:
    """A run killed after writing its fingerprints but before its swap leaves a sidecar
    that names files the folder does not hold: they are written, not carried."""
    out = tmp_path / "release"
    release(warehouse, out, A)
    stale = sidecar_of(out).read_bytes()  # A with one hop of context
    release(warehouse, out, A, context={"hops": 2})
    sidecar_of(out).write_bytes(stale)  # as if the two-hop release had not been swapped in
    again = release(warehouse, out, A)
    assert again.metrics["carried_files"] == 0  # its context files differ from the sidecar's
    release(warehouse, tmp_path / "whole", A, carry_unchanged=False)
    same_release(out, tmp_path / "whole")


def test_where_no_hard_link_can_be_made_the_files_are_copied(
        warehouse: Catalog, tmp_path: Path, monkeypatch) -> None:
    import errno

    from emerge_lib.release import carry

    def no_links(src: Any, dst: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    out = tmp_path / "release"
    release(warehouse, out, A)
    before = a_files(out)
    monkeypatch.setattr(carry.os, "link", no_links)
    again = release(warehouse, out, A, B)
    monkeypatch.undo()
    assert again.metrics["carried_files"] == 13  # carried, as copies
    assert not set(a_files(out).values()) & set(before.values())
    release(warehouse, tmp_path / "whole", A, B, carry_unchanged=False)
    same_release(out, tmp_path / "whole")


def test_reconciling_data_alone_clears_the_provisional_mark(warehouse: Catalog,
                                                           tmp_path: Path) -> None:
    """A logging dump reconciled that changes no snapshot's rows still changes
    release.json (the provisional mark goes): the shared files are written again, the
    snapshots' files stay carried."""
    out, off = tmp_path / "release", {"enabled": False}
    warehouse.merge("ingested_files", warehouse.frame("ingested_files", [
        {"wiki": w, "dump_date": d, "dump_file": f"{w}-{d}-{kind}"}
        for w in ("wikidatawiki", "enwiki")
        for d, kind in (("20231220", "pages-meta-history1.xml-p1p9.bz2"),
                        ("20231220", "pages-meta-hist-incr.xml.bz2"),
                        ("20240519", "pages-meta-hist-incr.xml.bz2"))]))
    release(warehouse, out, A, B, validation=off)
    marked = json.loads((out / "release.json").read_text())["provisional"]
    assert [m["snapshot"] for m in marked] == [A, B]
    warehouse.merge("reconciled_logs", warehouse.frame("reconciled_logs", [
        {"wiki": w, "dump_date": "20240520", "dump_file": f"{w}-20240520-pages-logging.xml.gz"}
        for w in ("wikidatawiki", "enwiki")]))
    before = a_files(out)
    again = release(warehouse, out, A, B, validation=off)
    assert "provisional" not in json.loads((out / "release.json").read_text())
    assert a_files(out) == before  # A's files carried: only the shared ones written
    assert again.metrics["carried_files"] > 0
    release(warehouse, tmp_path / "whole", A, B, validation=off, carry_unchanged=False)
    same_release(out, tmp_path / "whole")
