"""``load_release``: a release as a ``datasets.Dataset``, a pandas DataFrame or an Arrow
table, in one line.

It reads the release's typed Parquet (``emerge_lib.formats.schema``), never the JSONL, so
every column has its declared type. The files are read with pyarrow into one in-memory
Arrow table and wrapped as ``datasets.Dataset(table)``: measured on the demo release, this
takes a fraction of ``datasets.load_dataset(DIR)``'s time, which first converts every
split into its Arrow cache; ``load_dataset`` remains the way to the memory-mapped cache for
a release larger than memory (docs/using-a-release.md). The release's version travels
with the result: ``ds.info.description`` starts with ``EMERGE release <version>``,
``df.attrs["emerge_version"]``, the Arrow schema's ``emerge.version`` metadata;
:func:`version_of` reads any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.formats import about
from emerge_lib.formats.layout import (
    KG_SNAPSHOTS,
    PARQUET_CONTEXT,
    PARQUET_CORPUS,
    PARQUET_EVALUATION,
    PARQUET_SPLITS,
    PARQUET_TRIPLES,
    RELATION_PRIORS,
)
from emerge_lib.formats.schema import (
    CONTEXT_SCHEMA,
    LINE_SCHEMA,
    PRIORS_SCHEMA,
    TRIPLE_ROW_SCHEMA,
)
from emerge_lib.hub.release import OpenRelease, ReleaseNotFound, open_release

log = logging.getLogger(__name__)

Kind = Literal["lines", "triples", "context", "kg", "entities", "relations", "priors"]
Format = Literal["datasets", "pandas", "arrow"]
KINDS = ("lines", "triples", "context", "kg", "entities", "relations", "priors")
FORMATS = ("datasets", "pandas", "arrow")
#: the corpus (default); the leak-free splits: ``train``, ``validation`` and ``test`` (the
#: evaluation set, the authors' draw: the Hub's split name)
SPLITS = {None: "corpus", "corpus": "corpus", "test": "test", "evaluation": "test",
          "evaluation_set": "test", "train": "train", "validation": "validation"}

VERSION_KEY = b"emerge.version"
KG_TABLE = {"kg": "kg_triples", "entities": "entities", "relations": "relations"}
#: the kinds of a snapshot rather than of its lines: no split, no ``after``
PER_SNAPSHOT = (*KG_TABLE, "priors")


class LoadError(ReleaseNotFound):
    """A request the release cannot answer (an unknown kind, split or snapshot)."""


def _snapshot_dir(snapshot: str | None) -> str:
    if snapshot is None:
        return "snapshot_*"
    from emerge_lib.publish.download import snapshot_date

    return f"snapshot_{snapshot_date(snapshot)}"


def _read(files: Sequence[Path], schema: pa.Schema | None) -> pa.Table:
    """The files as one table; with ``schema``, each file must hold exactly its columns
    and types (:func:`_check_schema`)."""
    for f in files if schema is not None else ():
        _check_schema(f, schema)
    tables = [pq.read_table(f, schema=schema) if schema is not None else pq.read_table(f)
              for f in files]
    if not tables:
        return schema.empty_table() if schema is not None else pa.table({})
    return pa.concat_tables(tables)


def _check_schema(path: Path, declared: pa.Schema) -> None:
    """Refuse a file whose columns differ from the declared schema: reading it with that
    schema would silently fill a missing column with nulls and cast a column of another
    type, where ``emerge query`` fails on the same file."""
    stored = pq.read_schema(path)
    missing = [n for n in declared.names if n not in stored.names]
    extra = [n for n in stored.names if n not in declared.names]
    retyped = [f"{f.name} ({stored.field(f.name).type}, declared {f.type})" for f in declared
               if f.name in stored.names and not stored.field(f.name).type.equals(f.type)]
    if missing or extra or retyped:
        parts = [f"{what}: {', '.join(names[:3])}" for what, names in
                 (("missing", missing), ("not declared", extra), ("of another type", retyped))
                 if names]
        raise LoadError(f"{path}: its columns are not the release format's ({'; '.join(parts)})"
                        "; download the release again, or rebuild it")


def _snapshots(release: OpenRelease) -> list[str]:
    folders = {Path(p).parent.name for p in release.paths
               if p.startswith(f"{PARQUET_CORPUS}/") or p.startswith(f"{KG_SNAPSHOTS}/snapshot_")}
    return sorted(f.removeprefix("snapshot_") for f in folders if f.startswith("snapshot_"))


def read_table(release: OpenRelease, kind: Kind = "lines", snapshot: str | None = None,
               split: str | None = None, after: str | date | None = None) -> pa.Table:
    """The Arrow table of ``kind`` (see :func:`load_release`) of an open release."""
    if kind not in KINDS:
        raise LoadError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    if split not in SPLITS:
        raise LoadError(f"split {split!r}: expected corpus, train, validation or test (the "
                        "evaluation set)")
    which = SPLITS[split]
    folder = _snapshot_dir(snapshot)
    if snapshot is not None and folder.removeprefix("snapshot_") not in _snapshots(release):
        raise LoadError(f"{release.source}: no snapshot {folder.removeprefix('snapshot_')}; "
                        f"it has {', '.join(_snapshots(release)) or 'none'}")
    if kind in PER_SNAPSHOT:
        if which != "corpus" or after is not None:
            raise LoadError(f"kind {kind!r} has no split and no after=: it is the "
                            "snapshot's, not its lines'")
        pattern = (f"{PARQUET_CONTEXT}/{folder}/{RELATION_PRIORS}.parquet" if kind == "priors"
                   else f"{KG_SNAPSHOTS}/{folder}/{KG_TABLE[kind]}.parquet")
        files = release.files(pattern)
        if not files:
            raise LoadError(f"{release.source}: no {pattern.split('/')[-1]} in this release"
                            + (" (built before the KG context)" if kind == "priors" else ""))
        return _read(files, PRIORS_SCHEMA if kind == "priors" else None)
    lines = _read(_line_files(release, which, folder), LINE_SCHEMA)
    if after is not None:
        lines = appeared_after(lines, after)
    if kind == "lines":
        return lines
    if kind == "context":
        files = release.files(f"{PARQUET_CONTEXT}/{folder}/delta_*.parquet")
        if not files:
            raise LoadError(f"{release.source}: no {PARQUET_CONTEXT}/ in this release (built "
                            "before the KG context)")
        table = _read(files, CONTEXT_SCHEMA)
    else:
        table = _read(release.files(f"{PARQUET_TRIPLES}/{folder}/delta_*.parquet"),
                      TRIPLE_ROW_SCHEMA)
    if which != "corpus" or after is not None:  # a subset of the corpus lines, by hash_id
        table = table.filter(pc.is_in(table.column("hash_id"),
                                      value_set=lines.column("hash_id")))
    return table


def _line_files(release: OpenRelease, which: str, folder: str) -> list[Path]:
    """The Parquet files of the lines of a split: the corpus, the evaluation set (``test``)
    or a leak-free split's files."""
    if which in ("train", "validation"):
        files = release.files(f"{PARQUET_SPLITS}/{folder}/{which}.parquet")
        if not files and not any(p.startswith(f"{PARQUET_SPLITS}/") for p in release.paths):
            raise LoadError(f"{release.source}: no {PARQUET_SPLITS}/ in this release (built "
                            "before the leak-free splits)")
        return files
    lines_folder = PARQUET_CORPUS if which == "corpus" else PARQUET_EVALUATION
    files = release.files(f"{lines_folder}/{folder}/delta_*.parquet")
    if not files and not any(p.startswith(f"{lines_folder}/") for p in release.paths):
        raise LoadError(f"{release.source}: no {lines_folder}/ in this release (built before "
                        "typed Parquet, or without an evaluation set)")
    return files


