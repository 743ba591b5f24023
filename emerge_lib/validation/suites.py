"""What must hold before a snapshot is released, as Great Expectations suites.

Snapshot suites (``snapshot_suites``) run on the snapshot's rows of the released and
feeding tables, read at pinned Delta versions, and on a few checked views: frames joined
once with Spark and materialized (Sail does not cache), carrying the flags the rules read
(is s in V_t, is the triple in T_t, is this D also a window addition, does its passage
exist). Release suites (``release_suites``) run on the JSONL lines the release wrote,
flattened into lines, mentions and triples.

Every rule names the setting it follows: with ``deltas.emerging: created_after_snapshot``
(the released data) an E triple's ends were created before t, and may lie outside V_t (the
authors' ``all`` delta finds those); with ``not_in_snapshot`` both ends are in V_t.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emerge_lib.catalog.sql import sql_timestamp
from emerge_lib.core.config import (
    CurationSettings,
    DeltaSettings,
    PassageSettings,
    SelectionSettings,
    ValidationSettings,
)
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.format import OP_NAMES
from emerge_lib.validation.gate import Check, Severity, Suite, rows_check

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from emerge_lib.catalog import Catalog


@dataclass(frozen=True)
class SuiteSettings:
    """The settings sections a snapshot's suites read (the validate stage's)."""

    validation: ValidationSettings
    deltas: DeltaSettings
    passages: PassageSettings
    selection: SelectionSettings
    curation: CurationSettings


QID = r"^Q[1-9][0-9]*$"
PID = r"^P[1-9][0-9]*$"
OPS = tuple(OP_NAMES)
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
INSTANT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


def _regex(column: str, pattern: str, what: str) -> Check:
    return Check(f"{column} is {what}", "ExpectColumnValuesToMatchRegex",
                 {"column": column, "regex": pattern})


def _not_null(*columns: str) -> list[Check]:
    return [Check(f"{c} is never null", "ExpectColumnValuesToNotBeNull", {"column": c})
            for c in columns]


def _unique(*columns: str) -> Check:
    if len(columns) == 1:
        return Check(f"{columns[0]} is unique", "ExpectColumnValuesToBeUnique",
                     {"column": columns[0]})
    return Check(f"({', '.join(columns)}) is unique", "ExpectCompoundColumnsToBeUnique",
                 {"column_list": list(columns)})


def _rows_between(what: str, low: int | None, high: int | None,
                  severity: Severity = "critical") -> Check:
    return Check(what, "ExpectTableRowCountToBeBetween",
                 {"min_value": low, "max_value": high}, severity)


# --- the snapshot ------------------------------------------------------------------------


def _window_bounds(plan: SnapshotPlan, cumulative: bool) -> str:
    """SQL: the rows of ``{batch}`` whose rev_timestamp is outside their window's range."""
    cases = " ".join(
        f"WHEN window = {w.k} THEN rev_timestamp > "
        f"{sql_timestamp(plan.t if cumulative else w.start)} "
        f"AND rev_timestamp <= {sql_timestamp(w.end)}" for w in plan.windows)
    return f"SELECT * FROM {{batch}} WHERE NOT COALESCE(CASE {cases} END, false)"


def checked_instances(spark: SparkSession, frames: dict[str, DataFrame]) -> DataFrame:
    """instances with the flags the referential rules read: s/o in V_t, (s, p, o) in T_t,
    the same key added in the same window (a D that is also a window addition), and
    whether its passage exists."""
    return spark.sql("""
        SELECT i.*, vs.qid IS NOT NULL AS s_in_v, vo.qid IS NOT NULL AS o_in_v,
               k.s IS NOT NULL AS in_t, a.s IS NOT NULL AS window_addition,
               p.passage_id IS NOT NULL AS has_passage
        FROM {instances} i
        LEFT JOIN {entities} vs ON vs.qid = i.s
        LEFT JOIN {entities} vo ON vo.qid = i.o
        LEFT JOIN {kg} k ON k.s = i.s AND k.p = i.p AND k.o = i.o
        LEFT JOIN (SELECT DISTINCT window, s, p, o FROM {instances}
                   WHERE op IN ('E', 'EE', 'EE-KG')) a
          ON a.window = i.window AND a.s = i.s AND a.p = i.p AND a.o = i.o
        LEFT JOIN (SELECT DISTINCT window, passage_id FROM {passages}) p
          ON p.window = i.window AND p.passage_id = i.passage_id
    """, instances=frames["instances"], entities=frames["entities"],
        kg=frames["kg_triples"], passages=frames["passages"])


