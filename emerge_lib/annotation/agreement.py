"""The paper's agreement table, computed as the authors' s09e computes it.

Pairing (their ``load_annotated_instances`` and ``return_paper_stats``): an *item* is
(operation, ``hash_id``, ``human_readable_triple``); an operation is judged by one prompt
type (``d-triples`` by the deprecation prompt, the four additions by the assertion prompt),
so a ``["d-triples", "e-triples"]`` triple is two items. An item's ratings are the two
annotators' ``assessment`` for that prompt type and the assessor's ``llm_assessment`` (the
LLM named for that prompt type, by its exact ``llm_name``). Items without both annotators'
verdicts, or without the assessor's (absent, or null: an unparsed answer), are left out
(listwise deletion, no imputation). Overall is the same statistics over the items of every
operation together (a two-operation triple counts once per operation).

Statistics, from maintained libraries (as the authors'): Cohen's κ of each pair of raters
(``sklearn.metrics.cohen_kappa_score``, unweighted); Fleiss' κ over the three raters
(``statsmodels.stats.inter_rater.fleiss_kappa`` on the items × {NO, YES} counts of
``aggregate_raters``); Krippendorff's α, nominal, over the three
(``krippendorff.alpha``, raters × items). Verdicts are 1 (YES) and 0 (NO).

Where we differ, on purpose: a cell whose ratings are all equal (no variation) has no
defined κ or α: the libraries give NaN with a warning (κ) or raise (α: "There has to be
more than one value in the domain", which stops the authors' script); here the value is
null with a note saying why. Annotators other than the two named are ignored (the
authors' filter compares the set of *all* annotators of an item with the two named, so an
item a third, resolving annotator also judged drops out of their table; with two
annotators the tables are the same).

LLM-vs-LLM (not in the paper): Cohen's κ between every two assessors present, per
operation and overall, over every triple of the annotation lines that both judged.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.annotation.release import AnnotationError
from emerge_lib.formats.format import ASSERTION, DEPRECATION, OP_NAMES, prompt_type_of

OPERATIONS = tuple(OP_NAMES.values())  # x-triples … d-triples, the paper's row order
OVERALL = "overall"
METRICS = ("cohen_h1_h2", "cohen_h1_llm", "cohen_h2_llm", "fleiss", "krippendorff_alpha")
LLM_PAIR = "cohen_llm_llm"
#: the paper's table (s09e): row labels and column headers
ROW_LABELS = {"x-triples": "X", "e-triples": "E", "ee-triples": "EE",
              "ee-kg-triples": "EE-KG", "d-triples": "D", OVERALL: "Overall"}
HEADERS = ("TKGU Operation", "H-H Cohen's κ", "H1-LLM Cohen's κ", "H2-LLM Cohen's κ",
           "H+LLM Fleiss' κ", "H+LLM Kripp. α")
TEX_HEADERS = (r"\shortstack{TKGU \\ Operation}", r"\shortstack{H-H \\ Cohen's $\kappa$}",
               r"\shortstack{H1-LLM \\ Cohen's $\kappa$}",
               r"\shortstack{H2-LLM \\ Cohen's $\kappa$}",
               r"\shortstack{H+LLM \\ Fleiss' $\kappa$}",
               r"\shortstack{H+LLM \\ Kripp. $\alpha$}")


@dataclass
class Table:
    """What ``agreement`` computed: rows ``{operation, metric, value, n, raters, note?}``."""

    annotators: tuple[str, str]
    assessors: dict[str, str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    items: dict[str, int] = field(default_factory=dict)  # operation → items in the table
    dropped: dict[str, int] = field(default_factory=dict)  # why → items left out

    def value(self, operation: str, metric: str) -> float | None:
        return next(r["value"] for r in self.rows
                    if r["operation"] == operation and r["metric"] == metric)

    def to_json(self) -> dict[str, Any]:
        return {"annotators": list(self.annotators), "assessors": self.assessors,
                "items": self.items, "left_out": self.dropped, "rows": self.rows}


def _rating(value: Any) -> int | None:
    return int(value) if isinstance(value, bool) else None


def items(lines: Mapping[str, Mapping[str, Any]], annotators: Sequence[str],
          assessors: Mapping[str, str]) -> tuple[dict[str, list[tuple[int, int, int]]],
                                                  dict[str, int]]:
    """operation → the ratings (H1, H2, LLM) of its items, in line and triple order; and
    the number of items left out, by reason."""
    h1, h2 = annotators
    out: dict[str, list[tuple[int, int, int]]] = {op: [] for op in OPERATIONS}
    dropped = {"one annotator only": 0, "no assessor verdict": 0}
    for hid in sorted(lines):
        for t in lines[hid]["tkgu_triples"]:
            for op in t.get("tkgu_operations") or ():
                if op not in out:
                    raise AnnotationError(f"line {hid}: unknown operation {op!r}")
                kind = prompt_type_of(op)
                llm = next((_rating(a.get("llm_assessment")) for a in t.get("llm_assessment") or ()
                            if a.get("llm_name") == assessors[kind]
                            and a.get("llm_prompt_type") == kind), None)
                by_item: dict[str, dict[str, int]] = {}
                for e in t.get("human_assessment") or ():
                    if e.get("prompt_type") == kind and e.get("annotator_name") in annotators:
                        by_item.setdefault(e.get("human_readable_triple"), {}).setdefault(
                            e["annotator_name"], int(bool(e["assessment"])))
                for verdicts in by_item.values():
                    if set(verdicts) != {h1, h2}:
                        dropped["one annotator only"] += 1
                    elif llm is None:
                        dropped["no assessor verdict"] += 1
                    else:
                        out[op].append((verdicts[h1], verdicts[h2], llm))
    return out, dropped


def _quiet(fn: Callable[[], float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined κ warns and is NaN: a note says so
        return float(fn())


def _cell(ratings: Sequence[Sequence[int]], metric: str) -> tuple[float | None, str | None]:
    """One statistic over items × raters ratings, or (None, why it is undefined)."""
    import numpy as np

    if not ratings:
        return None, "no item"
    data = np.array(ratings, dtype=int)
    if metric == "fleiss" or metric == "krippendorff_alpha":
        if len(np.unique(data)) == 1:
            return None, _all_equal(len(data), int(data[0, 0]))
        if metric == "fleiss":
            from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

            value = _quiet(lambda: fleiss_kappa(aggregate_raters(data, n_cat=2)[0],
                                                method="fleiss"))
        else:
            import krippendorff

            value = _quiet(lambda: krippendorff.alpha(reliability_data=data.T,
                                                      level_of_measurement="nominal"))
    else:
        from sklearn.metrics import cohen_kappa_score

        a, b = data[:, 0], data[:, 1]
        value = _quiet(lambda: cohen_kappa_score(a, b))
        if math.isnan(value):
            return None, _all_equal(len(data), int(a[0])) if len(np.unique(data)) == 1 else \
                "κ undefined (both raters gave a single, different verdict)"
    if math.isnan(value):
        return None, "undefined (no variation)"
    return value, None


def _all_equal(n: int, verdict: int) -> str:
    return (f"every rating of the {n} items is {'YES' if verdict else 'NO'}: undefined "
            "(no variation; the libraries give NaN or refuse)")


PAIRS = {"cohen_h1_h2": (0, 1), "cohen_h1_llm": (0, 2), "cohen_h2_llm": (1, 2)}


def _row(operation: str, metric: str, ratings: Sequence[Sequence[int]],
         raters: Sequence[str]) -> dict[str, Any]:
    if metric in PAIRS:
        i, j = PAIRS[metric]
        ratings = [(r[i], r[j]) for r in ratings]
        raters = [raters[i], raters[j]]
    value, note = _cell(ratings, metric)
    row = {"operation": operation, "metric": metric, "value": value, "n": len(ratings),
           "raters": list(raters)}
    if note:
        row["note"] = note
    return row


def agreement(lines: Mapping[str, Mapping[str, Any]], annotators: Sequence[str],
              assessors: Mapping[str, str]) -> Table:
    """The paper's table (:data:`METRICS` per operation and overall) and LLM-vs-LLM κ."""
    if len(annotators) != 2 or annotators[0] == annotators[1]:
        raise AnnotationError(f"--annotators: two different names, not {list(annotators)}")
    by_op, dropped = items(lines, annotators, assessors)
    table = Table((annotators[0], annotators[1]), dict(assessors), dropped=dropped)
    for op in (*OPERATIONS, OVERALL):
        ratings = [r for o in OPERATIONS for r in by_op[o]] if op == OVERALL else by_op[op]
        table.items[op] = len(ratings)
        raters = [annotators[0], annotators[1],
                  assessors[ASSERTION] if op != "d-triples" else assessors[DEPRECATION]]
        if op == OVERALL and assessors[ASSERTION] != assessors[DEPRECATION]:
            raters[2] = f"{assessors[ASSERTION]} / {assessors[DEPRECATION]}"
        table.rows += [_row(op, m, ratings, raters) for m in METRICS]
    table.rows += llm_pairs(lines)
    return table


