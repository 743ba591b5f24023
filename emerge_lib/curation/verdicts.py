"""instances + passages → verdicts: LLM curation with the paper's prompts (Appendix B).

One request per (passage, prompt type, model) holds all of that passage's triples of that
type as a numbered list (``curation.prompts``); which models judge what is configured
(``curation.rules``). A prompt that several windows share (cumulative windows repeat a
passage with the same triples) is asked once and its answer recorded for each.

Resumable: each answer's rows are appended to a local journal the moment it arrives
(``curation.journal``: one write, synced to disk by a thread within 50 ms) and
MERGEd into the table in batches (every ``curation.flush_seconds`` or ``flush_rows``); the
next run replays what a killed run journaled but did not MERGE. So a ``kill -9`` loses
only the requests in flight (a power loss, also the answers of the last ~50 ms), and
a rerun asks only what has no verdict yet, and (answer QA, ``curation.quality``) what
was stored UNPARSED or degenerate, at most ``curation.reasks`` more times. An answer that
does not parse, or that
``max_tokens`` cut (``finish_reason: length``), is asked again (``curation.retries``
times, sampled at a higher temperature) and then recorded as UNPARSED and counted, never
guessed; ``attempts`` counts every HTTP request the verdict took. A request whose endpoint
keeps failing is not recorded, counted, and left for the next run: the stage then fails
after committing everything else, retryably unless every failure was a refusal (4xx),
which a rerun would meet again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from emerge_lib.catalog import Catalog, spec
from emerge_lib.core.config import CurationSettings, Judge, PassageSettings
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.curation.answers import parse_answer
from emerge_lib.curation.client import BudgetExhausted, ChatClient, Endpoint, EndpointError
from emerge_lib.curation.journal import Journal, journal_folder, release, take_orphans
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION, prompt_sha, render
from emerge_lib.curation.quality import ask_round, repeated, replaced, to_reask
from emerge_lib.curation.rules import ADDITIONS, asserted_operations
from emerge_lib.formats.format import TITLE_PREFIX, llm_assessment_entry

log = logging.getLogger(__name__)

Triple = tuple[str, str, str]
#: the ``judge`` of the verdict rows the final judge asked (the ``final_judge`` stage)
FINAL = "final"


@dataclass
class Request:
    """One prompt to one model, and the instance rows its answer is for."""

    prompt_type: str
    judge: str
    llm_name: str
    prompt: str
    sha: str
    triples: list[Triple]
    targets: list[tuple[int, str]] = field(default_factory=list)  # (window, passage_id)
    endpoint: Endpoint | None = None  # resolved only when the request is to be sent
    ask_round: int = 1  # the prompt's ask this is (a re-ask of a stored answer: more)
    single: bool = False  # the single-triple prompt: one unnumbered verdict
    replacing: str | None = None  # JSON: the stored answer a re-ask replaces
    recorded_as: str | None = None  # the rows' ``judge`` (None: the route, ``judge``)


@dataclass
class CurateReport:
    requests: int = 0  # distinct prompts the snapshot needs
    answered_before: int = 0  # already in the table
    sent: int = 0  # HTTP requests made (retries included)
    answered: int = 0
    unparsed: int = 0
    failed: int = 0
    refused: int = 0  # of the failed: a 4xx (a rerun would be refused again)
    left: int = 0  # not asked: the budget ran out
    replayed: int = 0  # verdict rows a killed run journaled, committed by this one
    reasked_unparsed: int = 0  # stored UNPARSED answers asked again (answer QA)
    reasked_degenerate: int = 0  # stored degenerate answers asked again
    rows: int = 0  # verdict rows written
    tokens_out: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def passage_text(row: dict[str, Any], passages: PassageSettings) -> str:
    """The passage as the release shows it (and the model reads it)."""
    prefix = TITLE_PREFIX.format(title=row["page_title"]) if passages.title_prefix else ""
    return prefix + row["text"]


def qualified(row: dict[str, Any]) -> bool:
    """Is this instance row a D that carries a qualifier (which picks its judges)? The
    authors' s07 reads "with qualifier" as a non-empty ``qualifier_info`` (S07:109-112):
    an end qualifier, or a removal's start qualifier (``deltas.removal_start_qualifier``),
    as their s06b fills it from any qualifier event of the triple (S06B:215-225)."""
    return row["op"] == "D" and row.get("qualifier_pid") is not None


def endpoint_of(settings: CurationSettings, judge: str) -> Endpoint:
    route = settings.route(judge)  # type: ignore[arg-type]
    if not route.url:
        raise EmergeError(f"curation: no endpoint for the {judge} model ({route.name}); set "
                          f"curation.{judge}.url or pass --llm-url")
    key = route.api_key.get_secret_value() if route.api_key else None
    return Endpoint(route.url, route.served, route.backend, key)


def plan_requests(settings: CurationSettings, passages_settings: PassageSettings,
                  instances: list[dict[str, Any]], passages: list[dict[str, Any]]) -> list[Request]:
    """Every request the snapshot's instances need, deduplicated by (model, prompt)."""
    by_passage: dict[tuple[int, str], dict[Triple, dict[str, Any]]] = defaultdict(dict)
    for r in instances:
        entry = by_passage[(r["window"], r["passage_id"])].setdefault(
            (r["s"], r["p"], r["o"]), {"ops": set(), "qualified": False, "labels": None})
        entry["ops"].add(r["op"])
        entry["qualified"] |= qualified(r)
        entry["labels"] = (r.get("s_label") or r["s"], r.get("p_label") or r["p"],
                           r.get("o_label") or r["o"])
    text = {(p["window"], p["passage_id"]): passage_text(p, passages_settings) for p in passages}
    requests: dict[tuple[str, str], Request] = {}
    for (window, pid), triples in sorted(by_passage.items()):
        if (window, pid) not in text:
            continue  # an orphan instance: the release leaves it out too
        asks: dict[tuple[str, Judge], list[Triple]] = defaultdict(list)
        for triple in sorted(triples):
            entry = triples[triple]
            if entry["ops"] & set(ADDITIONS):
                for judge in settings.assertion_judges:
                    asks[(ASSERTION, judge)].append(triple)
            if "D" in entry["ops"]:
                routes = (settings.deprecation_judges if entry["qualified"]
                          else settings.deprecation_without_qualifier_judges)
                for judge in routes:
                    asks[(DEPRECATION, judge)].append(triple)
        for (kind, judge), listed in sorted(asks.items()):
            route = settings.route(judge)
            single = settings.single_prompts and len(listed) == 1
            prompt = render(kind, text[(window, pid)], [triples[t]["labels"] for t in listed],
                            single=single)
            sha = prompt_sha(prompt)
            req = requests.get((route.name, sha))
            if req is None:
                req = requests[(route.name, sha)] = Request(
                    kind, judge, route.name, prompt, sha, listed, single=single)
            if (window, pid) not in req.targets:  # two judges of one name ask once
                req.targets.append((window, pid))
    return list(requests.values())


