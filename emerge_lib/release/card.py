"""The dataset card of a release: README.md and card.html with statistics and plots.

Computed from the release files themselves (the JSONL lines and the KG Parquet), so the
card says what a downloader gets: per snapshot, the paper's Table 2 (entities, relation
types and triples annotated in the passages, passages; the KG snapshot's entities,
relation types and triples), the operations, the evaluation set, and three plots
(operations per snapshot, instances per window, passage lengths). Pure: no engine.
"""

from __future__ import annotations

import html
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.release.format import CORPUS, EVALUATION_SET, OP_NAMES, snapshot_dir_name

CARD = "README.md"
CARD_HTML = "card.html"
PLOTS = "plots"
OP_ORDER = ("X", "E", "EE", "EE-KG", "D")
NAME_TO_OP = {v: k for k, v in OP_NAMES.items()}
TABLE2 = ("Snapshot", "Entities", "Rel. Types", "Triples", "Supported Triples", "Passages",
          "KG Entities", "KG Rel. Types", "KG Triples")
#: the authors' corpus statistics judge (their scripts/stats/compute_405bv1_dataset_stats.py:39)
RULE_C_ASSESSOR = "Meta-Llama-3.1-405B_prompt_v1"


def rule_c(triple: dict[str, Any], assessor: str | None = None) -> bool | None:
    """Is a released triple LLM-supported, counted as the authors count their corpus
    ("rule C", compute_405bv1_dataset_stats.py:50-69): the deprecation verdict when D is
    among its operations, else the assertion verdict; a missing verdict is False. Our
    lines name the supported operations (``asserted_operations``, the configured judges);
    on files without them (the authors'), ``assessor``'s verdicts decide (default
    ``Meta-Llama-3.1-405B_prompt_v1``, else its unsuffixed name, which is how their
    released files name the same judge). None: the line was never curated."""
    ops = triple["tkgu_operations"]
    if assessor is None and "asserted_operations" in triple:
        asserted = triple["asserted_operations"]
        if asserted is None:
            return None if not triple.get("llm_assessment") else False
        return ("d-triples" in asserted) if "d-triples" in ops else ops[0] in asserted
    prompt = "triple_deprecation" if "d-triples" in ops else "triple_assertion"
    names = [assessor] if assessor else [RULE_C_ASSESSOR,
                                         RULE_C_ASSESSOR.removesuffix("_prompt_v1")]
    entries = triple.get("llm_assessment") or []
    for name in names:
        for e in entries:
            if e.get("llm_name") == name and e.get("llm_prompt_type") == prompt:
                return e.get("llm_assessment") is True
    return False if entries else None


@dataclass
class SnapshotStats:
    snapshot: str
    entities: set[str] = field(default_factory=set)
    relations: set[str] = field(default_factory=set)
    triples: set[tuple[str, str, str]] = field(default_factory=set)
    passages: set[str] = field(default_factory=set)
    kg: dict[str, int] = field(default_factory=dict)  # kg_triples / entities / relations rows
    ops: Counter[str] = field(default_factory=Counter)  # op → instances (triples × ops)
    per_window: dict[int, int] = field(default_factory=dict)  # window → instances
    evaluation: Counter[str] = field(default_factory=Counter)  # op → evaluation instances
    lengths: list[int] = field(default_factory=list)  # tokens per passage (distinct)
    supported: set[tuple[str, str, str]] = field(default_factory=set)  # rule C, in some line
    supported_ops: Counter[str] = field(default_factory=Counter)  # primary op → rule C triples
    uncurated: int = 0  # triples of lines never curated

    @property
    def curated(self) -> bool:
        return not self.uncurated

    def row(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "entities": len(self.entities),
                "relation_types": len(self.relations), "triples": len(self.triples),
                "passages": len(self.passages), "kg_entities": self.kg.get("entities", 0),
                "kg_relation_types": self.kg.get("relations", 0),
                "kg_triples": self.kg.get("kg_triples", 0),
                "instances": dict(sorted(self.ops.items())),
                "evaluation_instances": dict(sorted(self.evaluation.items())),
                "supported_triples": len(self.supported) if self.curated else None,
                "supported_instances": dict(sorted(self.supported_ops.items()))
                if self.curated else None}


