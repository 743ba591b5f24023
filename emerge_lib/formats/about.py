"""What a release says about itself, written once for the card (README.md) and
``croissant.json``: its name, licence, citation, and the statements a dataset card and
Croissant's responsible-AI fields ask for (collection, annotation, biases, limitations,
personal information, uses, maintenance). Figures come from the manifest's settings, so
what the texts state is what the build ran with. Pure: the standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

NAME = "EMERGE"
PRETTY_NAME = "EMERGE: text-driven knowledge-graph updating from Wikipedia and Wikidata"
LICENSE = "cc-by-sa-4.0"  # the Hub's licence id
LICENSE_URL = "https://creativecommons.org/licenses/by-sa/4.0/"
PAPER_URL = "https://arxiv.org/abs/2507.03617"
AUTHORS_CODE_URL = "https://github.com/klimzaporojets/emerge"
#: the paper's BibTeX, as the authors give it (their README's "Citation")
CITATION = """@article{zaporojets2025emerge,
  title={EMERGE: A Benchmark for Updating Knowledge Graphs with Emerging Textual Knowledge},
  author={Zaporojets, Klim and Daza, Daniel and Barba, Edoardo and Assent, Ira and Navigli, Roberto and Groth, Paul},
  journal={arXiv preprint arXiv:2507.03617},
  year={2025}
}"""
SUMMARY = (
    "EMERGE pairs Wikipedia passages with the edits they induce in a Wikidata knowledge-graph "
    "snapshot: for a snapshot date t and weekly windows after it, each line is a passage that "
    "appeared in the window with its triples and their text-driven KG updating (TKGU) "
    "operations: X (already in the KG), E (a new triple between known entities), EE (a "
    "new triple with an emerging entity), EE-KG (an emerging entity linked to the KG) and "
    "D (a triple the KG deprecates).")
LICENCE_TEXT = ("Passages come from English Wikipedia (CC BY-SA 4.0), triples and labels from "
                "Wikidata (CC0). The release is distributed under CC BY-SA 4.0.")
TASK_CATEGORIES = ["text-generation", "graph-ml"]  # no KG-updating task id exists on the Hub
TAGS = ["knowledge-graph", "temporal-knowledge-graph", "knowledge-graph-updating",
        "relation-extraction", "wikidata", "wikipedia"]


def _setting(settings: Mapping[str, Any], path: str, default: Any = None) -> Any:
    node: Any = settings
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def dump_dates(dumps: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """wiki → its dump dates, from the manifest's ``dumps``."""
    out: dict[str, set[str]] = {}
    for d in dumps:
        out.setdefault(str(d.get("wiki")), set()).add(str(d.get("dump_date")))
    return {wiki: sorted(dates) for wiki, dates in sorted(out.items())}


def collection(settings: Mapping[str, Any], dumps: Sequence[Mapping[str, Any]]) -> str:
    """How the data was collected: the dumps and the snapshot rules."""
    dates = dump_dates(dumps)
    read = "; ".join(f"{wiki} dumps of {', '.join(ds)}" for wiki, ds in dates.items()) or \
        "no dump recorded in the manifest"
    windows = _setting(settings, "snapshots.windows")
    days = _setting(settings, "snapshots.window_days")
    return (
        f"Built by emerge from Wikimedia revision-history dumps ({read}; every file with its "
        "sha1 in manifest.json). A KG snapshot G_t holds the Wikidata statements present at "
        f"t and stable for {_setting(settings, 'stability.kg_hours', '?')} hours (entities, "
        f"relation types, triples); each of the {windows} windows of {days} days after t "
        "(cumulative: (t, t + k·days]) gives the Wikidata changes of that window and the "
        "Wikipedia paragraphs that appeared in it and survived "
        f"{_setting(settings, 'stability.passage_minutes', '?')} minutes; a paragraph is "
        "aligned to a change when its links name both ends of the triple.")


def preprocessing(settings: Mapping[str, Any]) -> list[str]:
    return [
        "Wikitext is reduced to plain paragraphs (templates, references, tables and markup "
        "removed; links kept as mentions with character offsets into the passage).",
        f"Passages of {_setting(settings, 'passages.min_tokens', '?')} to "
        f"{_setting(settings, 'passages.max_tokens', '?')} tokens naming at least "
        f"{_setting(settings, 'passages.min_entities', '?')} entities are kept.",
        "Near-duplicate passages of one delta file are removed (kept lines pairwise token "
        f"Jaccard ≤ {_setting(settings, 'selection.max_jaccard', '?')} and normalized edit "
        f"distance ≥ {_setting(settings, 'selection.min_edit_distance', '?')}).",
        "The evaluation set is a seeded, stratified draw of up to "
        f"{_setting(settings, 'selection.evaluation_per_delta', '?')} lines per delta file "
        f"(seed {_setting(settings, 'selection.seed', '?')}).",
    ]