def final_settings(settings: CurationSettings) -> CurationSettings:
    """The settings under which ``plan_requests`` plans the final judge's requests: its
    route judges every operation (assertion and deprecation, with or without qualifier)."""
    judge = settings.final_judge
    if judge is None:
        raise EmergeError("curation.final_judge is not set: there is no final judge")
    return settings.model_copy(update={"assertion_judges": [judge], "deprecation_judges": [
        judge], "deprecation_without_qualifier_judges": [judge]})


def final_requests(settings: CurationSettings, passages_settings: PassageSettings,
                   instances: list[dict[str, Any]], passages: list[dict[str, Any]],
                   kept: Collection[tuple[int, str]]) -> list[Request]:
    """The final judge's requests (the authors' s05 v9): every operation of every kept
    line, ``(window, passage_id)``, in the paper's prompts rendered as curate renders
    them, so a prompt curate already asked of the same model is the same request (its
    answer is reused, never asked again). none without a final judge."""
    if settings.final_judge is None:
        return []
    lines = set(kept)
    mine = [r for r in instances if (r["window"], r["passage_id"]) in lines]
    requests = plan_requests(final_settings(settings), passages_settings, mine, passages)
    for req in requests:
        req.recorded_as = FINAL
    return requests


def kept_lines(catalog: Catalog, snapshot: str) -> set[tuple[int, str]]:
    """The snapshot's kept lines, ``(window, passage_id)``, as ``select`` marked them."""
    if catalog.version("selection") is None:
        return set()
    rows = catalog.read_arrow("selection", columns=["window", "passage_id", "kept"],
                              filters=[("snapshot", "=", snapshot)]).to_pylist()
    return {(r["window"], r["passage_id"]) for r in rows if r["kept"]}