def checked_kg(spark: SparkSession, frames: dict[str, DataFrame]) -> DataFrame:
    return spark.sql("""
        SELECT k.*, vs.qid IS NOT NULL AS s_in_v, vo.qid IS NOT NULL AS o_in_v
        FROM {kg} k LEFT JOIN {entities} vs ON vs.qid = k.s
                    LEFT JOIN {entities} vo ON vo.qid = k.o
    """, kg=frames["kg_triples"], entities=frames["entities"])


def passage_mentions(frames: dict[str, DataFrame]) -> DataFrame:
    """One row per resolved mention, with its passage's text (offsets checked on it)."""
    from pyspark.sql import functions as F

    return (frames["passages"]
            .select("window", "passage_id", "text", F.explode("mentions").alias("m"))
            .select("window", "passage_id", "text", "m.start", "m.end", "m.anchor", "m.qid"))


def _instance_checks(cfg: SuiteSettings, plan: SnapshotPlan) -> list[Check]:
    t = sql_timestamp(plan.t)
    created_rule = cfg.deltas.emerging == "created_after_snapshot"
    if created_rule:
        emerging = [
            rows_check("emerging_head is set exactly when the head was created at or after t",
                       f"SELECT * FROM {{batch}} WHERE op <> 'X' AND emerging_head <> "
                       f"COALESCE(head_created_at >= {t}, false)"),
            rows_check("emerging_tail is set exactly when the tail was created at or after t",
                       f"SELECT * FROM {{batch}} WHERE op <> 'X' AND emerging_tail <> "
                       f"COALESCE(tail_created_at >= {t}, false)"),
        ]
        e_rule = rows_check("E triples: both ends created before t (neither emerging)",
                            "SELECT * FROM {batch} WHERE op = 'E' AND "
                            "(emerging_head OR emerging_tail)")
    else:
        emerging = [
            rows_check("emerging flags say exactly which ends are outside V_t",
                       "SELECT * FROM {batch} WHERE op <> 'X' AND "
                       "(emerging_head = s_in_v OR emerging_tail = o_in_v)"),
        ]
        e_rule = rows_check("E triples: both ends in V_t",
                            "SELECT * FROM {batch} WHERE op = 'E' AND NOT (s_in_v AND o_in_v)")
    d_rule = ("in_t OR window_addition" if cfg.deltas.deprecate_window_additions else "in_t")
    presence: Severity = "warning" if cfg.validation.empty == "warn" else "critical"
    return [
        _regex("s", QID, "an item id"), _regex("o", QID, "an item id"),
        _regex("p", PID, "a property id"),
        *_not_null("window", "passage_id", "op", "s", "p", "o"),
        Check("op is one of X, E, EE, EE-KG, D", "ExpectColumnValuesToBeInSet",
              {"column": "op", "value_set": list(OPS)}),
        _unique("window", "passage_id", "op", "s", "p", "o"),
        rows_check("every instance has its passage",
                   "SELECT * FROM {batch} WHERE NOT has_passage"),
        rows_check("X triples are in T_t", "SELECT * FROM {batch} WHERE op = 'X' AND NOT in_t"),
        e_rule,
        rows_check("EE triples have an emerging end",
                   "SELECT * FROM {batch} WHERE op = 'EE' AND NOT (emerging_head OR "
                   "emerging_tail)"),
        rows_check("EE-KG triples have exactly one emerging end",
                   "SELECT * FROM {batch} WHERE op = 'EE-KG' AND emerging_head = "
                   "emerging_tail"),
        rows_check("D triples are in T_t" + (" or deprecated window additions"
                                             if cfg.deltas.deprecate_window_additions else ""),
                   f"SELECT * FROM {{batch}} WHERE op = 'D' AND NOT ({d_rule})"),
        rows_check("D triples carry their signal (removed, rank, qualifier:P…)",
                   "SELECT * FROM {batch} WHERE op = 'D' AND NOT (signal IN ('removed', "
                   "'rank') OR signal RLIKE '^qualifier:P[1-9][0-9]*$')"),
        rows_check("an end qualifier lies inside its window",
                   "SELECT * FROM {batch} WHERE op = 'D' AND signal LIKE 'qualifier:%' AND "
                   f"NOT (qualifier_at > {t} AND qualifier_at <= "
                   f"{_window_end_case(plan, 'window')})"),
        *emerging,
        rows_check("a lifespan does not end before it starts",
                   "SELECT * FROM {batch} WHERE lifespan_to < lifespan_from"),
        Check(f"every required op is present ({', '.join(cfg.validation.required_ops)})",
              "ExpectColumnDistinctValuesToContainSet",
              {"column": "op", "value_set": list(cfg.validation.required_ops)},
              severity=presence),
        _rows_between(f"at least {cfg.validation.min_instances} instances",
                      cfg.validation.min_instances, None, severity=presence),
        *([_rows_between(f"at most {cfg.validation.max_instances} instances", None,
                         cfg.validation.max_instances)]
          if cfg.validation.max_instances is not None else []),
    ]


