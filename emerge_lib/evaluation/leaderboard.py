"""Runs of ``emerge evaluate`` ranked side by side: per metric and operation, and overall
(the micro-average over every operation's gold triples), as Markdown, CSV and a static
HTML page with its plot.

Runs are comparable only when they scored the same gold the same way: every run must
carry the same gold fingerprint (``gold_digest`` in its run.json: the instances scored,
after ``--after``), gold filter, threshold and assessors; a run that differs is refused
in one line naming it and the field. A cell's interval is shown where the run's
summary.json carries one (``ci_low``/``ci_high``)."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import OPS
from emerge_lib.evaluation.report import op_heading

#: what two runs must share to be ranked together
SAME = ("gold_digest", "gold_filter", "threshold", "assessors", "annotator")
OVERALL = "overall"


@dataclass(frozen=True)
class Entry:
    """One model of one run in one (metric, operation) column."""

    run: str
    model: str
    metric: str
    operation: str
    value: float
    n_gold: int
    low: float | None = None
    high: float | None = None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: not found (give the --out folder of `emerge evaluate`)"
                         ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not readable JSON ({exc})") from None


def read_run(folder: str | Path) -> tuple[dict[str, object], list[Mapping[str, object]]]:
    """A run folder's run.json and summary.json rows."""
    root = Path(folder)
    run = _read_json(root / "run.json")
    rows = _read_json(root / "summary.json")
    if not isinstance(run, dict) or not isinstance(rows, list) or \
            not all(isinstance(r, dict) for r in rows):
        raise InputError(f"{root}: run.json or summary.json is not what emerge evaluate "
                         "writes")
    if "gold_digest" not in run:
        raise InputError(f"{root}: run.json has no gold_digest (scored by an older emerge): "
                         "score it again to rank it")
    return run, rows


def check_comparable(runs: Mapping[str, Mapping[str, object]], *,
                     together: str = "ranked together") -> None:
    """Every run scored the same gold the same way, else one line naming the first
    difference (``together``: what they cannot be, ``emerge evaluate --compare`` says
    "compared")."""
    names = list(runs)
    first = runs[names[0]]
    for name in names[1:]:
        for key in SAME:
            if runs[name].get(key) != first.get(key):
                raise InputError(
                    f"{name} and {names[0]} cannot be {together}: their {key} differs "
                    f"({runs[name].get(key)!r} vs {first.get(key)!r}); score every run on "
                    "the same release with the same settings")


def entries(name: str, rows: Sequence[Mapping[str, object]]) -> list[Entry]:
    """The run's cells over all snapshots, plus the overall value per metric: pooled over
    what each cell averages (its ``n_instances`` or ``n_pred`` where it has one, else its
    ``n_gold``), so it is the metric over every operation's units at once."""
    out: list[Entry] = []
    pooled: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        value = _number(r.get("value"))
        if r.get("snapshot") != "all" or value is None:
            continue
        n = int(_number(r.get("n_gold")) or 0)
        out.append(Entry(name, str(r.get("model")), str(r.get("metric")),
                         str(r.get("operation")), value, n, _number(r.get("ci_low")),
                         _number(r.get("ci_high"))))
        # what the value averages over: gold triples, or (the authors' further columns)
        # instances or predicted triples
        weight = _number(r.get("n_instances", r.get("n_pred", n))) or 0.0
        acc = pooled.setdefault((str(r.get("model")), str(r.get("metric"))), [0.0, 0.0, 0])
        acc[0] += value * weight
        acc[1] += weight
        acc[2] += n
    for (model, metric), (matched, weight, gold) in sorted(pooled.items()):
        if weight:
            out.append(Entry(name, model, metric, OVERALL, matched / weight, int(gold)))
    return out


def rank(all_entries: Sequence[Entry]) -> dict[tuple[str, str], list[Entry]]:
    """(metric, operation) → its entries, best first (ties: more gold, then by name)."""
    table: dict[tuple[str, str], list[Entry]] = {}
    for e in all_entries:
        table.setdefault((e.metric, e.operation), []).append(e)
    order = {op: i for i, op in enumerate((*OPS, OVERALL))}
    return {k: sorted(v, key=lambda e: (-e.value, -e.n_gold, e.run, e.model))
            for k, v in sorted(table.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99)))}


def _title(op: str) -> str:
    return "Overall" if op == OVERALL else op_heading(op) if op in OPS else op


def _cell(e: Entry) -> str:
    ci = f" [{100 * e.low:.1f}, {100 * e.high:.1f}]" if e.low is not None and \
        e.high is not None else ""
    return f"{100 * e.value:.1f}{ci}"