def build_verdicts(catalog: Catalog, plan: SnapshotPlan, settings: CurationSettings,
                   passages_settings: PassageSettings,
                   on_progress: Callable[[CurateReport], None] | None,
                   judges: tuple[str, ...] | None, *, final: bool) -> CurateReport:
    """Curate one snapshot (see the module docstring); returns what was done.
    ``judges``: only the requests to these routes' models (the Airflow snapshot DAG asks
    each model in a task of its own, in that model's pool); None: every request.
    ``final``: the final judge's requests instead (``final_requests``, the kept lines)."""
    started = time.monotonic()
    snap = [("snapshot", "=", plan.key)]
    instances = catalog.read_arrow("instances", filters=snap).to_pylist()
    passages = catalog.read_arrow("passages", filters=snap).to_pylist()
    requests = (final_requests(settings, passages_settings, instances, passages,
                               kept_lines(catalog, plan.key)) if final else
                plan_requests(settings, passages_settings, instances, passages))
    if judges is not None:
        requests = [r for r in requests if r.judge in judges]
    report = CurateReport(requests=len(requests), replayed=_replay(catalog, plan))
    stored = catalog.read_arrow("verdicts", filters=snap).to_pylist()
    have_rows = {(r["window"], r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"],
                  r["prompt_type"], r["prompt_sha"]) for r in stored}
    answers: dict[tuple[str, str], dict[Triple, dict[str, Any]]] = defaultdict(dict)
    for r in stored:  # answers already recorded (maybe for another window)
        answers[(r["llm_name"], r["prompt_sha"])][(r["s"], r["p"], r["o"])] = r
    stuck = repeated(stored, settings.degenerate_repeats if settings.degenerate_check else 0)
    writer = _VerdictWriter(catalog, plan, settings)
    todo = []
    for req in requests:
        known = answers.get((req.llm_name, req.sha))
        if known is not None and set(req.triples) <= set(known):
            answer = [known[t] for t in req.triples]
            why = to_reask(settings, answer, (req.llm_name, req.sha) in stuck)
            if why is None:
                report.answered_before += 1
                writer.add([_row(plan, req, w, pid, t, known[t]) for w, pid in req.targets
                            for t in req.triples if _key(w, pid, t, req) not in have_rows])
                continue
            req.ask_round, req.replacing = ask_round(answer) + 1, replaced(answer, why)
            if why == "unparsed":
                report.reasked_unparsed += 1
            else:
                report.reasked_degenerate += 1
            log.info("curate %s: asking %s again (%s)", plan.key, req.sha, why)
        req.endpoint = endpoint_of(settings, req.judge)  # raises when none is set
        todo.append(req)
    try:
        if todo:
            asyncio.run(_ask_all(todo, settings, plan, writer, report, on_progress))
        writer.flush()
    finally:
        writer.close()  # the journal goes once its rows are committed, else stays for replay
    report.rows = writer.rows
    report.seconds = time.monotonic() - started
    if on_progress:
        on_progress(report)
    if report.failed:
        refused = report.refused == report.failed  # only 4xx: a rerun is refused again
        raise EndpointError(
            f"curate {plan.key}: {report.failed} of {report.requests} requests failed "
            f"({report.errors[0] if report.errors else 'endpoint errors'}); {report.answered} "
            "answered and committed: " + ("the endpoint refused them (4xx): fix the request "
                                          "or the endpoint's settings, then run curate again"
                                          if refused else "run curate again to ask the rest"),
            retryable=not refused)
    return report