def appeared_after(lines: pa.Table, after: str | date) -> pa.Table:
    """The lines whose passage first appeared (``revision_date``) after ``after``, a
    model's training cutoff: ``emerge evaluate --after``'s rule (a date is midnight UTC; a
    line without a revision date is left out). Says how many were kept, in one line."""
    from emerge_lib.formats.format import instant

    try:
        cutoff = instant(after.isoformat() if isinstance(after, date) else after)
    except ValueError as exc:
        raise LoadError(f"after={after!r}: {exc}") from None
    when = lines.column("revision_date")
    kept = lines.filter(pc.fill_null(pc.greater(when, pa.scalar(cutoff, when.type)), False))
    undated = when.null_count
    log.info("after=%s: %d of %d lines appeared after it%s", after, kept.num_rows,
             lines.num_rows, f" ({undated} without a revision_date, left out)" if undated else "")
    if not kept.num_rows and lines.num_rows:
        log.warning("after=%s: no line's passage appeared after it (latest revision_date: "
                    "%s)", after, pc.max(when).as_py())
    return kept


def load_release(path_or_s3_url: str | Path, snapshot: str | None = None,
                 split: str | None = None, kind: Kind = "lines",
                 format: Format = "datasets", *, after: str | date | None = None,
                 cache_dir: str | Path | None = None,
                 client: Any = None, unsigned: bool = False) -> Any:
    """A release in one line.

    - ``path_or_s3_url``: a release folder, ``s3://BUCKET/PREFIX`` (the latest published
      version) or ``s3://BUCKET/PREFIX/v/VERSION``: fetched verified into a cache once
      (``emerge_lib.hub.release``);
    - ``snapshot``: one snapshot (``2024-01-01``), or all of them;
    - ``split``: ``None`` (the corpus), or a leak-free split: ``"train"``,
      ``"validation"``, ``"test"`` (the evaluation set, the authors' draw), disjoint by
      article (docs/using-a-release.md "Leak-free splits");
    - ``kind``: ``"lines"`` (a row per line), ``"triples"`` (a row per TKGU triple of a
      line, with its ``hash_id``), ``"context"`` (a line's k-hop neighbourhood in G_t),
      ``"kg"`` (the KG snapshot's triples), ``"entities"``, ``"relations"``, ``"priors"``
      (triples per relation in T_t);
    - ``format``: ``"datasets"`` (a ``datasets.Dataset``), ``"pandas"``, ``"arrow"``;
    - ``after``: a model's training cutoff, a date or ISO instant (a string, a ``date``
      or a ``datetime``; naive is UTC): only the lines whose passage first appeared after
      it (``emerge evaluate --after``'s rule), and their triples or context; how many were
      kept is logged and in the description.
    """
    if format not in FORMATS:
        raise LoadError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    release = open_release(path_or_s3_url, snapshots=[snapshot] if snapshot else (),
                           cache_dir=cache_dir, client=client, unsigned=unsigned)
    table = read_table(release, kind, snapshot, split, after)
    which = SPLITS.get(split)
    what = f"{kind} of {'snapshot ' + snapshot if snapshot else 'every snapshot'}" + (
        ", the evaluation set" if which == "test" else
        f", the {which} split" if which in ("train", "validation") else "") + (
        (f", {table.num_rows} lines that appeared after {after}" if kind == "lines" else
         f", {table.num_rows} rows of the lines that appeared after {after}")
        if after is not None else "")
    if not table.num_rows:  # a filter can leave columns of no chunk, which datasets refuses
        table = table.schema.empty_table()
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           VERSION_KEY: release.version.encode()})
    if format == "arrow":
        return table
    if format == "pandas":
        frame = table.to_pandas()
        frame.attrs["emerge_version"] = release.version
        return frame
    import datasets

    info = datasets.DatasetInfo(
        description=f"EMERGE release {release.version}: {what} ({release.source})",
        citation=about.CITATION, homepage=about.PAPER_URL, license=about.LICENSE,
        dataset_name="emerge", config_name=kind)
    return datasets.Dataset(table, info=info,
                            split=datasets.NamedSplit(SPLITS[split] if kind not in PER_SNAPSHOT
                                                      else "train"))


def version_of(loaded: Any) -> str | None:
    """The release version of what :func:`load_release` returned (any format)."""
    if isinstance(loaded, pa.Table):
        value = (loaded.schema.metadata or {}).get(VERSION_KEY)
        return value.decode() if value else None
    attrs = getattr(loaded, "attrs", None)
    if isinstance(attrs, dict) and "emerge_version" in attrs:
        return str(attrs["emerge_version"])
    info = getattr(loaded, "info", None)
    text = getattr(info, "description", None) or ""
    if text.startswith("EMERGE release "):
        return text.split()[2].rstrip(":")
    return None
