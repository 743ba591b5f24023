"""``emerge stats``: the paper's Table 2 of a release, counted as the authors count theirs."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stats",
        help="the paper's Table 2 of a release (or of the authors' corpus), LLM-supported "
             "triples beside all",
        description=(
            "Per snapshot: the entities, relation types and triples of the corpus lines, the "
            "triples an LLM judge supports (the authors' rule C: the deprecation verdict "
            "for a triple with D, else the assertion verdict; each counted once, under its "
            "first operation), the passages and the KG snapshot; then the instances per "
            "operation, the supported ones in brackets. Reads corpus/snapshot_*/ of a "
            "release (or snapshot_*/ of a folder, as the authors' corpus download has it)."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge stats --release demo/release",
             "emerge stats --release emerge-authors/corpus --json")
    p.add_argument("--release", required=True, metavar="DIR",
                   help="a release folder, or a folder of snapshot_*/delta_*.jsonl")
    p.add_argument("--assessor", metavar="LLM_NAME",
                   help="the judge whose verdicts count on lines without "
                        "asserted_operations (the authors' files); default: their "
                        "Meta-Llama-3.1-405B_prompt_v1, else its unsuffixed name")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import pyarrow.parquet as pq

    from emerge_lib.core.errors import InputError
    from emerge_lib.core.ops import op_label
    from emerge_lib.formats.card import OP_ORDER, collect, table2_text
    from emerge_lib.formats.layout import CORPUS, kg_parquet_path

    root = Path(args.release)
    if not root.is_dir():
        raise InputError(f"stats: {root} is not a folder")
    corpus = root / CORPUS if (root / CORPUS).is_dir() else root
    snapshots = sorted(p.name.removeprefix("snapshot_") for p in corpus.glob("snapshot_*")
                       if p.is_dir() and any(p.glob("delta_*.jsonl")))
    if not snapshots:
        raise InputError(f"stats: no snapshot_*/delta_*.jsonl under {corpus}")
    kg_rows = {snap: {table: pq.ParquetFile(path).metadata.num_rows
                      for table in ("kg_triples", "entities", "relations")
                      if (path := root / kg_parquet_path(snap, table)).is_file()}
               for snap in snapshots}
    stats = collect(root, snapshots, kg_rows, args.assessor)
    rows = [s.row() for s in stats]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(table2_text(rows))
    print()
    head = ["Snapshot", *(op_label(o) for o in OP_ORDER)]
    cells = [head] + [[s.snapshot[:10], *(
        f"{s.ops.get(o, 0):,}" + (f" ({s.supported_ops.get(o, 0):,})" if s.curated else "")
        for o in OP_ORDER)] for s in stats]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for r in cells:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    if not all(s.curated for s in stats):
        print("\nuncurated: no LLM judged these lines (emerge curate judges them)")
    return 0
