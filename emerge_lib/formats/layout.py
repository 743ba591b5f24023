"""The release's folder layout: every file and folder name a release uses, the paths of
each snapshot's and window's files, and which paths a release writes (and may therefore
remove when a rebuild no longer writes them).

The authors' folders (their scripts/download_data.sh fetches ``evaluation_set/**``,
``human_annotation/**``, ``kg_snapshots/**`` and ``corpus/**``; their evaluator reads
``kg_snapshots/kg_snapshot_YYYY-MM-DD.tsv``, their statistics ``corpus/snapshot_*/``)::

    corpus/snapshot_D/delta_D.jsonl            every kept line of a window
    evaluation_set/snapshot_D/delta_D.jsonl    the test split drawn from it
    human_annotation/*.jsonl                   human verdicts (emerge annotate import)
    agreement/agreement.{json,md,tex}          their agreement table (ours, beside theirs)
    kg_snapshots/kg_snapshot_D.tsv.gz          G_t as their TSV: head, relation, tail
    kg_snapshots/snapshot_D/<table>.parquet    G_t as our typed tables

and ours beside them (typed copies for datasets, DuckDB, pandas, Croissant; the schema is
``emerge_lib.formats.schema``'s)::

    parquet/corpus/snapshot_D/delta_D.parquet          the corpus lines, typed
    parquet/evaluation_set/snapshot_D/delta_D.parquet  the evaluation lines, typed
    parquet/triples/snapshot_D/delta_D.parquet         the corpus lines' triples, a row each
    parquet/splits/snapshot_D/{train,validation,test}.parquet   the leak-free splits' lines
    parquet/context/snapshot_D/delta_D.parquet         each corpus line's k-hop KG context
    parquet/context/snapshot_D/relation_priors.parquet R_t's triples per relation in T_t
    parquet/<table>.parquet                            a released catalog table (instances)
    release.json                                       the files, snapshots, lines, operations
    validation/                                        the validation results and their page
    plots/*.png, README.md, card.html                  the dataset card
    croissant.json                                     the Croissant metadata
    manifest.json                                      every file with its sha256 (manifest)

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from emerge_lib.formats.format import FormatError, iso_date, window_end

CORPUS = "corpus"
EVALUATION_SET = "evaluation_set"
HUMAN_ANNOTATION = "human_annotation"
#: not inside human_annotation/: the authors' agreement script reads every file there
AGREEMENT = "agreement"
KG_SNAPSHOTS = "kg_snapshots"
PARQUET = "parquet"
PARQUET_CORPUS = f"{PARQUET}/{CORPUS}"
PARQUET_EVALUATION = f"{PARQUET}/{EVALUATION_SET}"
PARQUET_TRIPLES = f"{PARQUET}/triples"
PARQUET_SPLITS = f"{PARQUET}/splits"  # the leak-free splits, a file per snapshot and split
PARQUET_CONTEXT = f"{PARQUET}/context"  # each corpus line's k-hop context, per window
#: the leak-free splits, in this order everywhere (the card, the loaders, the manifest)
SPLITS = ("train", "validation", "test")
RELATION_PRIORS = "relation_priors"  # parquet/context/snapshot_D/relation_priors.parquet
#: each JSONL folder's typed twins: JSONL top folder → the Parquet folders of its lines
#: (and, for the corpus, of its triples)
PARQUET_TWINS = {CORPUS: (PARQUET_CORPUS, PARQUET_TRIPLES, PARQUET_CONTEXT),
                 EVALUATION_SET: (PARQUET_EVALUATION,)}
LISTING = "release.json"  # the files, snapshots, lines and operations (release.json)
VALIDATION = "validation"  # the validation results and their page
VALIDATION_RESULTS = f"{VALIDATION}/results.json"  # every check with its observed values
VALIDATION_PAGE = f"{VALIDATION}/index.html"  # the checks for a browser, offline
CARD = "README.md"  # the Hub's dataset card
CARD_HTML = "card.html"  # the same card for a browser
PLOTS = "plots"  # the card's figures
CROISSANT = "croissant.json"  # the Croissant metadata
#: the KG snapshot's tables, each released per snapshot under kg_snapshots/snapshot_D/
KG_SNAPSHOT_TABLES = ("kg_triples", "entities", "relations")


def snapshot_dir_name(snapshot: datetime | str) -> str:
    """``snapshot_2024-04-01``: a snapshot's folder, named by its UTC day."""
    return f"snapshot_{iso_date(snapshot)}"


def delta_file_name(snapshot: datetime | str, window: int, window_days: float) -> str:
    """``delta_2024-04-08.jsonl``: a window's file, named by τ_k's UTC day."""
    return f"delta_{iso_date(window_end(snapshot, window, window_days))}.jsonl"


