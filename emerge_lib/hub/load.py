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

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.formats import about
from emerge_lib.formats.layout import (
    KG_SNAPSHOTS,
    PARQUET_CORPUS,
    PARQUET_EVALUATION,
    PARQUET_TRIPLES,
)
from emerge_lib.formats.schema import LINE_SCHEMA, TRIPLE_ROW_SCHEMA
from emerge_lib.hub.release import OpenRelease, ReleaseNotFound, open_release

Kind = Literal["lines", "triples", "kg", "entities", "relations"]
Format = Literal["datasets", "pandas", "arrow"]
KINDS = ("lines", "triples", "kg", "entities", "relations")
FORMATS = ("datasets", "pandas", "arrow")
#: the corpus (default) and the evaluation set (``test``, the Hub's split name)
SPLITS = {None: "corpus", "corpus": "corpus", "test": "test", "evaluation": "test",
          "evaluation_set": "test"}
VERSION_KEY = b"emerge.version"
KG_TABLE = {"kg": "kg_triples", "entities": "entities", "relations": "relations"}


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
               split: str | None = None) -> pa.Table:
    """The Arrow table of ``kind`` (see :func:`load_release`) of an open release."""
    if kind not in KINDS:
        raise LoadError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    if split not in SPLITS:
        raise LoadError(f"split {split!r}: expected corpus or test (the evaluation set)")
    which = SPLITS[split]
    folder = _snapshot_dir(snapshot)
    if snapshot is not None and folder.removeprefix("snapshot_") not in _snapshots(release):
        raise LoadError(f"{release.source}: no snapshot {folder.removeprefix('snapshot_')}; "
                        f"it has {', '.join(_snapshots(release)) or 'none'}")
    if kind in KG_TABLE:
        if which != "corpus":
            raise LoadError(f"kind {kind!r} has no split: the KG snapshot is G_t")
        files = release.files(f"{KG_SNAPSHOTS}/{folder}/{KG_TABLE[kind]}.parquet")
        if not files:
            raise LoadError(f"{release.source}: no {KG_TABLE[kind]} Parquet in this release")
        return _read(files, None)
    lines_folder = PARQUET_CORPUS if which == "corpus" else PARQUET_EVALUATION
    lines = release.files(f"{lines_folder}/{folder}/delta_*.parquet")
    if not lines and not any(p.startswith(f"{lines_folder}/") for p in release.paths):
        raise LoadError(f"{release.source}: no {lines_folder}/ in this release (built before "
                        "typed Parquet, or without an evaluation set)")
    if kind == "lines":
        return _read(lines, LINE_SCHEMA)
    triples = _read(release.files(f"{PARQUET_TRIPLES}/{folder}/delta_*.parquet"),
                    TRIPLE_ROW_SCHEMA)
    if which == "test":  # the evaluation lines are corpus lines: their triples by hash_id
        ids = _read(lines, LINE_SCHEMA).column("hash_id")
        triples = triples.filter(pc.is_in(triples.column("hash_id"), value_set=ids))
    return triples


def load_release(path_or_s3_url: str | Path, snapshot: str | None = None,
                 split: str | None = None, kind: Kind = "lines",
                 format: Format = "datasets", *, cache_dir: str | Path | None = None,
                 client: Any = None, unsigned: bool = False) -> Any:
    """A release in one line.

    - ``path_or_s3_url``: a release folder, ``s3://BUCKET/PREFIX`` (the latest published
      version) or ``s3://BUCKET/PREFIX/v/VERSION``: fetched verified into a cache once
      (``emerge_lib.hub.release``);
    - ``snapshot``: one snapshot (``2024-01-01``), or all of them;
    - ``split``: ``None`` (the corpus) or ``"test"`` (the evaluation set);
    - ``kind``: ``"lines"`` (a row per line), ``"triples"`` (a row per TKGU triple of a
      line, with its ``hash_id``), ``"kg"`` (the KG snapshot's triples), ``"entities"``,
      ``"relations"``;
    - ``format``: ``"datasets"`` (a ``datasets.Dataset``), ``"pandas"``, ``"arrow"``.
    """
    if format not in FORMATS:
        raise LoadError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    release = open_release(path_or_s3_url, snapshots=[snapshot] if snapshot else (),
                           cache_dir=cache_dir, client=client, unsigned=unsigned)
    table = read_table(release, kind, snapshot, split)
    what = f"{kind} of {'snapshot ' + snapshot if snapshot else 'every snapshot'}" + (
        ", the evaluation set" if SPLITS.get(split) == "test" else "")
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
                            split=datasets.NamedSplit(SPLITS[split] if kind not in KG_TABLE
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
