"""Run checks on Spark Connect DataFrames with Great Expectations 1.x; plain results back.

A check is a GX expectation class name with its arguments and a readable name (its
``description``, which is what our summaries and the checks page show). Facts this relies on
(checked on Sail 0.7, docs/validation.md): GX picks up the active Spark Connect session;
``persist`` is a no-op on Sail, so suites run on materialized tables (Delta, or scratch
Delta tables of joined frames) with ``persist=False``; median, quantile and histogram
metrics are unsupported on Sail and come back as ``success=False`` with
``exception_info`` instead of raising: any such check fails the gate itself
(:class:`ValidationGateError`), never passes for bad data or good. GX's Data Docs are not
built: the checks page (``emerge_lib.validation.page``) is rendered from the results.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from emerge_lib.core.errors import EmergeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

SAMPLE_ROWS = 5  # unexpected rows kept per failed check
RUN_TIME = datetime(2000, 1, 1, tzinfo=UTC)  # GX names its runs by time: a fixed one


class ValidationFailed(EmergeError):
    """A suite found data that must not be published."""


class ValidationGateError(EmergeError):
    """A check could not run (unsupported on this engine, a bad query): the gate itself is
    broken, which says nothing about the data; nothing is published."""


#: ``critical``: a failed check blocks the release; ``warning``: it is reported (the release
#: says so, in its validation verdict) and blocks nothing: what a history may rightly lack
Severity = Literal["critical", "warning"]


@dataclass(frozen=True)
class Check:
    """One expectation: ``kind`` is a class of ``great_expectations.expectations``."""

    name: str
    kind: str
    args: dict[str, Any] = field(default_factory=dict)
    severity: Severity = "critical"


def rows_check(name: str, query: str) -> Check:
    """A check that the SQL query over ``{batch}`` returns no row (the rows it returns are
    the violations, reported as samples)."""
    return Check(name, "UnexpectedRowsExpectation", {"unexpected_rows_query": query})


@dataclass(frozen=True)
class Suite:
    name: str
    frame: DataFrame
    checks: Sequence[Check]


@dataclass
class CheckResult:
    suite: str
    check: str
    success: bool
    raised: bool
    unexpected_count: int | None
    observed: Any
    severity: Severity = "critical"

    @property
    def blocks(self) -> bool:
        """Whether this result keeps the release from being published."""
        return self.raised or (not self.success and self.severity == "critical")

    def line(self) -> str:
        sample = (f": {json.dumps(self.observed[0], sort_keys=True, default=str)[:120]}"
                  if isinstance(self.observed, list) and self.observed else "")
        what = (f"could not run: {self.observed}" if self.raised
                else f"{self.unexpected_count} unexpected{sample}" if self.unexpected_count
                else f"observed {self.observed}")
        return f"{self.suite}: {self.check} ({what})"


@dataclass
class GateReport:
    results: list[CheckResult] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """No check blocks: every critical check passed (a failed warning does not count)."""
        return not any(r.blocks for r in self.results)

    @property
    def warnings(self) -> list[CheckResult]:
        """Failed checks of warning severity: what the release says is missing."""
        return [r for r in self.results if not r.success and not r.blocks]

    @property
    def raised(self) -> list[CheckResult]:
        return [r for r in self.results if r.raised]

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.blocks]

    def to_dict(self) -> dict[str, Any]:
        suites: dict[str, dict[str, Any]] = {}
        for r in self.results:
            entry = suites.setdefault(r.suite, {"success": True, "checks": []})
            entry["success"] &= not r.blocks
            entry["checks"].append({"check": r.check, "success": r.success, "raised": r.raised,
                                    "severity": r.severity,
                                    "unexpected_count": r.unexpected_count,
                                    "observed": r.observed})
        return {"success": self.success, "suites": suites}

    def summary(self) -> str:
        """One paragraph a user can act on: what failed, with counts."""
        n = len(self.results)
        warned = (f" ({len(self.warnings)} warning(s): "
                  f"{'; '.join(r.line() for r in self.warnings[:3])})" if self.warnings else "")
        if self.success:
            if not self.warnings:
                return f"{n} checks passed"
            return f"{n - len(self.warnings)} of {n} checks passed{warned}"
        failed = self.failed
        shown = "; ".join(r.line() for r in failed[:6])
        more = f"; and {len(failed) - 6} more" if len(failed) > 6 else ""
        return f"{len(failed)} of {n} checks failed: {shown}{more}{warned}"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _observed(result: dict[str, Any]) -> Any:
    """What a failed check saw: a few unexpected values or rows, else the observed value."""
    details = result.get("details") or {}
    rows = details.get("unexpected_rows")
    if rows is None:
        rows = result.get("partial_unexpected_list")
    if rows:  # in a fixed order: the engine returns them in any
        return sorted(_jsonable(list(rows)), key=lambda r: json.dumps(r, sort_keys=True))[
            :SAMPLE_ROWS]
    return _jsonable(result.get("observed_value"))


def _sample_rows(frame: DataFrame, check: Check) -> list[Any]:
    """A few of the rows a failed row check returned, in a fixed order."""
    query = check.args["unexpected_rows_query"].replace("{batch}", "{batch_frame}")
    rows = [r.asDict(recursive=True) for r in
            frame.sparkSession.sql(query, batch_frame=frame).limit(50).collect()]
    return sorted(_jsonable(rows), key=lambda r: json.dumps(r, sort_keys=True))[:SAMPLE_ROWS]


def _missing_values(frame: DataFrame, check: Check) -> str:
    """What a failed "contains the set" check lacks, and what is there (GX reports no
    observed value for it on an empty frame, and the whole set otherwise)."""
    column = check.args["column"]
    present = sorted({str(r[0]) for r in frame.select(column).distinct().collect()
                      if r[0] is not None})
    missing = [str(v) for v in check.args["value_set"] if str(v) not in present]
    return f"missing {', '.join(missing) or 'nothing'}; present {', '.join(present) or 'none'}"


def _raised(exception_info: Any) -> str | None:
    """The message of a metric that raised (GX keys them per metric, not at the top)."""
    if not isinstance(exception_info, dict):
        return None
    infos = [exception_info, *exception_info.values()]
    for info in infos:
        if isinstance(info, dict) and info.get("raised_exception"):
            return str(info.get("exception_message") or "an exception")[:300]
    return None


def run_gate(suites: Sequence[Suite], run_name: str = "emerge") -> GateReport:
    """Run every suite, as one GX run named ``run_name``; the results, plain."""
    sessions = {id(suite.frame.sparkSession): suite.frame.sparkSession for suite in suites}
    if len(sessions) > 1:
        raise ValidationGateError("the suites' frames belong to different Spark sessions")
    with _active_session(next(iter(sessions.values()), None)):
        return _run(suites, run_name)


@contextmanager
def _active_session(session: Any) -> Iterator[None]:
    """Make ``session`` this thread's active Spark Connect session while GX runs: GX takes
    ``SparkSession.builder.getOrCreate()``, the first session a process created unless one
    is active, and registers each batch as a temporary view there; with another session
    (a test's, a second task's) its queries would read another frame."""
    from pyspark.sql.connect.session import SparkSession

    local = SparkSession._active_session
    before = getattr(local, "session", None)
    local.session = session if session is not None else before
    try:
        yield
    finally:
        local.session = before


def _run(suites: Sequence[Suite], run_name: str) -> GateReport:
    gx_log = logging.getLogger("great_expectations")
    if gx_log.level == logging.NOTSET:  # its INFO lines are about itself, not the data
        gx_log.setLevel(logging.WARNING)
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    # a project_config gives no Data Docs site unless one is added: none is
    context = gx.get_context(mode="ephemeral", project_config=DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        progress_bars=ProgressBarsConfig(globally=False), analytics_enabled=False))
    source = context.data_sources.add_or_update_spark("emerge", persist=False)
    report = GateReport()
    for suite in suites:
        expectations = [getattr(gxe, c.kind)(**c.args, description=c.name, severity=c.severity)
                        for c in suite.checks]
        batch = source.add_dataframe_asset(suite.name).add_batch_definition_whole_dataframe(
            "all")
        gx_suite = context.suites.add(gx.ExpectationSuite(name=suite.name,
                                                          expectations=expectations))
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=suite.name, data=batch, suite=gx_suite))
        checkpoint = context.checkpoints.add(gx.Checkpoint(
            name=suite.name, validation_definitions=[definition], actions=[],
            result_format={"result_format": "SUMMARY",
                           "partial_unexpected_count": SAMPLE_ROWS}))
        outcome = checkpoint.run(batch_parameters={"dataframe": suite.frame},
                                 run_id=RunIdentifier(run_name=run_name, run_time=RUN_TIME))
        by_name = {c.name: c for c in suite.checks}
        for validation in outcome.run_results.values():
            for r in validation.results:
                name = r.expectation_config.description
                raised = _raised(r.exception_info)
                result = r.result or {}
                check = by_name[name]
                count = result.get("unexpected_count")
                observed = raised if raised is not None else _observed(result)
                if check.kind == "UnexpectedRowsExpectation":
                    count = result.get("observed_value")
                    if count and raised is None:  # GX's SUMMARY has no rows: a few, here
                        observed = _sample_rows(suite.frame, check)
                elif check.kind == "ExpectColumnDistinctValuesToContainSet" and \
                        raised is None and not r.success:
                    observed = _missing_values(suite.frame, check)
                report.results.append(CheckResult(
                    suite.name, name, bool(r.success) and raised is None, raised is not None,
                    None if count is None else int(count), observed, check.severity))
        log.debug("validation suite %s: %d checks", suite.name, len(suite.checks))
    return report