def _window_end_case(plan: SnapshotPlan, column: str) -> str:
    cases = " ".join(f"WHEN {column} = {w.k} THEN {sql_timestamp(w.end)}" for w in plan.windows)
    return f"CASE {cases} END"


def _passage_checks(cfg: SuiteSettings, plan: SnapshotPlan) -> list[Check]:
    low, high = cfg.validation.passage_median_tokens
    return [
        *_not_null("window", "passage_id", "page_id", "page_title", "rev_id", "text"),
        _regex("page_qid", QID, "an item id"),
        _unique("window", "passage_id"),
        rows_check("revision times lie inside their window"
                   + (" (t, τ_k]" if cfg.passages.windows == "cumulative"
                      else " (τ_{k-1}, τ_k]"),
                   _window_bounds(plan, cfg.passages.windows == "cumulative")),
        # a median through SQL: GX's median expectation cannot run on Sail
        rows_check(f"the median passage has {low:g}..{high:g} tokens",
                   "SELECT * FROM (SELECT percentile_approx(size(split(trim(text), '\\\\s+')), "
                   "0.5) AS median_tokens FROM {batch}) "
                   f"WHERE median_tokens < {low} OR median_tokens > {high}"),
    ]


def _curation_checks(cfg: SuiteSettings) -> list[Check]:
    share = cfg.validation.max_unparsed_share
    return [
        Check("verdict is YES, NO or UNPARSED", "ExpectColumnValuesToBeInSet",
              {"column": "verdict", "value_set": ["YES", "NO", "UNPARSED"]}),
        *_not_null("passage_id", "s", "p", "o", "llm_name", "prompt_type", "prompt_sha"),
        rows_check(f"at most {share:.0%} of the verdicts are unparsed",
                   "SELECT * FROM (SELECT avg(CASE WHEN verdict = 'UNPARSED' THEN 1.0 "
                   "ELSE 0.0 END) AS unparsed_share FROM {batch}) "
                   f"WHERE unparsed_share > {share}"),
    ]


def _window_rows(catalog: Catalog, plan: SnapshotPlan, versions: dict[str, int | None],
                 name: str, window: int) -> list[dict[str, Any]]:
    """A window's rows of ``name`` at the version the suite reads (none when the table is
    not there)."""
    if versions.get(name) is None:
        return []
    found: list[dict[str, Any]] = catalog.read_arrow(
        name, filters=[("snapshot", "=", plan.key), ("window", "=", window)],
        version=versions[name]).to_pylist()
    return found