def markdown(ranked: Mapping[tuple[str, str], list[Entry]]) -> str:
    parts = []
    for (metric, op), ranked_entries in ranked.items():
        parts.append(f"### {metric}: {_title(op)}\n\n| rank | run | model | {metric} (%) | "
                     "gold triples |\n|---:|---|---|---:|---:|")
        parts += [f"| {i} | {e.run} | {e.model} | {_cell(e)} | {e.n_gold} |"
                  for i, e in enumerate(ranked_entries, 1)]
        parts.append("")
    return "\n".join(parts)


def write_csv(ranked: Mapping[tuple[str, str], list[Entry]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "operation", "rank", "run", "model", "value", "ci_low",
                    "ci_high", "n_gold"])
        for (metric, op), ranked_entries in ranked.items():
            for i, e in enumerate(ranked_entries, 1):
                w.writerow([metric, op, i, e.run, e.model, f"{e.value:.6f}",
                            "" if e.low is None else f"{e.low:.6f}",
                            "" if e.high is None else f"{e.high:.6f}", e.n_gold])


def _plot_png(ranked: Mapping[tuple[str, str], list[Entry]]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(ranked)
    # a row per metric's six columns at most (six metrics in one row were 36 panels wide)
    cols = min(len(OPS) + 1, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 3.2 * rows), squeeze=False,
                             sharey=True)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    for ax, key in zip(axes.flat, panels, strict=False):
        ranked_entries = ranked[key]
        labels = [f"{e.run}/{e.model}" for e in ranked_entries]
        values = [100 * e.value for e in ranked_entries]
        errs = [[100 * (e.value - e.low) if e.low is not None else 0 for e in ranked_entries],
                [100 * (e.high - e.value) if e.high is not None else 0 for e in ranked_entries]]
        ax.bar(range(len(values)), values, yerr=errs, capsize=3)
        ax.set_xticks(range(len(values)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{_title(key[1])} — {key[0]}", fontsize=9)
        ax.set_ylim(0, 100)
    for row in axes:
        row[0].set_ylabel("%")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def html_page(ranked: Mapping[tuple[str, str], list[Entry]],
              runs: Mapping[str, Mapping[str, object]]) -> str:
    """One self-contained page: the plot inline and a table per column (works offline)."""
    first = next(iter(runs.values()))
    png = base64.b64encode(_plot_png(ranked)).decode()
    tables = []
    for (metric, op), ranked_entries in ranked.items():
        body = "".join(
            f"<tr><td>{i}</td><td>{html.escape(e.run)}</td><td>{html.escape(e.model)}</td>"
            f"<td>{html.escape(_cell(e))}</td><td>{e.n_gold}</td></tr>"
            for i, e in enumerate(ranked_entries, 1))
        tables.append(f"<h2>{html.escape(metric)}: {html.escape(_title(op))}</h2><table>"
                      "<tr><th>rank</th><th>run</th><th>model</th><th>%</th>"
                      f"<th>gold triples</th></tr>{body}</table>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>EMERGE leaderboard"
            "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:.2em .6em}</style></head><body>"
            "<h1>EMERGE leaderboard</h1>"
            f"<p>{len(runs)} runs on gold {html.escape(str(first.get('gold_digest')))} "
            f"(gold filter {html.escape(str(first.get('gold_filter')))}, threshold "
            f"{html.escape(str(first.get('threshold')))})</p>"
            f"<img alt='scores' src='data:image/png;base64,{png}'>{''.join(tables)}"
            "</body></html>\n")


def leaderboard(folders: Sequence[str | Path], out: str | Path) -> dict[tuple[str, str],
                                                                        list[Entry]]:
    """Rank the runs of ``folders`` into ``out`` (leaderboard.md, .csv, index.html)."""
    if not folders:
        raise InputError("leaderboard: give at least one run folder")
    runs: dict[str, Mapping[str, object]] = {}
    found: list[Entry] = []
    for folder in folders:
        name = Path(folder).name or str(folder)
        if name in runs:
            name = str(folder)
        run, rows = read_run(folder)
        runs[name] = run
        found += entries(name, rows)
    check_comparable(runs)
    ranked = rank(found)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "leaderboard.md").write_text(markdown(ranked), encoding="utf-8")
    write_csv(ranked, target / "leaderboard.csv")
    (target / "index.html").write_text(html_page(ranked, runs), encoding="utf-8")
    return ranked
