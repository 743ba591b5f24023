"""The released catalog tables as files: each snapshot's KG tables as Parquet and T_t as the
authors' TSV (``kg_snapshots/``), and the tables released whole (``parquet/instances.parquet``),
each read at the Delta version the release pinned and sorted, so that a rebuild, on any
engine or partitioning, writes the same bytes."""

from __future__ import annotations

import gzip
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.catalog import Catalog, spec
from emerge_lib.formats.schema import dated_snapshot, release_schema
from emerge_lib.release._atomic import atomic_file

#: Each released table's row order: a rebuild, on any engine or partitioning, writes the
#: same bytes.
RELEASE_ORDER: dict[str, tuple[str, ...]] = {
    "kg_triples": ("snapshot", "s", "p", "o"),
    "entities": ("snapshot", "qid"),
    "relations": ("snapshot", "pid"),
    "instances": ("snapshot", "window", "passage_id", "op", "s", "p", "o"),
}


def write_parquet(catalog: Catalog, name: str, path: Path, snapshots: Sequence[str],
                  version: int | None, dropped: Mapping[str, set[str]]) -> int:
    """Write one table's rows of ``snapshots`` (at a pinned version) into one Parquet file,
    one snapshot at a time, each sorted (``RELEASE_ORDER``); rows of the passages in
    ``dropped`` (snapshot → ``window:passage_id``, near-duplicates) are left out, so the
    Parquet holds what the JSONL holds. Returns the rows written.

    Batches are cast to the catalog's declared schema, so a release's Parquet types do not
    depend on how the engine happened to write the Delta files; ``snapshot`` (the catalog's
    key of t, a string) is then the date of t, its type in the release's lines and triples
    (``formats.schema.dated_snapshot``), so the release's tables join on it.
    """
    schema = spec(name).schema
    written = release_schema(schema)
    order = [(c, "ascending") for c in RELEASE_ORDER[name]]
    rows = 0
    with atomic_file(path) as tmp, pq.ParquetWriter(tmp, written, compression="zstd") as writer:
        for snap in sorted(snapshots) if version is not None else ():
            # prune files by partition, and filter rows too in case a table is unpartitioned
            dataset = catalog.dataset(name, version, [("snapshot", "=", snap)])
            table = dataset.to_table(columns=schema.names, filter=pc.field("snapshot") == snap,
                                     use_threads=False)  # see Catalog.read_arrow
            left_out = dropped.get(snap)
            if left_out and table.num_rows:
                key = pc.binary_join_element_wise(pc.cast(table["window"], "string"),
                                                  table["passage_id"], ":")
                table = table.filter(pc.invert(pc.is_in(key, value_set=pa.array(
                    sorted(left_out)))))
            if table.num_rows:
                writer.write_table(dated_snapshot(table.cast(schema)).sort_by(order))
                rows += table.num_rows
    return rows


def write_kg_tsv(catalog: Catalog, path: Path, snapshot: str, version: int | None) -> int:
    """T_t as the authors' KG snapshot file: ``head<TAB>relation<TAB>tail`` per line
    (their s03_get_kg_snapshot.py "triples_only" output, which their evaluator reads for
    relik-cie), sorted, gzip-compressed with no name and no time in its header (the same
    rows give the same bytes). Returns the rows written."""
    rows = 0
    with atomic_file(path) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        if version is not None:
            dataset = catalog.dataset("kg_triples", version, [("snapshot", "=", snapshot)])
            table = dataset.to_table(columns=["s", "p", "o"],
                                     filter=pc.field("snapshot") == snapshot,
                                     use_threads=False)
            table = table.sort_by([("s", "ascending"), ("p", "ascending"), ("o", "ascending")])
            for batch in table.to_batches(max_chunksize=65536):
                s, p, o = (batch.column(i).to_pylist() for i in range(3))
                gz.write("".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(s, p, o, strict=True))
                         .encode("utf-8"))
                rows += batch.num_rows
    return rows


def dropped(catalog: Catalog, snapshots: Sequence[str], version: int | None
            ) -> dict[str, set[str]]:
    """snapshot → ``window:passage_id`` of the near-duplicate lines the release leaves out."""
    if version is None:
        return {}
    out: dict[str, set[str]] = defaultdict(set)
    for r in catalog.read_arrow("selection", filters=[("kept", "=", False)],
                                columns=["snapshot", "window", "passage_id"],
                                version=version).to_pylist():
        if r["snapshot"] in snapshots:
            out[r["snapshot"]].add(f"{r['window']}:{r['passage_id']}")
    return out