def missing_verdicts(catalog: Catalog, cfg: SuiteSettings, plan: SnapshotPlan,
                     versions: dict[str, int | None]) -> list[dict[str, Any]]:
    """(window, passage, triple) rows whose required verdicts are not all there: the
    coverage rule, computed with the same rules the release applies."""
    from emerge_lib.curation.rules import judges
    from emerge_lib.curation.verdicts import plan_requests, qualified

    def rows(name: str, window: int) -> list[dict[str, Any]]:
        return _window_rows(catalog, plan, versions, name, window)

    out = []
    for w in plan.windows:
        instances, passages = rows("instances", w.k), rows("passages", w.k)
        current = {(r.llm_name, r.sha) for r in
                   plan_requests(cfg.curation, cfg.passages, instances, passages)}
        answered = {(v["passage_id"], v["s"], v["p"], v["o"], v["llm_name"], v["prompt_type"])
                    for v in rows("verdicts", w.k) if (v["llm_name"], v["prompt_sha"]) in current}
        have = {p["passage_id"] for p in passages}
        needs: dict[tuple[str, str, str, str], set[tuple[str, str]]] = defaultdict(set)
        for r in instances:
            if r["passage_id"] not in have:
                continue  # an orphan: its own check reports it
            for judge, kind in judges(cfg.curation, r["op"], qualified(r)):
                needs[(r["passage_id"], r["s"], r["p"], r["o"])].add(
                    (cfg.curation.route(judge).name, kind))
        for key, needed in sorted(needs.items()):
            missing = sorted(f"{n}/{k}" for n, k in needed if (*key, n, k) not in answered)
            out.append({"window": w.k, "passage_id": key[0], "s": key[1], "p": key[2],
                        "o": key[3], "missing": ", ".join(missing) or None})
    return out


def final_judge_gaps(catalog: Catalog, cfg: SuiteSettings, plan: SnapshotPlan,
                     versions: dict[str, int | None]) -> list[dict[str, Any]]:
    """One row per kept line the final judge has not judged whole: a triple's operation
    without its verdict (the prompt ``final_requests`` renders now, under the final
    judge's name). Such a line's gold silently falls back to the configured judges'
    rule (``gold_assessments``), which only the manifest and the card would show."""
    from emerge_lib.curation.verdicts import final_requests

    def rows(name: str, window: int) -> list[dict[str, Any]]:
        return _window_rows(catalog, plan, versions, name, window)

    out = []
    for w in plan.windows:
        kept = {(w.k, r["passage_id"]) for r in rows("selection", w.k) if r["kept"]}
        if not kept:
            continue
        answered = {(v["passage_id"], v["s"], v["p"], v["o"], v["llm_name"],
                     v["prompt_type"], v["prompt_sha"]) for v in rows("verdicts", w.k)}
        lacking: dict[str, list[str]] = defaultdict(list)
        for req in final_requests(cfg.curation, cfg.passages, rows("instances", w.k),
                                  rows("passages", w.k), kept):
            for _, pid in req.targets:
                lacking[pid] += [f"{s} {p} {o} {req.prompt_type}" for s, p, o in req.triples
                                 if (pid, s, p, o, req.llm_name, req.prompt_type, req.sha)
                                 not in answered]
        out += [{"window": w.k, "passage_id": pid, "unjudged": len(missing),
                 "example": missing[0]} for pid, missing in sorted(lacking.items()) if missing]
    return out


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn CountVectorizer's tokens


