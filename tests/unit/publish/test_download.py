"""``emerge download --snapshot``'s file filter (emerge_lib/publish/download.py): a
snapshot's files are all its folders', the splits and the KG context included."""

from __future__ import annotations

from emerge_lib.publish.download import select_files


def test_a_snapshot_brings_its_splits_and_context() -> None:
    mine = ["corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl",
            "parquet/splits/snapshot_2024-01-01/train.parquet",
            "parquet/splits/snapshot_2024-01-01/test.parquet",
            "parquet/context/snapshot_2024-01-01/delta_2024-01-08.parquet",
            "parquet/context/snapshot_2024-01-01/relation_priors.parquet",
            "kg_snapshots/kg_snapshot_2024-01-01.tsv.gz"]
    other = ["parquet/splits/snapshot_2024-04-01/train.parquet",
             "parquet/context/snapshot_2024-04-01/relation_priors.parquet",
             "parquet/instances.parquet", "README.md"]
    manifest = {"files": [{"path": p} for p in mine + other]}
    assert [f["path"] for f in select_files(manifest, ["2024-01-01"])] == mine