def llm_verdicts(lines: Mapping[str, Mapping[str, Any]]
                 ) -> dict[str, dict[tuple[str, str, tuple], int]]:
    """assessor → (operation, hash_id, triple) → its verdict (1/0) for that operation's
    prompt type; unparsed (null) verdicts are left out."""
    out: dict[str, dict[tuple[str, str, tuple], int]] = {}
    for hid in sorted(lines):
        for t in lines[hid]["tkgu_triples"]:
            for op in t.get("tkgu_operations") or ():
                for a in t.get("llm_assessment") or ():
                    value = _rating(a.get("llm_assessment"))
                    if a.get("llm_prompt_type") == prompt_type_of(op) and value is not None:
                        out.setdefault(str(a.get("llm_name")), {}).setdefault(
                            (op, hid, tuple(t["triple"])), value)
    return out


def llm_pairs(lines: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Cohen's κ between every two assessors present, per operation and overall, over the
    triples both judged (annotated or not)."""
    verdicts = llm_verdicts(lines)
    rows = []
    for a, b in itertools.combinations(sorted(verdicts), 2):
        shared = sorted(set(verdicts[a]) & set(verdicts[b]), key=lambda k: (k[1], k[2], k[0]))
        if not shared:
            continue
        for op in (*OPERATIONS, OVERALL):
            keys = [k for k in shared if op in (OVERALL, k[0])]
            rows.append(_row(op, LLM_PAIR, [(verdicts[a][k], verdicts[b][k]) for k in keys],
                             [a, b]) | {"metric": LLM_PAIR})
    return rows


def names_present(lines: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(annotator names, assessor names) found in the lines."""
    humans, llms = set(), set()
    for rec in lines.values():
        for t in rec["tkgu_triples"]:
            humans |= {str(e.get("annotator_name")) for e in t.get("human_assessment") or ()}
            llms |= {str(a.get("llm_name")) for a in t.get("llm_assessment") or ()}
    return sorted(humans), sorted(llms)


def check_names(lines: Mapping[str, Mapping[str, Any]], annotators: Sequence[str],
                assessors: Mapping[str, str], where: str) -> None:
    """Refuse names the annotation does not hold (a table of nothing says nothing)."""
    humans, llms = names_present(lines)
    for name in annotators:
        if name not in humans:
            raise AnnotationError(f"{where}: no verdict by annotator {name!r}; the annotation "
                                  f"has {humans or 'none'} (choose with --annotators H1,H2)")
    for kind, name in assessors.items():
        if name not in llms:
            raise AnnotationError(f"{where}: no {kind} verdict by assessor {name!r}; the "
                                  f"lines have {llms or 'no LLM assessment'} (choose with "
                                  "--assessor, or --assertion-assessor/--deprecation-assessor)")


def default_annotators(lines: Mapping[str, Mapping[str, Any]], where: str) -> tuple[str, str]:
    """annotator_1 and annotator_2 (the authors' names) when both are there; else the two
    annotators when there are exactly two; else refused."""
    humans, _ = names_present(lines)
    if {"annotator_1", "annotator_2"} <= set(humans):
        return ("annotator_1", "annotator_2")
    if len(humans) == 2:
        return (humans[0], humans[1])
    raise AnnotationError(f"{where}: annotators {humans or 'none'}: name the two to compare "
                          "with --annotators H1,H2")


# --- rendering -----------------------------------------------------------------------------


def round3(value: float | None) -> str:
    """Three decimals as the authors print them (pandas' round, then ``:.3f``); a dash
    for an undefined value."""
    if value is None:
        return "–"
    import numpy as np

    return f"{float(np.round(value, 3)):.3f}"


def _grid(table: Table) -> list[tuple[str, list[str], int]]:
    return [(op, [round3(table.value(op, m)) for m in METRICS], table.items[op])
            for op in (*OPERATIONS, OVERALL)]


def _notes(table: Table) -> list[str]:
    return [f"{ROW_LABELS[r['operation']]}, {r['metric']}: {r['note']}" for r in table.rows
            if r.get("note") and r["metric"] in METRICS]


def markdown(table: Table) -> str:
    """The paper's table (rows X … D, Overall; n = items) and the LLM-vs-LLM κ."""
    h1, h2 = table.annotators
    a, d = table.assessors[ASSERTION], table.assessors[DEPRECATION]
    llm = a if a == d else f"{a} (assertion), {d} (deprecation)"
    out = [f"H1 = {h1}, H2 = {h2}, LLM = {llm}.", "",
           "| " + " | ".join((*HEADERS, "n")) + " |", "|" + "---|" * (len(HEADERS) + 1)]
    out += [f"| {ROW_LABELS[op]} | " + " | ".join(cells) + f" | {n} |"
            for op, cells, n in _grid(table)]
    notes = _notes(table)
    if notes:
        out += ["", "Undefined cells (–):", *(f"- {n}" for n in notes)]
    pairs = [r for r in table.rows if r["metric"] == LLM_PAIR]
    if pairs:
        out += ["", "LLM-vs-LLM Cohen's κ (every triple both judged):", "",
                "| LLM A | LLM B | " + " | ".join(ROW_LABELS[o] for o in (*OPERATIONS, OVERALL))
                + " | n |", "|---|---|" + "---|" * (len(OPERATIONS) + 2)]
        for (x, y), group in itertools.groupby(pairs, key=lambda r: tuple(r["raters"])):
            group = list(group)
            out.append(f"| {x} | {y} | " + " | ".join(round3(r["value"]) for r in group)
                       + f" | {group[-1]['n']} |")
    return "\n".join(out) + "\n"


def latex(table: Table) -> str:
    """The table as the authors' s09e prints it (``tabular`` with booktabs rules)."""
    rows = [f"{ROW_LABELS[op]} & " + " & ".join(cells) + r" \\"
            for op, cells, _ in _grid(table)]
    return "\n".join([r"\begin{tabular}{lccccc}", r"\toprule",
                      " & ".join(TEX_HEADERS) + r" \\", r"\midrule", *rows[:-1], r"\midrule",
                      rows[-1], r"\bottomrule", r"\end{tabular}"]) + "\n"


def write(table: Table, out: str | Path) -> list[Path]:
    """agreement.json, agreement.md and agreement.tex into ``out``: the same table gives
    the same bytes."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files = {"agreement.json": json.dumps(table.to_json(), indent=1, sort_keys=True,
                                          ensure_ascii=False, allow_nan=False) + "\n",
             "agreement.md": markdown(table), "agreement.tex": latex(table)}
    for name, text in files.items():
        tmp = folder / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(folder / name)
    return [folder / name for name in files]