def near_duplicates(catalog: Catalog, cfg: SuiteSettings, plan: SnapshotPlan,
                    versions: dict[str, int | None]) -> list[dict[str, Any]]:
    """The authors' s07c (``s07c_verify_duplicates.py:115-160``), read again here: pairs
    of kept lines of one delta file that pass 2's thresholds call near-duplicates (token
    Jaccard ≥ ``max_jaccard`` or normalized edit distance ≤ ``min_edit_distance``, on the
    released passages), among lines of the same article (their s07c's pairs) and among
    lines of the same triples and operations (pass 2's groups, where none may remain)."""
    from rapidfuzz.distance import Levenshtein

    from emerge_lib.curation.verdicts import passage_text

    def rows(name: str, window: int) -> list[dict[str, Any]]:
        return _window_rows(catalog, plan, versions, name, window)

    sel = cfg.selection
    out = []
    for w in plan.windows:
        kept = {r["passage_id"] for r in rows("selection", w.k) if r["kept"]}
        signature: dict[str, set[tuple[str, str, str, str]]] = defaultdict(set)
        for r in rows("instances", w.k):
            signature[r["passage_id"]].add((r["op"], r["s"], r["p"], r["o"]))
        lines = sorted((p["passage_id"], p["page_id"], passage_text(p, cfg.passages))
                       for p in rows("passages", w.k) if p["passage_id"] in kept)
        words = {pid: frozenset(_TOKEN.findall(text.lower())) for pid, _, text in lines}
        for i, (a, page_a, text_a) in enumerate(lines):
            for b, page_b, text_b in lines[i + 1:]:
                same_triples = signature[a] == signature[b]
                if page_a != page_b and not same_triples:
                    continue
                union = len(words[a] | words[b])
                jac = len(words[a] & words[b]) / union if union else 1.0
                total = len(text_a) + len(text_b)
                ned = Levenshtein.distance(text_a, text_b) / total if total else 0.0
                if not (jac < sel.max_jaccard and ned > sel.min_edit_distance):
                    out.append({"window": w.k, "passage_id": a, "other": b, "jaccard": jac,
                                "edit_distance": ned, "same_triples": same_triples,
                                "same_article": page_a == page_b})
    return out


def _near_duplicate_suite(spark: SparkSession, pairs: list[dict[str, Any]]) -> Suite:
    return Suite("near_duplicates", spark.createDataFrame(
        pairs, schema="window int, passage_id string, other string, jaccard double, "
                      "edit_distance double, same_triples boolean, same_article boolean"), [
        rows_check("s07c: no two kept lines of a delta file with the same triples are "
                   "near-duplicates by pass 2's thresholds",
                   "SELECT * FROM {batch} WHERE same_triples"),
        Check("s07c: kept lines of one article that pass 2's thresholds call "
              "near-duplicates (their triples differ, so s07 keeps both, as theirs did)",
              "UnexpectedRowsExpectation",
              {"unexpected_rows_query": "SELECT * FROM {batch} WHERE NOT same_triples"},
              severity="warning"),
    ])


def _selection_checks(cfg: SuiteSettings) -> list[Check]:
    per_delta = cfg.selection.evaluation_per_delta
    return [
        *_not_null("window", "passage_id", "kept", "rank", "evaluation_set"),
        _unique("window", "passage_id"),
        rows_check("the evaluation set draws only kept lines",
                   "SELECT * FROM {batch} WHERE evaluation_set AND NOT kept"),
        rows_check("a line left out says why",
                   "SELECT * FROM {batch} WHERE NOT kept AND reason IS NULL"),
        rows_check("a line left out as a duplicate names the kept line it duplicates",
                   "SELECT * FROM {batch} WHERE reason = 'duplicate' AND duplicate_of IS NULL"),
        rows_check("a kept line has no reason to be left out",
                   "SELECT * FROM {batch} WHERE kept AND reason IS NOT NULL"),
        rows_check(f"at most {per_delta} evaluation lines per delta",
                   "SELECT window, count(*) AS n FROM {batch} WHERE evaluation_set "
                   f"GROUP BY window HAVING count(*) > {per_delta}"),
    ]