def annotation(settings: Mapping[str, Any]) -> str:
    curated = bool(_setting(settings, "curation.enabled"))
    text = ("Triples and their TKGU operations are annotated automatically by distant "
            "supervision: the Wikidata changes of the window whose ends the passage mentions.")
    if curated:
        text += (" Every triple was then judged by LLMs with the paper's prompts (Appendix B: "
                 "triple_assertion for additions, triple_deprecation for D); each verdict is "
                 "an element of `llm_assessment`, and `asserted_operations` lists the "
                 "operations every required judge said YES to. An answer that did not parse "
                 "is recorded with `llm_assessment: null`, never guessed.")
        if _setting(settings, "curation.final_judge"):
            text += (" A final judge then answered the same prompts for every operation of "
                     "every kept line (the authors' s05 v9, their 405B with prompt_v1): "
                     "where it judged, `asserted_operations` lists the operations it said "
                     "YES to (D by its deprecation verdict, the others by its assertion "
                     "verdict), and that is the gold.")
    else:
        text += " This build was not curated by LLMs: `llm_assessment` is empty."
    text += (" `human_assessment` holds human verdicts where annotations were imported "
             "(human_annotation/).")
    return text


BIASES = [
    "English Wikipedia only: topics, regions and people it covers well (and its editors' "
    "own biases) are over-represented, others under-represented.",
    "Frequently edited articles contribute more passages than rarely edited ones.",
    "Only relations whose two ends are linked in the passage are aligned: facts stated "
    "without links are missed, and Wikidata's coverage of a domain bounds what is found.",
]
LIMITATIONS = [
    "Distant supervision: a passage may not state a triple aligned to it; "
    "`llm_assessment` and `asserted_operations` say what the judges found supported, and "
    "the judges err too.",
    "Every `*_timestamp` is true UTC; the authors' released files read UTC wall-clock "
    "strings as Europe/Paris time (docs/data-model.md).",
    "Windows are cumulative: a passage appears in every window of its snapshot from the "
    "one it appeared in, with a different `hash_id` in each.",
]
PERSONAL = [
    "Names of and facts about people, including living people, as published in Wikipedia "
    "and Wikidata under their policies on biographies of living persons; nothing else "
    "personal is collected.",
]
USES = [
    "Evaluating models that update a KG snapshot from text: given a passage and G_t, "
    "predict its triples under the X, E, EE, EE-KG and D operations "
    "(`emerge evaluate` scores them as the paper does).",
    "Studying how knowledge in Wikipedia and Wikidata evolves over time.",
]
OUT_OF_SCOPE = [
    "Treating the aligned triples as verified facts about the world: they are Wikidata's "
    "statements, aligned automatically.",
    "Profiling the people the passages mention.",
]
MAINTENANCE = ("Extended quarterly with new snapshots (the emerge_dumps and emerge_snapshot "
               "Airflow DAGs); each release's version is the hash of its data files "
               "(manifest.json), and `emerge diff --old OLD --new NEW` lists the lines a "
               "new release adds, removes or changes.")


# --- what a release says about its validation (validation/results.json) -----------------
#: a check's status, from its result: passed, failed (blocks the release), warning (failed,
#: said, blocks nothing: what a quiet history may lack), could not run (the gate broke)
STATUSES = ("failed", "could not run", "warning", "passed")


def check_status(check: Mapping[str, Any]) -> str:
    """One of :data:`STATUSES` for a check's result (``success``, ``raised``, ``severity``)."""
    if check.get("raised"):
        return "could not run"
    if check.get("success"):
        return "passed"
    return "warning" if check.get("severity") == "warning" else "failed"


def _row(snapshot: str, part: str, suite: str, check: Mapping[str, Any]) -> dict[str, Any]:
    return {"snapshot": snapshot, "part": part, "suite": suite,
            "check": str(check.get("check")), "status": check_status(check),
            "unexpected": check.get("unexpected_count"), "observed": check.get("observed")}


def suite_rows(suites: Mapping[str, Any], snapshot: str, part: str) -> list[dict[str, Any]]:
    """The checks of a gate report's ``suites`` (``{suite: {"success", "checks"}}``) as
    rows (see :func:`check_rows`)."""
    return [_row(snapshot, part, suite, check)
            for suite, body in sorted(suites.items()) for check in body.get("checks") or []]


def check_rows(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every check of a release's ``validation/results.json`` as a row: snapshot (empty for
    the human annotation), part (``tables``: the snapshot's table suites; ``release
    files``: the JSONL written; ``human annotation``), suite, check, status, unexpected
    (rows that broke it), observed; in the file's order."""
    rows: list[dict[str, Any]] = []
    for snap, parts in sorted((results.get("snapshots") or {}).items()):
        rows += [_row(snap, "tables", str(check.get("suite")), check)
                 for check in (parts.get("tables") or {}).get("checks") or []]
        rows += suite_rows((parts.get("release") or {}).get("suites") or {}, snap,
                           "release files")
    rows += suite_rows((results.get("human_annotation") or {}).get("suites") or {}, "",
                       "human annotation")
    return rows
