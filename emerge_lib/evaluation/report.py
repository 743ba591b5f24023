"""What ``emerge evaluate`` writes into its output folder:

- ``summary.json``: the rows ``{model, operation, snapshot, metric, value, n_gold}``;
- ``completeness.md`` / ``.csv``, ``recall.md`` / ``.csv``: the paper's Tables 3 and 4
  (rows: operations × models; columns: snapshots, then "all"), values in percent with one
  decimal as the paper prints them; the CSV has the same cells with ``n_gold`` columns;
  ``qid_precision``, ``qid_recall``, ``qid_f1`` (``n_instances`` columns) and
  ``pred_completeness`` (``n_pred`` columns) likewise: the authors' further columns;
  rows that are zero by construction (``metrics.zero_by_construction``: a model none of
  whose predictions can count for the operation under the metric) are left out of the
  tables and the plot, and named under the Markdown table (summary.json keeps them);
- ``scores.png``: one panel per metric and operation, a line per model over snapshots;
- ``instances.jsonl``: per (model, instance, operation) scores;
- ``run.json``: what was read and how it was scored.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emerge_lib.core.ops import OP_LABELS, op_label
from emerge_lib.evaluation.data import OP_TITLES, OPS
from emerge_lib.evaluation.metrics import COUNTS, READS, InstanceScore


def op_heading(op: str) -> str:
    """An operation as a table or plot heads it: ``"EE-Triples (Mint+Add)"``."""
    return f"{OP_TITLES[op]} ({OP_LABELS[op]})"


TABLE_TITLES = {
    "completeness": "Completeness (the paper's Table 3)",
    "recall": "Recall on QID triples (the paper's Table 4)",
    "qid_precision": "QID precision (the authors' cie_exact_match: per instance, averaged)",
    "qid_recall": "QID recall (the authors' cie_exact_match: per instance, averaged)",
    "qid_f1": "QID F1 (the authors' cie_exact_match: per instance, averaged)",
    "pred_completeness": "Prediction-side completeness (the authors' max_scores_pred: "
                         "predicted triples matched by an asserted gold triple)",
}


def _snapshots(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted({r["snapshot"] for r in rows if r["snapshot"] != "all"}) + ["all"]


Hidden = Collection[tuple[str, str, str]]


def table(rows: Sequence[Mapping[str, Any]], metric: str, hide: Hidden = ()
          ) -> tuple[list[str], list[list[str]], list[list[Any]]]:
    """(header, Markdown cells, CSV cells) of one metric's table, without the
    (model, operation, metric) rows in ``hide``."""
    rows = [r for r in rows if r["metric"] == metric
            and (r["model"], r["operation"], metric) not in hide]
    snaps = _snapshots(rows)
    models = sorted({r["model"] for r in rows})
    cell = {(r["model"], r["operation"], r["snapshot"]): r for r in rows}
    header = ["TKGU Operations", "Model", *snaps]
    md_rows: list[list[str]] = []
    csv_rows: list[list[Any]] = []
    for op in OPS:
        first = True
        for model in models:
            if not any((model, op, s) in cell for s in snaps):
                continue
            vals = [cell.get((model, op, s)) for s in snaps]
            md_rows.append([op_heading(op) if first else "", model,
                            *("–" if v is None else _percent(v) for v in vals)])
            csv_rows.append([OP_TITLES[op], model,
                             *("" if v is None else round(100 * v["value"], 1) for v in vals),
                             *("" if v is None else v[COUNTS[metric]] for v in vals)])
            first = False
    return header, md_rows, csv_rows


def _percent(row: Mapping[str, Any]) -> str:
    """A value in %, with its 95 % bootstrap interval when there is one."""
    text = f"{100 * row['value']:.1f}"
    if "ci_low" in row:
        text += f" [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"
    return text


def markdown(rows: Sequence[Mapping[str, Any]], metric: str, hide: Hidden = ()) -> str:
    header, cells, _ = table(rows, metric, hide)
    lines = [f"### {TABLE_TITLES[metric]}", "", "| " + " | ".join(header) + " |",
             "|" + "|".join(["---", "---"] + ["---:"] * (len(header) - 2)) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in cells]
    if not cells:
        lines.append("| (no gold triples) | | |")
    if any("ci_low" in r for r in rows if r["metric"] == metric):
        lines += ["", "In brackets: the 95 % bootstrap interval (instances resampled within "
                  "each snapshot × delta; run.json: resamples and seed)."]
    left_out: dict[str, list[str]] = {}
    for r in rows:
        if r["metric"] == metric and (r["model"], r["operation"], metric) in hide:
            ops = left_out.setdefault(r["model"], [])
            if r["operation"] not in ops:
                ops.append(r["operation"])
    if left_out:
        what = "QID triples" if READS[metric] == "qid" else "labelled triples"
        lines += ["", "Not shown, zero by construction (no predicted " + what + " for the "
                  "operation): " + "; ".join(f"{m}: {', '.join(op_label(o) for o in ops)}"
                                             for m, ops in sorted(left_out.items())) + "."]
    return "\n".join(lines) + "\n"


def write_csv(rows: Sequence[Mapping[str, Any]], metric: str, path: Path,
              hide: Hidden = ()) -> None:
    header, _, cells = table(rows, metric, hide)
    snaps = header[2:]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([*header, *(f"{COUNTS[metric]} {s}" for s in snaps)])
        w.writerows(cells)


def plot(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], path: Path,
         hide: Hidden = ()) -> bool:
    """One panel per (metric, operation), a line per model across snapshots."""
    rows = [r for r in rows if (r["model"], r["operation"], r["metric"]) not in hide]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(m, op) for m in metrics for op in OPS
              if any(r["metric"] == m and r["operation"] == op for r in rows)]
    if not panels:
        return False
    snaps = [s for s in _snapshots(rows) if s != "all"]
    cols = min(5, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.8 * nrows), squeeze=False,
                             sharey=True)
    for ax, (m, op) in zip(axes.flat, panels, strict=False):
        for model in sorted({r["model"] for r in rows}):
            pts = {r["snapshot"]: 100 * r["value"] for r in rows
                   if r["metric"] == m and r["operation"] == op and r["model"] == model
                   and r["snapshot"] != "all"}
            if pts:
                xs = [i for i, s in enumerate(snaps) if s in pts]
                ax.plot(xs, [pts[snaps[i]] for i in xs], marker="o", label=model)
        ax.set_title(f"{op_heading(op)} — {m}", fontsize=9)
        ax.set_xticks(range(len(snaps)), snaps)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("%")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    # the panels' titles also as the PNG's description (read without OCR, by tests too)
    fig.savefig(path, dpi=110, metadata={"Description": "; ".join(
        ax.get_title() for ax in list(axes.flat)[:len(panels)])})
    plt.close(fig)
    return True


def write_outputs(out: str | Path, rows: Sequence[Mapping[str, Any]],
                  scores: Iterable[InstanceScore], metrics: Sequence[str],
                  run: Mapping[str, Any], png: bool = True, hide: Hidden = ()) -> list[Path]:
    """Write every output file into ``out``; returns the paths written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    p = folder / "summary.json"
    p.write_text(json.dumps(list(rows), indent=1) + "\n", encoding="utf-8")
    written.append(p)
    for m in metrics:
        md = folder / f"{m}.md"
        md.write_text(markdown(rows, m, hide), encoding="utf-8")
        c = folder / f"{m}.csv"
        write_csv(rows, m, c, hide)
        written += [md, c]
    p = folder / "instances.jsonl"
    with p.open("w", encoding="utf-8") as fh:
        for s in scores:
            fh.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
    written.append(p)
    if png and plot(rows, metrics, folder / "scores.png", hide):
        written.append(folder / "scores.png")
    p = folder / "run.json"
    p.write_text(json.dumps(dict(run), indent=1, default=str) + "\n", encoding="utf-8")
    written.append(p)
    return written