def snapshot_suites(spark: SparkSession, catalog: Catalog, cfg: SuiteSettings,
                    plan: SnapshotPlan,
                    frames: dict[str, DataFrame],
                    versions: dict[str, int | None]) -> list[Suite]:
    """The suites of one snapshot over ``frames`` (its rows of each table)."""
    suites = [
        Suite("kg_triples", catalog.materialize(checked_kg(spark, frames)), [
            _regex("s", QID, "an item id"), _regex("p", PID, "a property id"),
            _regex("o", QID, "an item id"), *_not_null("s", "p", "o"),
            _unique("s", "p", "o"), _rows_between("T_t is not empty", 1, None),
            rows_check("both ends of a triple are in V_t",
                       "SELECT * FROM {batch} WHERE NOT (s_in_v AND o_in_v)")]),
        Suite("entities", frames["entities"], [
            _regex("qid", QID, "an item id"), *_not_null("qid", "title"), _unique("qid"),
            _rows_between("V_t is not empty", 1, None)]),
        Suite("relations", frames["relations"], [
            _regex("pid", PID, "a property id"), *_not_null("pid", "label"),
            _unique("pid")]),
        Suite("passages", frames["passages"], _passage_checks(cfg, plan)),
        Suite("passage_mentions", catalog.materialize(passage_mentions(frames)), [
            *_not_null("start", "end", "anchor"),
            rows_check("mention offsets select the anchor in the passage text",
                       "SELECT * FROM {batch} WHERE qid IS NOT NULL AND "
                       "substring(text, start + 1, end - start) <> anchor"),
            _regex("qid", QID, "an item id")]),
        Suite("instances", catalog.materialize(checked_instances(spark, frames)),
              _instance_checks(cfg, plan)),
        Suite("selection", frames["selection"], _selection_checks(cfg)),
    ]
    if cfg.selection.dedup and cfg.selection.dedup_passes == "authors" and \
            cfg.validation.near_duplicates:
        suites.append(_near_duplicate_suite(spark, near_duplicates(catalog, cfg, plan,
                                                                   versions)))
    if cfg.curation.enabled:
        coverage = missing_verdicts(catalog, cfg, plan, versions)
        suites += [
            Suite("verdicts", frames["verdicts"], _curation_checks(cfg)),
            Suite("curation_coverage", spark.createDataFrame(
                coverage, schema="window int, passage_id string, s string, p string, "
                                 "o string, missing string"), [
                Check("every aligned triple has the verdicts its rule needs",
                      "ExpectColumnValuesToBeNull", {"column": "missing"})]),
        ]
        if cfg.curation.final_judge is not None:
            suites.append(Suite("final_judge_coverage", spark.createDataFrame(
                final_judge_gaps(catalog, cfg, plan, versions),
                schema="window int, passage_id string, unjudged int, example string"), [
                rows_check("every operation of every kept line has the final judge's "
                           "verdict (the gold)", "SELECT * FROM {batch}")]))
    return suites


# --- the release files -------------------------------------------------------------------


