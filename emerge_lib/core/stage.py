"""The stage contract: what a stage declares (``Stage``), what it runs with
(``StageContext``), what its function returns (``Outcome``) and what the runner reports
(``StageResult``).

Each domain room declares its stages in its own ``stage.py`` against this contract (the
adapter from configuration to the room's functions); ``emerge_lib.pipeline.registry``
collects them and ``emerge_lib.pipeline.runner.run_stage`` is the one door that runs any
of them, a mapped ingest step included. The contract lives here, below every room, so a
room can declare a stage without importing the runner that sits above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from emerge_lib.core.errors import EmergeError

if TYPE_CHECKING:
    from emerge_lib.catalog import Catalog
    from emerge_lib.core.config import Config

#: ``ingest`` stages read dump files (given paths, or the configured mirror); ``global``
#: stages rebuild a whole table; ``snapshot`` stages run once per snapshot t; ``release``
#: stages work on the release folder outside the warehouse.
Scope = Literal["ingest", "global", "snapshot", "release"]


@dataclass
class StageContext:
    """What a stage runs with: the configuration, the catalog, and where inputs and
    outputs are (``wikidata``/``wikipedia``: dump file paths; None: the configured
    mirror's dump dates)."""

    cfg: Config
    catalog: Catalog
    wikidata: Sequence[str | Path] | None = None
    wikipedia: Sequence[str | Path] | None = None
    release_dir: str | Path | None = None
    on_file: Callable[[Any], None] | None = None  # after each dump file is extracted
    on_plan: Callable[[Any], None] | None = None  # with each ingest plan, before extraction
    on_curation: Callable[[Any], None] | None = None  # curation progress (a CurateReport)
    # per-download progress (http mirrors): a dump file → a callback of byte increments
    progress_factory: Callable[[Any], Callable[[int], object]] | None = None
    # publish: a boto3 session or S3 client handed in (Airflow's amazon connection); None:
    # one from the environment's credentials (or publish.profile) on the s3 endpoint
    s3_client: Any = None
    on_transfer_total: Callable[[int], None] | None = None  # bytes a transfer will move
    on_transfer: Callable[[int], None] | None = None  # byte increments as they move

    def inputs(self, kind: str) -> Sequence[str | Path] | None:
        return self.wikidata if kind == "wikidata" else self.wikipedia

    def has_inputs(self, kind: str) -> bool:
        return has_inputs(self.cfg, kind, self.inputs(kind))


def has_inputs(cfg: Config, kind: str, paths: Sequence[str | Path] | None) -> bool:
    """Whether a wiki has something to ingest: paths, or configured dump dates."""
    dumps = cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia
    return bool(paths) or bool(dumps.dates)


def _figure(v: float) -> str:
    """A count as 1,234; a small fractional rate with two significant digits (0.33)."""
    return f"{v:.2g}" if 0 < abs(v) < 10 and v != int(v) else f"{v:,.0f}"


@dataclass(frozen=True)
class StageResult:
    """What one stage run did: rows written per table, seconds, and a few figures."""

    stage: str
    snapshot: str | None
    rows: dict[str, int]
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""  # e.g. "up to date": nothing was written
    # the stage's own report (per-file ingest summaries, the release summary; a mapped
    # step's JSON output), for callers in this process; not part of to_dict()
    detail: Any = field(default=None, compare=False, repr=False)
    # CPU seconds of this process and of the workers it reaped during the stage (0: not
    # measured); over ``seconds`` it says how many cores the stage kept busy
    cpu_seconds: float = 0.0
    step: str | None = None  # a mapped step of the stage (the ingest's plan, extract)

    def brief(self) -> str:
        """One line for logs: rows per table and a rate."""
        where = f" {self.snapshot}" if self.snapshot else ""
        name = f"{self.stage} {self.step}" if self.step else self.stage
        parts = [f"{table} {n:,} rows" for table, n in self.rows.items()]
        total = sum(self.rows.values())
        rate = ""
        if self.metrics.get("MB") and self.seconds:
            rate = f", {self.metrics['MB'] / self.seconds:.1f} MB/s"
        elif total and self.seconds:
            rate = f", {total / self.seconds:,.0f} rows/s"
        extra = "".join(f", {_figure(v)} {k}" for k, v in self.metrics.items() if k != "MB")
        what = "; ".join(parts) or "nothing written"
        note = f" ({self.note})" if self.note else ""
        cores = ""
        if self.cpu_seconds and self.seconds >= 1:
            cores = f", {self.cpu_seconds / self.seconds:.2f} cores"
        return f"{name}{where}: {what}{extra} in {self.seconds:.1f}s{rate}{cores}{note}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for Airflow's XCom and JSON reports)."""
        out = asdict(replace(self, detail=None))
        out.pop("detail")
        return out


@dataclass(frozen=True)
class Outcome:
    """What a stage function returns to the runner."""

    rows: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""
    detail: Any = None


#: A stage function: the context, the snapshot's plan (snapshot stages; None otherwise)
#: and the step's own inputs (a mapped step's JSON, an evaluation's release version).
StageFunction = Callable[..., Outcome]


class UndeclaredSettingsError(EmergeError):
    """A stage read a configuration section it does not declare (``Stage.settings``)."""


class _Undeclared:
    """Stands for a section a stage does not declare: reading anything of it raises."""

    __slots__ = ("_section", "_stage")

    def __init__(self, stage: str, section: str) -> None:
        self._stage, self._section = stage, section

    def _refuse(self, what: str) -> NoReturn:
        raise UndeclaredSettingsError(
            f"stage {self._stage} reads {what} but declares only its own settings sections: "
            f"add {self._section!r} to its Stage(settings=…) (emerge_lib/*/stage.py)")

    def __getattr__(self, name: str) -> NoReturn:
        self._refuse(f"{self._section}.{name}")

    def __bool__(self) -> NoReturn:
        self._refuse(f"the {self._section} settings")

    def __repr__(self) -> str:
        return f"<{self._section}: not declared by stage {self._stage}>"


def settings_view(cfg: Config, sections: Sequence[str], stage: str) -> Config:
    """``cfg`` as stage ``stage`` sees it: the sections it declares (and the warehouse, which
    is not a section), every other section refusing to be read (``UndeclaredSettingsError``).
    The view is a ``Config``: its methods work as long as they read declared sections."""
    undeclared = {name: _Undeclared(stage, name) for name, info in type(cfg).model_fields.items()
                  if isinstance(info.annotation, type) and hasattr(info.annotation, "model_fields")
                  and name not in sections}
    return cfg.model_copy(update=undeclared)


@dataclass(frozen=True, kw_only=True)
class Stage:
    """One stage of the registry: its name, scope, the catalog tables it reads and
    writes, the configuration sections it uses, and the function that runs it.

    A stage sees exactly the sections it declares (``settings``): the runner hands it
    :meth:`view` of the context, whose configuration refuses any other section.
    ``skip(ctx)`` says why the stage has nothing to do for this context (curation off,
    no inputs, nowhere to publish), or None when it runs: the one check that a build, a
    CLI command and an Airflow task all ask (``applies``, ``why_not``). ``steps`` are the
    stage split into parts that run as separate tasks (the ingest's plan → extract →
    commit), each run through the same door (``run_stage(..., step=name)``)."""

    name: str
    scope: Scope
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    settings: tuple[str, ...]
    run: StageFunction
    summary: str
    skip: Callable[[StageContext], str | None] = field(default=lambda ctx: None)
    steps: Mapping[str, StageFunction] = field(default_factory=dict)
    in_build: bool = True  # part of a whole build (evaluation is asked for on its own)

    def view(self, ctx: StageContext) -> StageContext:
        """``ctx`` as this stage sees it: only its declared settings sections."""
        return replace(ctx, cfg=settings_view(ctx.cfg, self.settings, self.name))

    def why_not(self, ctx: StageContext) -> str | None:
        """Why this stage has nothing to do for ``ctx`` (``skip``), or None when it runs."""
        return self.skip(self.view(ctx))

    def applies(self, ctx: StageContext) -> bool:
        """Whether this stage has something to do for ``ctx`` (``why_not`` says why not)."""
        return self.why_not(ctx) is None