def label(snapshot: str) -> str:
    """``2024-04-01 (2024.Q2)``: the date and, at a quarter start, the paper's name."""
    day = snapshot[:10]
    month = int(day[5:7])
    quarter = f" ({day[:4]}.Q{(month - 1) // 3 + 1})" if day[8:10] == "01" and month % 3 == 1 \
        else ""
    return day + quarter


def _count(value: int) -> str:
    return f"{value:,}"


def _lines(path: Path):
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def collect(out: Path, snapshots: Sequence[str], kg_rows: dict[str, dict[str, int]],
            assessor: str | None = None) -> list[SnapshotStats]:
    """Statistics of each snapshot, read from its release files (``corpus/``, or a folder
    of ``snapshot_*/`` as the authors' corpus download has it)."""
    stats = []
    corpus = out / CORPUS if (out / CORPUS).is_dir() else out
    for snap in snapshots:
        st = SnapshotStats(snap, kg=kg_rows.get(snap, {}))
        folder = snapshot_dir_name(snap)
        for path in sorted((corpus / folder).glob("delta_*.jsonl")):
            for rec in _lines(path):
                window = int(rec.get("window") or 0)
                if rec["passage_id"] not in st.passages:
                    st.lengths.append(len(rec["passage"].split()))
                st.passages.add(rec["passage_id"])
                for tr in rec["tkgu_triples"]:
                    s, p, o = tr["triple"]
                    st.entities.update((s, o))
                    st.relations.add(p)
                    st.triples.add((s, p, o))
                    ops = [NAME_TO_OP[n] for n in tr["tkgu_operations"]]
                    st.ops.update(ops)
                    st.per_window[window] = st.per_window.get(window, 0) + len(ops)
                    verdict = rule_c(tr, assessor)
                    if verdict is None:
                        st.uncurated += 1
                    elif verdict:
                        st.supported.add((s, p, o))
                        st.supported_ops[ops[0]] += 1
        for path in sorted((out / EVALUATION_SET / folder).glob("delta_*.jsonl")):
            for rec in _lines(path):
                for tr in rec["tkgu_triples"]:
                    st.evaluation.update(NAME_TO_OP[n] for n in tr["tkgu_operations"])
        stats.append(st)
    return stats


def _plots(stats: Sequence[SnapshotStats], folder: Path) -> list[str]:
    """Three PNG plots; returns their names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    folder.mkdir(parents=True, exist_ok=True)
    names = []
    labels = [label(s.snapshot) for s in stats]
    meta = {"Software": None}  # no version string: the same data gives the same bytes

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / name, dpi=100, metadata=meta)
        plt.close(fig)
        names.append(name)

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(OP_ORDER)
    for i, op in enumerate(OP_ORDER):
        ax.bar([x + i * width for x in range(len(stats))], [s.ops.get(op, 0) for s in stats],
               width, label=OP_NAMES[op])
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(stats))], labels, fontsize=8)
    ax.set_ylabel("instances")
    ax.set_title("TKGU operations per snapshot")
    ax.legend(fontsize=8)
    save(fig, "operations.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    for st, name in zip(stats, labels, strict=True):
        windows = sorted(st.per_window)
        ax.plot(windows, [st.per_window[w] for w in windows], marker="o", label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("delta (window k)")
    ax.set_ylabel("instances")
    ax.set_title("Instances per weekly delta (cumulative)")
    if stats:
        ax.legend(fontsize=8)
    save(fig, "instances_per_window.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    lengths = [n for st in stats for n in st.lengths]
    ax.hist(lengths or [0], bins=30, color="#4c72b0")
    ax.set_xlabel("tokens per passage")
    ax.set_ylabel("passages")
    ax.set_title("Passage length distribution")
    save(fig, "passage_lengths.png")
    return names


def table2_rows(stats: Sequence[SnapshotStats]) -> list[list[str]]:
    return [[label(s.snapshot), _count(len(s.entities)), _count(len(s.relations)),
             _count(len(s.triples)),
             _count(len(s.supported)) if s.curated else "uncurated", _count(len(s.passages)),
             _count(s.kg.get("entities", 0)), _count(s.kg.get("relations", 0)),
             _count(s.kg.get("kg_triples", 0))] for s in stats]


def table2_text(rows: Sequence[dict[str, Any]]) -> str:
    """The card's table as fixed-width text (for a terminal), from ``SnapshotStats.row``."""
    def cell(r: dict[str, Any], k: str) -> str:
        return "uncurated" if r.get(k, 0) is None else _count(r.get(k, 0))

    cells = [list(TABLE2)] + [[label(r["snapshot"]), *(cell(r, k) for k in (
        "entities", "relation_types", "triples", "supported_triples", "passages",
        "kg_entities", "kg_relation_types", "kg_triples"))] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(TABLE2))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                     for row in cells)