def flatten_release(lines: Iterable[tuple[str, dict[str, Any]]]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(file, record) pairs → rows of lines, mentions and triples, values as written (so the
    checks see the JSON, not a parse of it)."""
    out_lines, mentions, triples = [], [], []
    for file, rec in lines:
        out_lines.append({
            "file": file, "hash_id": rec.get("hash_id"),
            "revision_date": rec.get("revision_date"),
            "delta_dates": json.dumps(rec.get("delta_dates")),
            "delta_date_last": (rec.get("delta_dates") or [None])[-1],
            "keys": ",".join(rec), "triples": len(rec.get("tkgu_triples") or [])})
        for m in rec.get("mentions") or ():
            mentions.append({
                "file": file, "hash_id": rec.get("hash_id"), "passage": rec.get("passage"),
                "mention_text": m.get("mention_text"), "start_char": m.get("start_char"),
                "end_char": m.get("end_char"), "qid": m.get("qid"),
                "target_entity": m.get("target_entity")})
        for tr in rec.get("tkgu_triples") or ():
            triple = tr.get("triple") or [None, None, None]
            triples.append({
                "file": file, "hash_id": rec.get("hash_id"),
                "s": triple[0], "p": triple[1], "o": triple[2],
                "ops": ",".join(tr.get("tkgu_operations") or []),
                "head_creation_date": tr.get("head_creation_date"),
                "tail_creation_date": tr.get("tail_creation_date"),
                "human_assessment": json.dumps(tr.get("human_assessment")),
                "llm_assessment": json.dumps(tr.get("llm_assessment")),
                "qualifier_date": (tr.get("qualifier_info") or {}).get("qualifier_date")})
    return out_lines, mentions, triples


def release_suites(spark: SparkSession, lines: Sequence[dict[str, Any]],
                   mentions: Sequence[dict[str, Any]],
                   triples: Sequence[dict[str, Any]], required_keys: Sequence[str]) -> list[Suite]:
    """The release JSONL's suites (the authors' format, docs/data-model.md)."""
    names = sorted(OP_NAMES.values())
    op_rule = " OR ".join(f"op = '{n}'" for n in names)

    def frame(rows: Sequence[dict[str, Any]], ddl: str) -> DataFrame:
        return spark.createDataFrame(list(rows), schema=ddl)

    keys = ",".join(required_keys)
    return [
        Suite("release_lines", frame(lines, "file string, hash_id string, revision_date "
                                     "string, delta_dates string, delta_date_last string, "
                                     "keys string, triples int"), [
            *_not_null("hash_id", "revision_date"),
            _unique("file", "hash_id"),
            _regex("revision_date", INSTANT, "a full ISO 8601 UTC instant"),
            _regex("delta_date_last", DATE, "a date-only string"),
            rows_check("every line has the authors' keys in their order",
                       f"SELECT * FROM {{batch}} WHERE NOT startswith(keys, '{keys}')"),
            rows_check("every line has a triple", "SELECT * FROM {batch} WHERE triples < 1")]),
        Suite("release_mentions", frame(mentions, "file string, hash_id string, passage "
                                        "string, mention_text string, start_char int, end_char "
                                        "int, qid string, target_entity string"), [
            *_not_null("mention_text", "start_char", "end_char", "qid", "target_entity"),
            _regex("qid", QID, "an item id"),
            rows_check("mention offsets select the mention text in the passage",
                       "SELECT * FROM {batch} WHERE substring(passage, start_char + 1, "
                       "end_char - start_char) <> mention_text")]),
        Suite("release_triples", frame(triples, "file string, hash_id string, s string, "
                                       "p string, o string, ops string, head_creation_date "
                                       "string, tail_creation_date string, human_assessment "
                                       "string, llm_assessment string, qualifier_date "
                                       "string"), [
            _regex("s", QID, "an item id"), _regex("p", PID, "a property id"),
            _regex("o", QID, "an item id"),
            _regex("head_creation_date", DATE, "a date-only string"),
            _regex("tail_creation_date", DATE, "a date-only string"),
            rows_check("tkgu_operations holds one or two of the release's op names",
                       "SELECT * FROM (SELECT *, explode(split(ops, ',')) AS op FROM {batch}) "
                       f"WHERE NOT ({op_rule})"),
            rows_check("human_assessment and llm_assessment are lists",
                       "SELECT * FROM {batch} WHERE NOT (startswith(human_assessment, '[') "
                       "AND startswith(llm_assessment, '['))"),
            _regex("qualifier_date", DATE, "a date-only string")]),
    ]


# --- the human annotation ------------------------------------------------------------------


def flatten_annotation(lines: Iterable[tuple[str, dict[str, Any]]]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(file, record) pairs of ``human_annotation/*.jsonl`` → rows of lines and of
    ``human_assessment`` entries, values as written, each entry with the
    ``human_readable_triple`` its line gives (what the annotator was shown)."""
    from emerge_lib.formats.format import human_readable_triple

    out_lines, entries = [], []
    for file, rec in lines:
        annotated = 0
        for tr in rec.get("tkgu_triples") or ():
            triple = tr.get("triple") or [None, None, None]
            for e in tr.get("human_assessment") or ():
                annotated += 1
                e = e if isinstance(e, dict) else {}
                entries.append({
                    "file": file, "hash_id": rec.get("hash_id"),
                    "s": triple[0], "p": triple[1], "o": triple[2],
                    "ops": ",".join(tr.get("tkgu_operations") or []),
                    "keys": ",".join(e), "annotator_name": e.get("annotator_name"),
                    "prompt_type": e.get("prompt_type"),
                    "assessment": json.dumps(e.get("assessment")),
                    "human_readable_triple": e.get("human_readable_triple"),
                    "shown_triple": human_readable_triple(rec, tr),
                    "definition_relation": e.get("definition_relation")})
        out_lines.append({"file": file, "hash_id": rec.get("hash_id"), "annotated": annotated})
    return out_lines, entries