def corpus_path(snapshot: datetime | str, window: int, window_days: float) -> str:
    """``corpus/snapshot_D/delta_D.jsonl``: a window's kept lines."""
    return f"{CORPUS}/{snapshot_dir_name(snapshot)}/{delta_file_name(snapshot, window, window_days)}"


def evaluation_path(snapshot: datetime | str, window: int, window_days: float) -> str:
    """``evaluation_set/snapshot_D/delta_D.jsonl``: a window's test lines."""
    return (f"{EVALUATION_SET}/{snapshot_dir_name(snapshot)}/"
            f"{delta_file_name(snapshot, window, window_days)}")


def parquet_twin(jsonl_path: str, folder: str | None = None) -> str:
    """The typed twin of a release JSONL file: ``corpus/snapshot_D/delta_D.jsonl`` →
    ``parquet/corpus/snapshot_D/delta_D.parquet`` (or, with ``folder``, e.g.
    ``PARQUET_TRIPLES``, that folder's file of the same snapshot and window)."""
    top, rest = jsonl_path.split("/", 1)
    if top not in PARQUET_TWINS or not rest.endswith(".jsonl"):
        raise FormatError(f"{jsonl_path}: not a corpus or evaluation_set JSONL file")
    return f"{folder or PARQUET_TWINS[top][0]}/{rest.removesuffix('.jsonl')}.parquet"


def split_path(snapshot: datetime | str, split: str) -> str:
    """``parquet/splits/snapshot_D/train.parquet``: a snapshot's lines of a leak-free split."""
    return f"{PARQUET_SPLITS}/{snapshot_dir_name(snapshot)}/{split}.parquet"


def priors_path(snapshot: datetime | str) -> str:
    """``parquet/context/snapshot_D/relation_priors.parquet``: R_t's counts in T_t."""
    return f"{PARQUET_CONTEXT}/{snapshot_dir_name(snapshot)}/{RELATION_PRIORS}.parquet"


def table_parquet_path(name: str) -> str:
    """``parquet/<table>.parquet``: a released catalog table of every snapshot."""
    return f"{PARQUET}/{name}.parquet"


def kg_parquet_path(snapshot: datetime | str, table: str) -> str:
    """``kg_snapshots/snapshot_D/<table>.parquet``: one of G_t's tables."""
    return f"{KG_SNAPSHOTS}/{snapshot_dir_name(snapshot)}/{table}.parquet"


def kg_tsv_path(snapshot: datetime | str) -> str:
    """``kg_snapshots/kg_snapshot_D.tsv.gz``: T_t as the authors' evaluator reads it."""
    return f"{KG_SNAPSHOTS}/kg_snapshot_{iso_date(snapshot)}.tsv.gz"


def written_by_release(rel: str, tables: Collection[str]) -> bool:
    """Is ``rel`` (a release-relative path) one a release writes, and may therefore remove
    when a rebuild does not write it again? ``tables``: the catalog's table names (a
    table released whole is ``parquet/<table>.parquet``). The manifest and
    ``human_annotation/`` and ``agreement/`` are not: the manifest is written last, on its
    own; the annotation is the annotators', carried over as it is."""
    parts = rel.split("/")
    if parts in ([LISTING], [CARD], [CARD_HTML], [CROISSANT]) or parts[0] == VALIDATION:
        return True
    if len(parts) == 4 and parts[0] == PARQUET:  # parquet/<kind>/snapshot_D/delta_D.parquet
        twins = {folder for folders in PARQUET_TWINS.values() for folder in folders}
        folder, name = f"{parts[0]}/{parts[1]}", parts[3]
        if not parts[2].startswith("snapshot_") or not name.endswith(".parquet"):
            return False
        stem = name.removesuffix(".parquet")
        return (folder in twins and name.startswith("delta_")) or \
            (folder == PARQUET_SPLITS and stem in SPLITS) or \
            (folder == PARQUET_CONTEXT and stem == RELATION_PRIORS)
    if len(parts) == 2:
        folder, name = parts
        if folder == PARQUET:
            return name.endswith(".parquet") and name.removesuffix(".parquet") in tables
        if folder == PLOTS:
            return name.endswith(".png")
        return folder == KG_SNAPSHOTS and name.startswith("kg_snapshot_") and \
            name.endswith(".tsv.gz")
    if len(parts) != 3 or not parts[1].startswith("snapshot_"):
        return False
    top, _, name = parts
    if top in (CORPUS, EVALUATION_SET):
        return name.startswith("delta_") and name.endswith(".jsonl")
    return top == KG_SNAPSHOTS and name.endswith(".parquet") and \
        name.removesuffix(".parquet") in KG_SNAPSHOT_TABLES