def _markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def write_card(out: Path, snapshots: Sequence[str], kg_rows: dict[str, dict[str, int]],
               validation: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Write README.md, card.html and the plots; returns (files written, table rows)."""
    stats = collect(out, snapshots, kg_rows)
    plots = _plots(stats, out / PLOTS)
    t2 = table2_rows(stats)
    ops_head = ["Snapshot", *(OP_NAMES[o] for o in OP_ORDER), "evaluation set"]
    ops_rows = [[label(s.snapshot), *(_count(s.ops.get(o, 0)) + (
        f" ({_count(s.supported_ops.get(o, 0))})" if s.curated else "") for o in OP_ORDER),
                 _count(sum(s.evaluation.values()))] for s in stats]
    curated = all(s.curated for s in stats)
    intro = ("EMERGE: text-driven knowledge-graph updating (TKGU) instances built from "
             "Wikipedia and Wikidata revision histories. Each line of "
             "`corpus/snapshot_YYYY-MM-DD/delta_YYYY-MM-DD.jsonl` is a passage new in that "
             "weekly delta with its triples and TKGU operations (X, E, EE, EE-KG, D); "
             "`evaluation_set/` is the seeded, stratified test split; each snapshot's KG "
             "is in `kg_snapshots/`: T_t as the authors' TSV (`kg_snapshot_YYYY-MM-DD.tsv.gz`) "
             "and T_t, V_t, R_t in Parquet (`snapshot_YYYY-MM-DD/`). `manifest.json` lists "
             "every file with its sha256.")
    md = "\n\n".join([
        "# EMERGE release", intro,
        "## Statistics\n\nThe layout of the paper's Table 2: the entities, relation types "
        "and triples annotated in the passages, the triples an LLM judge supports (counted "
        "as the authors count theirs: the deprecation verdict for a triple with D, else the "
        "assertion verdict), the passages, and the KG snapshot."
        + ("" if curated else " **This release is uncurated**: no LLM judged its triples, "
           "so its lines passed the structural selection only (`emerge curate` judges them "
           "and leaves out the lines without a supported delta triple)."),
        _markdown_table(list(TABLE2), t2),
        "## Operations\n\nInstances (a triple under one operation) per snapshot"
        + (", and in brackets the LLM-supported triples, each counted once under its first "
           "operation." if curated else "."),
        _markdown_table(ops_head, ops_rows),
        *(f"![{p.removesuffix('.png')}]({PLOTS}/{p})" for p in plots),
        f"## Validation\n\n{validation}",
        "## Licence\n\nPassages come from English Wikipedia (CC BY-SA 4.0), triples from "
        "Wikidata (CC0). The release is distributed under CC BY-SA 4.0.",
    ]) + "\n"
    (out / CARD).write_text(md, encoding="utf-8")
    images = "".join(f'<figure><img src="{PLOTS}/{p}" alt="{p}"></figure>' for p in plots)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>EMERGE release</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #999;padding:4px 8px}}
td{{text-align:right}}img{{max-width:100%}}</style></head>
<body><h1>EMERGE release</h1><p>{html.escape(intro)}</p>
<h2>Statistics</h2>{"" if curated else '<p id="uncurated">This release is uncurated: no LLM judged its triples.</p>'}<div id="table2">{_html_table(TABLE2, t2)}</div>
<h2>Operations</h2>{_html_table(ops_head, ops_rows)}{images}
<h2>Validation</h2><p id="validation">{html.escape(validation)}</p></body></html>
"""
    (out / CARD_HTML).write_text(page, encoding="utf-8")
    files = [CARD, CARD_HTML, *(f"{PLOTS}/{p}" for p in plots)]
    return files, [s.row() for s in stats]


def card_rows_of(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return list(manifest.get("card", []))


def group_by_snapshot(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in rows:
        out[r["snapshot"]] = r
    return dict(out)