def annotation_suites(spark: SparkSession, lines: Sequence[dict[str, Any]],
                      entries: Sequence[dict[str, Any]],
                      released: Sequence[tuple[str, str, str, str]],
                      entry_keys: Sequence[str]) -> list[Suite]:
    """The human annotation's suites: the authors' ``human_assessment`` format, one verdict
    per (triple, annotator, prompt type), the prompt type its operations ask, and every
    annotated triple a triple of the release (``released``: (hash_id, s, p, o))."""
    ddl = ("file string, hash_id string, s string, p string, o string, ops string, "
           "keys string, annotator_name string, prompt_type string, assessment string, "
           "human_readable_triple string, shown_triple string, definition_relation string")
    release = spark.createDataFrame([list(r) for r in released],
                                    schema="hash_id string, s string, p string, o string")
    checked = spark.sql("""
        SELECT e.*, r.hash_id IS NOT NULL AS in_release FROM {entries} e
        LEFT JOIN (SELECT DISTINCT hash_id, s, p, o FROM {release}) r
          ON r.hash_id = e.hash_id AND r.s = e.s AND r.p = e.p AND r.o = e.o
    """, entries=spark.createDataFrame(list(entries), schema=ddl), release=release)
    keys = ",".join(entry_keys)
    return [
        Suite("annotation_lines", spark.createDataFrame(
            list(lines), schema="file string, hash_id string, annotated int"), [
            *_not_null("hash_id"), _unique("file", "hash_id"),
            rows_check("every line has a human verdict (the authors' s09c)",
                       "SELECT * FROM {batch} WHERE annotated < 1")]),
        Suite("human_assessment", checked, [
            *_not_null("annotator_name", "definition_relation"),
            rows_check("every entry has the authors' keys, in their order",
                       f"SELECT * FROM {{batch}} WHERE keys <> '{keys}'"),
            _regex("annotator_name", r"^\S(.*\S)?$", "a non-empty name"),
            Check("prompt_type is triple_assertion or triple_deprecation",
                  "ExpectColumnValuesToBeInSet",
                  {"column": "prompt_type", "value_set": ["triple_assertion",
                                                          "triple_deprecation"]}),
            Check("assessment is a JSON boolean", "ExpectColumnValuesToBeInSet",
                  {"column": "assessment", "value_set": ["true", "false"]}),
            _unique("file", "hash_id", "s", "p", "o", "annotator_name", "prompt_type"),
            rows_check("the prompt type is one the triple's operations ask",
                       "SELECT * FROM {batch} WHERE (prompt_type = 'triple_deprecation' AND "
                       "NOT array_contains(split(ops, ','), 'd-triples')) OR "
                       "(prompt_type = 'triple_assertion' AND size(array_remove(split(ops, "
                       "','), 'd-triples')) = 0)"),
            rows_check("human_readable_triple is the triple as its line shows it",
                       "SELECT * FROM {batch} WHERE human_readable_triple <> shown_triple "
                       "OR human_readable_triple IS NULL"),
            rows_check("every annotated triple is a triple of the release",
                       "SELECT * FROM {batch} WHERE NOT in_release")]),
    ]