def _replay(catalog: Catalog, plan: SnapshotPlan) -> int:
    """Commit the verdict rows that killed runs journaled (``curation.journal``); how many."""
    rows, taken, torn = take_orphans(journal_folder(catalog.warehouse, plan.key))
    key = spec("verdicts").key
    latest = {tuple(r[k] for k in key): r for r in rows if r.get("snapshot") == plan.key}
    for r in latest.values():
        r["answered_at"] = datetime.fromisoformat(r["answered_at"])
    if latest:
        catalog.merge("verdicts", catalog.frame("verdicts", list(latest.values())))
        log.info("curate %s: %d verdict rows replayed from %d journals of killed runs%s",
                 plan.key, len(latest), len(taken), f" ({torn} torn lines)" if torn else "")
    release(taken)
    return len(latest)


def _key(window: int, pid: str, t: Triple, req: Request) -> tuple:
    return (window, pid, *t, req.llm_name, req.prompt_type, req.sha)


def _row(plan: SnapshotPlan, req: Request, window: int, pid: str, t: Triple,
         answer: dict[str, Any]) -> dict[str, Any]:
    return {"snapshot": plan.key, "window": window, "passage_id": pid, "s": t[0], "p": t[1],
            "o": t[2], "prompt_type": req.prompt_type, "judge": req.recorded_as or req.judge,
            "llm_name": req.llm_name, "prompt_sha": req.sha, **{k: answer[k] for k in (
                "served_model", "verdict", "explanation", "raw_answer", "tokens_in", "tokens_out",
                "latency_s", "attempts", "answered_at")},
            "ask_round": answer.get("ask_round") or 1, "replaced": answer.get("replaced")}


