"""The EMERGE instance format: one JSONL line per passage, as the authors' released files.

Pure (standard library only): the release stage writes through it, and the scorer and the
validation suites read with it, without Spark or Delta. Where ours differs from the
authors' files, it is on purpose and documented (docs/data-model.md):

- ``*_date`` fields are date-only (``"2019-01-09"``) but ``revision_date``, a full ISO 8601
  UTC instant (``"2019-01-04T22:43:24Z"``), as theirs;
- every ``*_timestamp`` is true UTC Unix seconds. Theirs are the UTC wall clock read as
  Europe/Paris local time (their pipeline parses naive strings on a machine in that zone):
  −3,600 s in winter, −7,200 s in summer, so their ``delta_timestamps`` are Paris midnight.
  :func:`authors_timestamp_to_utc` undoes that for a reader of their files;
- an ``llm_assessment`` element of an answer that did not parse has ``llm_assessment:
  null`` (theirs is always a bool); a reader that tests it for truth, as their code does,
  reads it as False, as their code reads a missing verdict;
- our extra keys (``passage_id``, ``window``, ``paragraph_offset`` per line;
  ``deprecation_signal`` and ``asserted_operations`` per triple) come after theirs.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from emerge_lib.core.errors import EmergeError  # standard library only, as this module

#: Catalog op code → the authors' release name.
OP_NAMES: dict[str, str] = {
    "X": "x-triples",
    "E": "e-triples",
    "EE": "ee-triples",
    "EE-KG": "ee-kg-triples",
    "D": "d-triples",
}
#: The order of ``tkgu_operations`` in a two-operation triple, as the authors write them:
#: ``["d-triples", "e-triples"]``, ``["d-triples", "ee-triples"]``,
#: ``["ee-kg-triples", "d-triples"]`` (their S06B adds D before E/EE, and after EE-KG).
OP_ORDER: tuple[str, ...] = ("EE-KG", "D", "X", "E", "EE")
TITLE_PREFIX = "Excerpt from the Wikipedia page describing {title}: "
PREFIX_HEAD = TITLE_PREFIX.split("{title}")[0]
JSON_SEPARATORS = (",", ":")

#: The authors' top-level fields, in their order; every line has them all.
RELEASE_FIELDS = (
    "hash_id",
    "passage",
    "mentions",
    "revision_id",
    "revision_date",
    "revision_timestamp",
    "anchor_title",
    "anchor_page_id",
    "anchor_page_qid",
    "paragraph_idx",
    "delta_dates",
    "delta_timestamps",
    "tkgu_triples",
    "predictions",
)
MENTION_FIELDS = ("mention_text", "target_entity", "start_char", "end_char", "qid")
#: The authors' per-triple fields; ``source_delta_type`` is absent on x-only triples.
TRIPLE_FIELDS = (
    "triple",
    "triple_labels",
    "tkgu_operations",
    "emerging_head",
    "emerging_tail",
    "head_creation_date",
    "head_creation_timestamp",
    "tail_creation_date",
    "tail_creation_timestamp",
    "triple_lifespan_date",
    "triple_lifespan_timestamp",
    "llm_assessment",
    "human_assessment",
    "source_delta_type",
    "qualifier_info",
)
QUALIFIER_FIELDS = ("qualifier_qid", "qualifier_label", "qualifier_date", "qualifier_timestamp")
#: ``llm_assessment`` elements (written by curation): keyed by (llm_name, llm_prompt_type),
#: never by position. In the authors' files ``llm_prompt`` holds the model's explanation.
LLM_ASSESSMENT_FIELDS = ("llm_name", "llm_assessment", "llm_prompt_type", "llm_prompt")
#: ``human_assessment`` elements: ``human_readable_triple`` is Python ``str()`` of a list of
#: ``"{name} ({ID})"``; ``definition_relation`` the property's English description.
HUMAN_ASSESSMENT_FIELDS = ("annotator_name", "prompt_type", "assessment",
                           "human_readable_triple", "definition_relation")
PROMPT_TYPES = ("triple_assertion", "triple_deprecation")
ASSERTION, DEPRECATION = PROMPT_TYPES
SOURCE_DELTA_TYPES = ("wikipedia_intersection", "emerging", "all")


class FormatError(EmergeError, ValueError):
    """A row that cannot become a release line (bad offsets, an unknown op); still a
    ValueError for callers that catch one."""


# --- values ------------------------------------------------------------------------------
def _utc(ts: datetime | str) -> datetime:
    if isinstance(ts, str):
        text = ts.strip()
        ts = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def iso_instant(ts: datetime | None) -> str | None:
    """``2019-01-04T22:43:24Z`` (second precision, UTC)."""
    return None if ts is None else _utc(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def instant(value: str) -> datetime:
    """A date (``2024-01-01``, midnight UTC) or an ISO 8601 instant, as an aware datetime;
    ValueError naming the value otherwise."""
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise ValueError(f"not a date or ISO 8601 instant: {value!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def iso_date(ts: datetime | str | None) -> str | None:
    """``2019-01-04``: the UTC date of an instant."""
    return None if ts is None else _utc(ts).strftime("%Y-%m-%d")


def seconds(ts: datetime | None) -> int | None:
    return None if ts is None else int(_utc(ts).timestamp())


def window_end(snapshot: datetime | str, window: int, window_days: float) -> datetime:
    """τ_k: the end of window ``window`` of ``snapshot``."""
    return _utc(snapshot) + timedelta(days=window_days * window)


def authors_timestamp_to_utc(value: int) -> int:
    """An ``*_timestamp`` of the authors' files as true UTC Unix seconds.

    Their pipeline turned UTC wall-clock strings into seconds as Europe/Paris local time,
    so a value is early by Paris's offset at that wall-clock time (3,600 s in winter,
    7,200 s in summer): read the value as a Paris local time and take its wall clock as
    UTC. ``authors_timestamp_to_utc(1546297200)`` (their 2019-01-01) is 1546300800.
    """
    from zoneinfo import ZoneInfo

    local = datetime.fromtimestamp(value, ZoneInfo("Europe/Paris"))
    return int(local.replace(tzinfo=UTC).timestamp())


def hash_id(snapshot: datetime | str, window: int, page_id: int, passage_id: str) -> str:
    """Stable line id: the same (snapshot, window, page, paragraph) always hashes the same."""
    key = f"{iso_instant(_utc(snapshot))}|{int(window)}|{int(page_id)}|{passage_id}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def link_target(title: str | None) -> str | None:
    """A mention's ``target_entity`` from the link target as stored in ``passages``: spaces
    become underscores (``Republic of Ireland`` → ``Republic_of_Ireland``). Nothing else
    changes here: the stored target is already the target as written, not
    redirect-resolved, normalized upstream by ``text.titles.normalize_title``
    (underscores read as spaces, first letter upper-cased: ``[[northam_University]]`` is
    stored as ``Northam University``)."""
    if title is None:
        return None
    return title.replace(" ", "_")


def dumps_line(record: Mapping[str, Any]) -> str:
    """One JSONL line: fixed separators, UTF-8 text, key order as built (fixed in code)."""
    return json.dumps(record, ensure_ascii=False, separators=JSON_SEPARATORS, allow_nan=False)


# --- records -----------------------------------------------------------------------------
def _mentions(passage_row: Mapping[str, Any], offset: int, passage: str) -> list[dict[str, Any]]:
    text = passage_row["text"]
    out: list[dict[str, Any]] = []
    for m in passage_row.get("mentions") or ():
        if m.get("qid") is None:
            continue  # unresolved links are not mentions of an entity
        start, end = m["start"], m["end"]
        if start is None or end is None or not 0 <= start <= end <= len(text):
            raise FormatError(
                f"passage {passage_row.get('passage_id')}: mention {m} lies outside its "
                f"text of {len(text)} characters"
            )
        out.append({
            "mention_text": passage[offset + start : offset + end],
            "target_entity": link_target(m.get("target")),
            "start_char": offset + start,
            "end_char": offset + end,
            "qid": m["qid"],
        })
    return out


def llm_assessment_entry(llm_name: str, prompt_type: str, verdict: str,
                         explanation: str | None) -> dict[str, Any]:
    """One ``llm_assessment`` element in the authors' shape; an unparsed answer is null
    (issue 14; theirs are always bool, and their code counts a missing verdict False)."""
    return {"llm_name": llm_name,
            "llm_assessment": None if verdict not in ("YES", "NO") else verdict == "YES",
            "llm_prompt_type": prompt_type, "llm_prompt": explanation or ""}


def _qualifier_info(row: Mapping[str, Any]) -> dict[str, Any]:
    """``{}`` without a qualifier (never null: the authors' preloader crashes on null)."""
    if row.get("qualifier_pid") is None:
        return {}
    return {
        "qualifier_qid": row["qualifier_pid"],
        "qualifier_label": row.get("qualifier_label"),
        "qualifier_date": iso_date(row.get("qualifier_at")),
        "qualifier_timestamp": seconds(row.get("qualifier_at")),
    }


def triple_record(rows: Sequence[Mapping[str, Any]],
                  assessments: Sequence[Mapping[str, Any]] = (),
                  asserted: Sequence[str] | None = None) -> dict[str, Any]:
    """One ``tkgu_triples`` entry from the instance rows of one (s, p, o) (one per op);
    ``assessments``: its ``llm_assessment`` elements; ``asserted``: the op codes its judges
    all said YES to (None: not curated, or a verdict is missing or unparsed)."""
    for r in rows:
        if r["op"] not in OP_NAMES:
            raise FormatError(f"unknown op {r['op']!r} for ({r['s']}, {r['p']}, {r['o']})")
    rows = sorted(rows, key=lambda r: OP_ORDER.index(r["op"]))
    first = rows[0]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    # a D's end qualifier is what makes it D (and picks its judges): it wins over the start
    # qualifier of the same triple's addition (``["ee-kg-triples", "d-triples"]`` with a
    # P580 and a P582 reports the P582, as the authors' released files do)
    qualified = next((r for r in rows if r["op"] == "D" and r.get("qualifier_pid") is not None),
                     None) or next((r for r in rows if r.get("qualifier_pid") is not None), first)
    signal = next((r.get("signal") for r in rows if r["op"] == "D"), None)
    source = next((r.get("source_delta_type") for r in rows if r.get("source_delta_type")), None)
    out: dict[str, Any] = {
        "triple": [first["s"], first["p"], first["o"]],
        "triple_labels": [first.get("s_label"), first.get("p_label"), first.get("o_label")],
        "tkgu_operations": [OP_NAMES[op] for op in ops],
        "emerging_head": bool(first.get("emerging_head")),
        "emerging_tail": bool(first.get("emerging_tail")),
        "head_creation_date": iso_date(first.get("head_created_at")),
        "head_creation_timestamp": seconds(first.get("head_created_at")),
        "tail_creation_date": iso_date(first.get("tail_created_at")),
        "tail_creation_timestamp": seconds(first.get("tail_created_at")),
        "triple_lifespan_date": [iso_date(first.get("lifespan_from")),
                                 iso_date(first.get("lifespan_to"))],
        "triple_lifespan_timestamp": [seconds(first.get("lifespan_from")),
                                      seconds(first.get("lifespan_to"))],
        "llm_assessment": [dict(a) for a in assessments],
        "human_assessment": [],
    }
    if ops != ["X"]:  # absent on x-triples, as in the authors' files
        out["source_delta_type"] = source or "all"
    out["qualifier_info"] = _qualifier_info(qualified)
    # ours, beyond the authors' format
    out["deprecation_signal"] = signal
    out["asserted_operations"] = (None if asserted is None
                                  else [OP_NAMES[op] for op in OP_ORDER if op in asserted])
    return out


def passage_record(
    passage_row: Mapping[str, Any],
    instance_rows: Sequence[Mapping[str, Any]],
    snapshot: datetime | str,
    window: int,
    window_days: float,
    title_prefix: bool = True,
    curation: Mapping[tuple[str, str, str], tuple[Sequence[Mapping[str, Any]],
                                                  Sequence[str] | None]] | None = None,
) -> dict[str, Any]:
    """One release line: a passage with its instances grouped by (s, p, o).

    ``curation``: per (s, p, o), its ``llm_assessment`` elements and asserted op codes.

    Pure (no I/O), so the format is testable field by field. With ``title_prefix`` the
    passage starts with the authors' "Excerpt from the Wikipedia page describing {title}: "
    and the article's own item is a mention at the title's offsets; mention offsets are
    shifted by the prefix so ``passage[start_char:end_char] == mention_text`` always.
    """
    title = passage_row["page_title"]
    text = passage_row["text"]
    prefix = TITLE_PREFIX.format(title=title) if title_prefix else ""
    passage = prefix + text
    mentions = _mentions(passage_row, len(prefix), passage)
    page_qid = passage_row.get("page_qid")
    if title_prefix and page_qid is not None:
        start = len(PREFIX_HEAD)
        mentions.append({
            "mention_text": title,
            "target_entity": link_target(title),
            "start_char": start,
            "end_char": start + len(title),
            "qid": page_qid,
        })
    mentions.sort(key=lambda m: (m["start_char"], m["end_char"], m["qid"], m["target_entity"] or ""))

    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in instance_rows:
        groups[(r["s"], r["p"], r["o"])].append(r)
    curation = curation or {}
    triples = [triple_record(groups[key], *curation.get(key, ((), None)))
               for key in sorted(groups)]

    t, end = _utc(snapshot), window_end(snapshot, window, window_days)
    rev_ts = passage_row.get("rev_timestamp")
    return {
        "hash_id": hash_id(t, window, passage_row["page_id"], passage_row["passage_id"]),
        "passage": passage,
        "mentions": mentions,
        "revision_id": passage_row.get("rev_id"),
        "revision_date": iso_instant(rev_ts),
        "revision_timestamp": seconds(rev_ts),
        "anchor_title": title,
        "anchor_page_id": passage_row["page_id"],
        "anchor_page_qid": page_qid,
        "paragraph_idx": passage_row.get("paragraph_idx"),
        "delta_dates": [iso_date(t), iso_date(end)],
        "delta_timestamps": [seconds(t), seconds(end)],
        "tkgu_triples": triples,
        "predictions": {},
        # ours, beyond the authors' format
        "passage_id": passage_row["passage_id"],
        "window": int(window),
        "paragraph_offset": len(prefix),
    }


# --- human assessment ----------------------------------------------------------------------
def prompt_type_of(op_name: str) -> str:
    """The prompt that judges a release operation: deprecation for ``d-triples``, assertion
    for the four additions (the authors' ``load_annotated_instances``)."""
    return DEPRECATION if op_name == OP_NAMES["D"] else ASSERTION


def prompt_types_of(op_names: Sequence[str]) -> list[str]:
    """The prompts a triple is asked under, assertion first: a ``["d-triples",
    "e-triples"]`` triple is asked twice (the authors' s09b)."""
    kinds = {prompt_type_of(name) for name in op_names}
    return [k for k in PROMPT_TYPES if k in kinds]


def human_readable_triple(record: Mapping[str, Any], triple: Mapping[str, Any]) -> str:
    """``human_readable_triple`` of a ``human_assessment`` entry, as the authors' s09b shows
    a triple to an annotator: Python ``str()`` of ``[head, relation, tail]``, an end being
    the passage's mention texts of its item joined by ``" / "`` (every mention, in
    passage order) or, without a mention, its label; each followed by its id in
    parentheses (``"['David Lloyd Jones, Lord Lloyd-Jones (Q5236715)', 'position held
    (P39)', …]"``). Their agreement code pairs two annotators' verdicts by this string."""
    texts: dict[str, list[str]] = {}
    for m in record.get("mentions") or ():
        texts.setdefault(m.get("qid"), []).append(m.get("mention_text"))
    (s, p, o), labels = triple["triple"], triple.get("triple_labels") or [None] * 3

    def end(qid: str, label: Any) -> str:
        shown = " / ".join(str(t) for t in texts[qid]) if qid in texts else label
        return f"{shown} ({qid})"

    return str([end(s, labels[0]), f"{labels[1]} ({p})", end(o, labels[2])])
