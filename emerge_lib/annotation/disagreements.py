"""``emerge annotate disagreements``: the questions where the raters differ, for the
annotators' adjudication step (the authors' s09d), as tasks that import back as a third,
resolving annotator.

An item is paired as in the agreement table (``agreement.items``): one operation of a
triple, judged by both annotators under its prompt type; it is a disagreement when the two
annotators differ (``--between humans``), when an annotator and the assessor differ
(``llm``), or either (``both``, the default). Unlike s09d, which overwrites the reviewer's
own verdict and keeps no trace, the resolution is a verdict of its own (``--annotator
adjudicator`` at import): the table of H1 and H2 stays what they said.

Written into the output folder: ``disagreements.jsonl`` (one row per question: line,
triple, prompt type, operations, each rater's verdict), ``disagreements.md`` (the same,
readable, with the passages), ``tasks.json`` and ``labeling_config.xml`` (Label Studio
tasks of those questions, showing the earlier verdicts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from emerge_lib.annotation.labelstudio import LABEL_CONFIG, task
from emerge_lib.annotation.release import NOT_FOUND, AnnotationError
from emerge_lib.formats.format import prompt_type_of

BETWEEN = ("both", "humans", "llm")


def _word(v: bool | None) -> str:
    return "–" if v is None else ("YES" if v else "NO")


def find(lines: Mapping[str, Mapping[str, Any]], annotators: Sequence[str],
         assessors: Mapping[str, str], between: str = "both") -> list[dict[str, Any]]:
    """The disagreeing questions, in line and triple order (one row per question, with the
    operations it stands for)."""
    if between not in BETWEEN:
        raise AnnotationError(f"--between must be one of {', '.join(BETWEEN)}")
    h1, h2 = annotators
    rows: dict[tuple, dict[str, Any]] = {}
    for hid in sorted(lines):
        rec = lines[hid]
        for t in rec["tkgu_triples"]:
            for op in t.get("tkgu_operations") or ():
                kind = prompt_type_of(op)
                human = {e["annotator_name"]: e["assessment"] for e in t.get("human_assessment")
                         or () if e.get("prompt_type") == kind}
                if h1 not in human or h2 not in human:
                    continue
                llm = next((a.get("llm_assessment") for a in t.get("llm_assessment") or ()
                            if a.get("llm_name") == assessors[kind]
                            and a.get("llm_prompt_type") == kind), None)
                llm = llm if isinstance(llm, bool) else None
                humans_differ = human[h1] != human[h2]
                llm_differs = llm is not None and (human[h1] != llm or human[h2] != llm)
                if not {"humans": humans_differ, "llm": llm_differs,
                        "both": humans_differ or llm_differs}[between]:
                    continue
                key = (hid, tuple(t["triple"]), kind)
                row = rows.setdefault(key, {
                    "hash_id": hid, "triple": list(t["triple"]), "prompt_type": kind,
                    "operations": [], "human_readable_triple": next(
                        (e.get("human_readable_triple") for e in t["human_assessment"]), None),
                    "definition_relation": next(
                        (e.get("definition_relation") for e in t["human_assessment"]),
                        NOT_FOUND),
                    "verdicts": {h1: human[h1], h2: human[h2], assessors[kind]: llm},
                    "others": {n: v for n, v in human.items() if n not in (h1, h2)}})
                row["operations"].append(op)
    return list(rows.values())


def write(lines: Mapping[str, Mapping[str, Any]], rows: Sequence[dict[str, Any]],
          out: str | Path, release: str) -> list[Path]:
    """disagreements.jsonl, disagreements.md, tasks.json, labeling_config.xml into ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tasks, md = [], [f"# Disagreements ({len(rows)} questions)", ""]
    for i, r in enumerate(rows, 1):
        rec = lines[r["hash_id"]]
        triple = next(t for t in rec["tkgu_triples"] if t["triple"] == r["triple"])
        shown = ", ".join(f"{n}: {_word(v)}" for n, v in r["verdicts"].items())
        tasks.append(task(rec, triple, r["prompt_type"], r["definition_relation"], release,
                          extra={"earlier_verdicts": shown,
                                 "question": f"{shown}. " + task(rec, triple, r["prompt_type"],
                                                                 "", release)["data"]["question"]}))
        md += [f"## {i}. {r['human_readable_triple']} ({', '.join(r['operations'])}, "
               f"{r['prompt_type']})", "", f"Line `{r['hash_id']}`: {shown}"
               + ("; resolved: " + ", ".join(f"{n}: {_word(v)}" for n, v in r["others"].items())
                  if r["others"] else ""), "",
               f"Relation: {r['definition_relation']}", "", f"> {rec.get('passage', '')}", ""]
    texts = {"disagreements.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
             "disagreements.md": "\n".join(md) + "\n",
             "tasks.json": json.dumps(tasks, indent=1, ensure_ascii=False) + "\n",
             "labeling_config.xml": LABEL_CONFIG}
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / n for n in texts]
