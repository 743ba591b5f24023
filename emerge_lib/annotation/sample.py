"""``emerge annotate export``: a stratified sample of a release's questions, N per
operation, as Label Studio tasks and as EMERGE JSONL in the authors' annotation layout.

The authors' design (their s09a picks lines, their s09b asks with caps of N verdicts per
operation; their code, klimzaporojets/emerge, src/dataset/emerge/s09*), with a seed:

- lines are taken round robin over the release's delta files (sorted: every snapshot and
  delta in turn), as s09a interleaves its input files; within a file, in an order
  shuffled by ``seed`` (theirs: the file's order, no seed);
- each triple is asked under each of its prompt types (a ``["d-triples", "e-triples"]``
  triple twice: assertion and deprecation), and a question is drawn unless every operation
  it stands for (its additions for the assertion prompt, ``d-triples`` for the
  deprecation prompt) already has N; drawing it counts one for each of them (s09b's
  ``exceeds_max_per_tkgu_type`` and ``update_count_annotated_per_triple``): a two-operation
  triple counts for both of its operations, as the authors count it;
- the draw stops when every operation has N, or the lines run out (an operation the
  release has fewer of gets what there is: ``sample.json`` says how many).

Written into the output folder: ``tasks.json`` (Label Studio tasks), ``labeling_config.xml``,
``instances_to_annotate.jsonl`` (the drawn lines in the authors' layout: release lines
without ``predictions``, ``human_assessment`` empty, the name of s09a's output) and
``sample.json`` (seed, counts per operation and snapshot, the questions drawn).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.annotation.labelstudio import LABEL_CONFIG, task
from emerge_lib.annotation.release import AnnotationError, ReleaseIndex, read_jsonl
from emerge_lib.formats.format import OP_NAMES, prompt_type_of, prompt_types_of

SPLITS = ("auto", "evaluation", "corpus")
TASKS, CONFIG, LINES, SAMPLE = ("tasks.json", "labeling_config.xml",
                                "instances_to_annotate.jsonl", "sample.json")


@dataclass
class Sample:
    """The questions drawn: (line, triple, prompt type), in draw order."""

    per_op: int
    seed: int
    split: str
    questions: list[tuple[dict[str, Any], dict[str, Any], str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # operation → questions counted
    per_snapshot: dict[str, Counter[str]] = field(default_factory=dict)


def _interleaved(index: ReleaseIndex, split: str, seed: int) -> Iterator[dict[str, Any]]:
    """Lines round robin over the split's files, each file's lines in a seeded order."""
    queues = []
    for path in index.split_files(split):
        lines = [rec for _, rec in read_jsonl(path)]
        random.Random(f"{seed}:{path.relative_to(index.root).as_posix()}").shuffle(lines)
        queues.append(iter(lines))
    while queues:
        alive = []
        for q in queues:
            rec = next(q, None)
            if rec is not None:
                yield rec
                alive.append(q)
        queues = alive


def draw(index: ReleaseIndex, per_op: int, seed: int, split: str = "auto") -> Sample:
    """N = ``per_op`` questions per operation (see the module docstring)."""
    if per_op < 1:
        raise AnnotationError(f"--per-op must be at least 1, not {per_op}")
    if split not in SPLITS:
        raise AnnotationError(f"--split must be one of {', '.join(SPLITS)}, not {split!r}")
    sample = Sample(per_op, seed, split)
    ops = list(OP_NAMES.values())
    for rec in _interleaved(index, split, seed):
        if all(sample.counts[op] >= per_op for op in ops):
            break
        snapshot = str((rec.get("delta_dates") or [""])[0])
        for t in rec["tkgu_triples"]:
            names = list(t.get("tkgu_operations") or ())
            for kind in prompt_types_of(names):
                mine = [op for op in names if prompt_type_of(op) == kind]
                if all(sample.counts[op] >= per_op for op in mine):
                    continue
                sample.questions.append((rec, t, kind))
                sample.counts.update(mine)
                sample.per_snapshot.setdefault(snapshot, Counter()).update(mine)
    return sample


def export(release: str | Path, out: str | Path, per_op: int, seed: int,
           split: str = "auto") -> Sample:
    """Draw the sample of ``release`` and write it into ``out`` (see the module docstring).
    The same release, N and seed write the same bytes."""
    index = ReleaseIndex.open(release)
    sample = draw(index, per_op, seed, split)
    if not sample.questions:
        raise AnnotationError(f"{release}: no triple to annotate in its {split} lines")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tasks = [task(rec, t, kind, index.definition(rec, t["triple"][1]), index.version)
             for rec, t, kind in sample.questions]
    lines: dict[str, dict[str, Any]] = {}
    for rec, _, _ in sample.questions:
        lines.setdefault(rec["hash_id"], {k: v for k, v in rec.items() if k != "predictions"})
    summary = {
        "release": index.version, "split": split, "per_op": per_op, "seed": seed,
        "questions": len(sample.questions), "lines": len(lines),
        "counts": {op: sample.counts[op] for op in OP_NAMES.values()},
        "per_snapshot": {s: {op: c[op] for op in OP_NAMES.values()}
                         for s, c in sorted(sample.per_snapshot.items())},
        "drawn": [{"hash_id": rec["hash_id"], "triple": t["triple"], "prompt_type": kind,
                   "tkgu_operations": t["tkgu_operations"]}
                  for rec, t, kind in sample.questions],
    }
    texts = {
        TASKS: json.dumps(tasks, indent=1, ensure_ascii=False) + "\n",
        CONFIG: LABEL_CONFIG,
        LINES: "".join(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
                       for rec in lines.values()),
        SAMPLE: json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
    }
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sample