class _VerdictWriter:
    """Journals verdict rows as they come, buffers them and MERGEs them every
    ``flush_seconds`` or ``flush_rows``."""

    def __init__(self, catalog: Catalog, plan: SnapshotPlan, settings: CurationSettings) -> None:
        self.catalog, self.settings = catalog, settings
        self.folder = journal_folder(catalog.warehouse, plan.key)
        self.journal: Journal | None = None  # opened by the first row
        self.buffer: list[dict[str, Any]] = []
        self.last = time.monotonic()
        self.added = 0
        self.rows = 0  # committed
        self.lock = threading.Lock()  # answers arrive while a flush runs in a thread

    def add(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        with self.lock:
            if self.journal is None:
                self.journal = Journal(self.folder)
            self.journal.append(rows)
            self.buffer.extend(rows)
            self.added += len(rows)

    def close(self) -> None:
        """Close the journal: removed when every row it holds is committed."""
        if self.journal is not None:
            self.journal.close(remove=self.rows == self.added)
            self.journal = None

    def due(self) -> bool:
        return bool(self.buffer) and (len(self.buffer) >= self.settings.flush_rows
                                      or time.monotonic() - self.last >= self.settings.flush_seconds)

    def flush(self) -> None:
        with self.lock:
            rows, self.buffer = self.buffer, []
        if rows:
            self.catalog.merge("verdicts", self.catalog.frame("verdicts", rows))
            self.rows += len(rows)
        self.last = time.monotonic()


def client_for(settings: CurationSettings) -> ChatClient:
    """The client the stage asks with (``curation.contract`` sends through the same)."""
    return ChatClient(settings.concurrency, settings.timeout_s, settings.retries,
                      max_requests=settings.max_requests,
                      max_tokens_per_line=settings.max_tokens_per_triple,
                      temperature=settings.temperature)


def retry_temperature(settings: CurationSettings, attempt: int, ask_round: int
                      ) -> float | None:
    """The temperature of the ``attempt``-th ask of a request (0: the first, the
    configured one) in its ``ask_round`` (1, or more for a re-ask of a stored answer by
    answer QA); a retry of an unparsable answer samples, and so does a re-ask:
    temperature 0 would repeat it."""
    return None if attempt == 0 and ask_round == 1 else max(settings.temperature, 0.7)


def answer_seed(sha: str, ask_round: int, attempt: int) -> int:
    """The sampling seed of one ask: the same prompt, round and attempt draw the same
    answer in every run (a retry or a re-ask samples at a higher temperature, and an
    unseeded draw made two builds of one world release different gold), while each
    retry draws anew. 31 bits: every server's seed type holds it."""
    import hashlib

    digest = hashlib.sha256(f"{sha}:{ask_round}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


async def _ask_all(todo: list[Request], settings: CurationSettings, plan: SnapshotPlan,
                   writer: _VerdictWriter, report: CurateReport,
                   on_progress: Callable[[CurateReport], None] | None) -> None:
    client = client_for(settings)
    flushing: asyncio.Task | None = None

    async def one(req: Request) -> None:
        endpoint = req.endpoint
        assert endpoint is not None
        n = len(req.triples)
        answer, verdicts, attempts = None, None, 0
        for attempt in range(settings.retries + 1):
            temperature = retry_temperature(settings, attempt, req.ask_round)
            answer = await client.ask(endpoint, req.prompt, n, settings.structured,
                                      temperature, single=req.single,
                                      seed=answer_seed(req.sha, req.ask_round, attempt))
            attempts += answer.attempts
            report.tokens_out += answer.tokens_out
            # an answer max_tokens cut is not read, even when what came parses
            cut = answer.finish_reason == "length"
            verdicts = None if cut else parse_answer(answer.text, n, req.single)
            if verdicts is not None:
                break
        assert answer is not None
        now = datetime.now(UTC)
        base = {"served_model": endpoint.model, "raw_answer": answer.text, "tokens_in": answer.tokens_in,
                "tokens_out": answer.tokens_out, "latency_s": answer.seconds,
                "attempts": attempts, "answered_at": now, "ask_round": req.ask_round,
                "replaced": req.replacing}
        if verdicts is None:
            report.unparsed += 1
            per = {t: {**base, "verdict": "UNPARSED", "explanation": None} for t in req.triples}
        else:
            per = {t: {**base, "verdict": "YES" if v.verdict else "NO",
                       "explanation": v.explanation} for t, v in zip(req.triples, verdicts,
                                                                     strict=True)}
        writer.add([_row(plan, req, w, pid, t, per[t]) for w, pid in req.targets
                    for t in req.triples])
        report.answered += 1

    async def guarded(req: Request) -> None:
        nonlocal flushing
        try:
            await one(req)
        except BudgetExhausted:
            report.left += 1
        except EndpointError as exc:
            report.failed += 1
            report.refused += not exc.retryable
            if len(report.errors) < 3:
                report.errors.append(str(exc))
        report.sent = client.sent
        if on_progress:
            on_progress(report)
        if writer.due() and (flushing is None or flushing.done()):
            # the commit runs in a thread: requests keep flowing meanwhile
            flushing = asyncio.create_task(asyncio.to_thread(writer.flush))

    async with client:
        await asyncio.gather(*(guarded(r) for r in todo))
        if flushing is not None:
            await flushing
    report.sent = client.sent


Assessed = dict[str, dict[Triple, tuple[list[dict[str, Any]], list[str] | None]]]


def assessments(catalog: Catalog, snapshot: str, window: int, version: int | None,
                instances: list[dict[str, Any]], passages: list[dict[str, Any]],
                settings: CurationSettings, passage_settings: PassageSettings, *,
                kept: Collection[str] | None = None) -> Assessed:
    """:func:`gold_assessments` without the lines the final judge decided."""
    return gold_assessments(catalog, snapshot, window, version, instances, passages,
                            settings, passage_settings, kept=kept)[0]


def gold_assessments(catalog: Catalog, snapshot: str, window: int, version: int | None,
                     instances: list[dict[str, Any]], passages: list[dict[str, Any]],
                     settings: CurationSettings, passage_settings: PassageSettings, *,
                     kept: Collection[str] | None) -> tuple[Assessed, set[str]]:
    """passage_id → (s, p, o) → (llm_assessment elements, asserted op codes), from the
    verdicts (the latest answer per model and prompt type); empty when nothing is curated.

    A configured model's verdict counts only for the prompt the instance has now: after a
    rebuild changed a passage or a label, its old answer is about another text and stays
    out until ``curate`` asks again. Verdicts of other models (an earlier assessor) are
    kept as they are.

    ``kept``: the window's kept lines (the release; ``select`` passes none). Their final
    judge's verdicts (``final_requests``) are among the elements, and on a line it has
    judged whole (every request of the line answered) they decide the asserted
    operations of its triples (``final_operations``: the gold); a line it has not (it
    did not run yet, or its budget ran out) keeps the configured judges' rule. With the
    passage_ids of the lines the final judge decided."""
    if version is None:
        return {}, set()
    rows = catalog.read_arrow("verdicts", filters=[("snapshot", "=", snapshot),
                                                   ("window", "=", window)],
                              version=version).to_pylist()
    if not rows:
        return {}, set()
    current = {(r.llm_name, r.sha) for r in
               plan_requests(settings, passage_settings, instances, passages)}
    final = final_requests(settings, passage_settings, instances, passages,
                           {(window, pid) for pid in kept or ()})
    current |= {(r.llm_name, r.sha) for r in final}
    configured = {settings.additions.name, settings.deprecations.name}
    rows = [r for r in rows
            if r["llm_name"] not in configured or (r["llm_name"], r["prompt_sha"]) in current]
    latest: dict[tuple, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["answered_at"]):
        latest[(r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"], r["prompt_type"])] = r
    by_final = final_verdicts(rows, final)
    entries: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    said: dict[tuple, dict[tuple[str, str], bool | None]] = defaultdict(dict)
    for (pid, s, p, o, name, kind), r in sorted(latest.items()):
        entries[(pid, s, p, o)].append(
            llm_assessment_entry(name, kind, r["verdict"], r["explanation"]))
        said[(pid, s, p, o)][(name, kind)] = (None if r["verdict"] not in ("YES", "NO")
                                              else r["verdict"] == "YES")
    ops: dict[tuple, list[str]] = defaultdict(list)
    with_qualifier: dict[tuple, bool] = defaultdict(bool)
    for r in instances:
        key = (r["passage_id"], r["s"], r["p"], r["o"])
        ops[key].append(r["op"])
        with_qualifier[key] |= qualified(r)
    out: dict[str, dict] = defaultdict(dict)
    for key, op_list in ops.items():
        asserted = (final_operations(op_list, by_final[key]) if key in by_final else
                    asserted_operations(settings, op_list, with_qualifier[key],
                                        said.get(key, {})))
        out[key[0]][key[1:]] = (entries.get(key, []), asserted)
    return out, {key[0] for key in by_final}


def final_verdicts(rows: list[dict[str, Any]], final: list[Request]
                   ) -> dict[tuple, dict[str, bool | None]]:
    """(passage_id, s, p, o) → prompt type → the final judge's verdict (None: unparsed),
    for the lines it has judged whole: every one of its requests for the line answered
    (one window's verdict rows and requests)."""
    needed: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for req in final:
        for _, pid in req.targets:
            needed[pid].add((req.llm_name, req.sha))
    answered: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for r in rows:
        answered[r["passage_id"]].add((r["llm_name"], r["prompt_sha"]))
    out: dict[tuple, dict[str, bool | None]] = defaultdict(dict)
    for r in sorted(rows, key=lambda r: r["answered_at"]):
        pid = r["passage_id"]
        if (r["llm_name"], r["prompt_sha"]) in needed[pid] and needed[pid] <= answered[pid]:
            out[(pid, r["s"], r["p"], r["o"])][r["prompt_type"]] = (
                None if r["verdict"] not in ("YES", "NO") else r["verdict"] == "YES")
    return out


def final_operations(ops: list[str], said: dict[str, bool | None]) -> list[str] | None:
    """The operations the final judge supports, as the authors' evaluation reads its
    verdicts (preloader_emerge.py:190-220): D by the deprecation verdict, every other
    operation by the assertion verdict, a missing or unparsed one counting as NO; None
    when none of the triple's operations has a verdict (unknown, as ``rules`` says)."""
    verdicts = [said.get(DEPRECATION if op == "D" else ASSERTION) for op in ops]
    if all(v is None for v in verdicts):
        return None
    return [op for op, v in zip(ops, verdicts, strict=True) if v]
