"""One typed configuration for every part of emerge.

Read from a YAML file, then overridden by environment variables named
``EMERGE__SECTION__KEY`` (double underscores separate nesting levels), so the same file
serves a laptop, CI and a cluster. Unknown keys, bad timestamps, bad URLs and impossible
window settings are rejected with the field name and the reason.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from emerge_lib.core.errors import EmergeError
from emerge_lib.core.presets import names as preset_names
from emerge_lib.core.presets import preset_path, preset_settings
from emerge_lib.core.schedule import SnapshotPlan, parse_utc

ENV_PREFIX = "EMERGE__"
log = logging.getLogger(__name__)

# docs/semantics.md §1: end qualifiers deprecate, start qualifiers are addition evidence.
DEFAULT_END_QUALIFIERS = [
    "P582", "P1326", "P576", "P570", "P730", "P2032", "P2669", "P3999", "P7125",
]
DEFAULT_START_QUALIFIERS = ["P580", "P585", "P577", "P571", "P569", "P729", "P1319", "P2031"]


class ConfigError(EmergeError, ValueError):
    """A configuration that cannot be used; the message names the field and the reason."""


UtcTimestamp = Annotated[datetime, BeforeValidator(parse_utc)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def _check_url(value: str, schemes: tuple[str, ...], field: str) -> str:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in schemes or not rest:
        raise ValueError(f"{field} must be a URL with scheme {'/'.join(schemes)}: {value!r}")
    return value


class S3Settings(_Strict):
    """Where s3:// warehouses and releases live (a MinIO-compatible server works)."""

    endpoint_url: str | None = None
    # secrets: never printed (`emerge config` shows "**********"), never logged
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    region: str = "us-east-1"
    allow_http: bool = True

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        return None if v is None else _check_url(v, ("http", "https"), "endpoint_url")

    def environment(self) -> dict[str, str]:
        """The AWS_* variables that Sail and delta-rs read."""
        env = {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region}
        if self.endpoint_url:
            env["AWS_ENDPOINT_URL"] = self.endpoint_url
            env["AWS_ENDPOINT"] = self.endpoint_url
        if self.access_key_id:
            env["AWS_ACCESS_KEY_ID"] = self.access_key_id.get_secret_value()
        if self.secret_access_key:
            env["AWS_SECRET_ACCESS_KEY"] = self.secret_access_key.get_secret_value()
        if self.allow_http:
            env["AWS_ALLOW_HTTP"] = "true"
        return env

    def storage_options(self) -> dict[str, str]:
        """The same settings as delta-rs / object_store storage options."""
        opts = {"AWS_REGION": self.region}
        if self.endpoint_url:
            opts["AWS_ENDPOINT_URL"] = self.endpoint_url
        if self.access_key_id:
            opts["AWS_ACCESS_KEY_ID"] = self.access_key_id.get_secret_value()
        if self.secret_access_key:
            opts["AWS_SECRET_ACCESS_KEY"] = self.secret_access_key.get_secret_value()
        if self.allow_http:
            opts["AWS_ALLOW_HTTP"] = "true"
        return opts


#: engine.call_timeout_s's default: 6 hours (the Airflow tasks of engine stages get twice it)
CALL_TIMEOUT_S = 6 * 3600.0
#: engine.session_timeout_s's default: a week (Sail's own is 15 minutes of idleness)
SESSION_TIMEOUT_S = 7 * 24 * 3600.0


class EngineSettings(_Strict):
    """``embedded`` starts a Sail Spark Connect server in-process; ``sc://host:port`` is remote.

    ``mode`` (embedded only): ``local`` runs the engine in threads of this process;
    ``local-cluster`` runs Sail's driver and workers as separate actors talking over RPC, as
    on a cluster. Unset: the ``SAIL_MODE`` environment variable, else ``local``.
    """

    url: str = "embedded"
    mode: Literal["local", "local-cluster"] | None = None
    startup_timeout_s: float = Field(default=60.0, gt=0)
    # the longest one engine call (a query, a write) may take before it is cancelled and its
    # stage fails in one line, to be retried: generous, for the full histories on a cluster
    call_timeout_s: float = Field(default=CALL_TIMEOUT_S, gt=0)
    # embedded only: how long the session may sit idle between calls (Sail's default, 15
    # minutes, ended a build whose curation kept the engine idle longer)
    session_timeout_s: float = Field(default=SESSION_TIMEOUT_S, ge=1)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v == "embedded":
            return v
        _check_url(v, ("sc",), "engine.url")
        host_port = v.split("://", 1)[1].split("/", 1)[0]
        if ":" in host_port:
            port = host_port.rsplit(":", 1)[1]
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"engine.url has a bad port: {v!r}")
        return v


class WikiDumps(_Strict):
    wiki: str
    dates: list[str] = Field(default_factory=list)

    @field_validator("dates")
    @classmethod
    def _dates(cls, v: list[str]) -> list[str]:
        for d in v:
            try:
                datetime.strptime(str(d), "%Y%m%d")
            except ValueError as exc:
                raise ValueError(f"dump dates are YYYYMMDD: {d!r}") from exc
        return [str(d) for d in v]


#: the wiki each dumps section reads unless it names another
DUMP_WIKIS = {"wikidata": "wikidatawiki", "wikipedia": "enwiki"}


class DumpSettings(_Strict):
    """The dump mirror (Wikimedia's layout) and how to read it."""

    mirror: str = "https://dumps.wikimedia.org"
    download_dir: str = ".emerge/dumps"
    wikidata: WikiDumps = Field(default_factory=lambda: WikiDumps(wiki=DUMP_WIKIS["wikidata"]))
    wikipedia: WikiDumps = Field(default_factory=lambda: WikiDumps(wiki=DUMP_WIKIS["wikipedia"]))
    workers: int = Field(default=0, ge=0, description="0 = one per core")
    # share of revisions, and of pages, that may be rejected before an ingest fails
    # (deleted or suppressed revisions are counted but not held against it)
    max_reject_ratio: float = Field(default=0.01, ge=0, le=1)
    # the ingest DAG's extract tasks: at least this much compressed input each (0: a file
    # each), so that a task's own start (seconds) is small beside its work and its pool
    # has files for every core; a full history dump still fills `max_tasks` groups
    extract_group_mb: float = Field(default=256, ge=0)
    # where extraction workers stage their Parquet before the commit: a local folder or
    # any pyarrow filesystem URI (s3://bucket/prefix for a cluster); unset: <warehouse>/_staging
    staging: str | None = None
    # local: a process pool of `workers` here; spark: one Spark task per file (mapInArrow),
    # for a cluster (the staging folder must then be reachable from every executor)
    executor: Literal["local", "spark"] = "local"
    # read every file again and rewrite every page it holds, ignoring what the warehouse
    # already has (after a fix to the extraction); normally files already ingested are skipped
    reingest: bool = False
    # history files are published as bz2 and as 7z; where the mirror lists both, read this
    # one (7z: about half the download and a fraction of bz2's decompression CPU)
    prefer: Literal["7z", "bz2"] = "7z"
    # the mirror is generated, not Wikimedia's (`emerge sample` writes true into the
    # config.yaml of its world): the release's card, croissant.json and manifest say so
    synthetic: bool = False

    @field_validator("mirror")
    @classmethod
    def _mirror(cls, v: str) -> str:
        return _check_url(v, ("http", "https", "file"), "dumps.mirror")

    @model_validator(mode="before")
    @classmethod
    def _wiki_names(cls, data: Any) -> Any:
        """A wiki's section given only its dump dates (a run's ``dump_date``,
        ``EMERGE__DUMPS__WIKIDATA__DATES``) keeps its wiki."""
        if isinstance(data, dict):
            data = dict(data)
            for kind, wiki in DUMP_WIKIS.items():
                section = data.get(kind)
                if isinstance(section, dict) and "wiki" not in section:
                    data[kind] = {"wiki": wiki, **section}
        return data


class SnapshotSettings(_Strict):
    """Snapshot timestamps t and their windows τ_k = t + k·window_days."""

    timestamps: list[UtcTimestamp] = Field(default_factory=list)
    windows: int = Field(default=5, ge=1, le=52)
    window_days: float = Field(default=7, gt=0, le=366)
    # what a whole build builds again. all: every configured snapshot, from the whole
    # history (the released data's rules let new history change older snapshots: R2a, R3,
    # R4, merges). new: a snapshot an earlier build built whole, with the same settings
    # and rows since, is kept as it was built (pipeline/built.py): a quarter builds only
    # its new snapshot. Not in dataset_settings: a build's choice, not the rows' shape
    rebuild: Literal["all", "new"] = "all"

    @field_validator("timestamps")
    @classmethod
    def _sorted_unique(cls, v: list[datetime]) -> list[datetime]:
        if len(set(v)) != len(v):
            raise ValueError("snapshot timestamps must be unique")
        return sorted(v)


class StabilitySettings(_Strict):
    kg_hours: float = Field(default=168, ge=0)
    passage_minutes: float = Field(default=30, ge=0)
    # auto: a run recomputes only the keys whose timelines changed since the last run
    # (the whole table when it has no usable record of it); full: always the whole table
    # (EMERGE__STABILITY__REBUILD=full forces one). Not a release's content: the rows are
    # the same either way (emerge_lib.transform.stability)
    rebuild: Literal["auto", "full"] = "auto"


class PassageSettings(_Strict):
    # cumulative (the released data): a passage of delta k is new since t and first appeared
    # in (t, τ_k]; first_appearance (docs/semantics.md §1.1): it first appeared in
    # (τ_{k-1}, τ_k]
    windows: Literal["cumulative", "first_appearance"] = "cumulative"
    min_tokens: int = Field(default=25, ge=1)
    max_tokens: int = Field(default=1000, ge=1)
    max_markup_ratio: float = Field(default=0.5, ge=0, le=1)
    min_entities: int = Field(default=2, ge=1)
    article_entity_counts: bool = True
    title_prefix: bool = True
    max_redirect_hops: int = Field(default=5, ge=0)  # redirects followed per link target
    # unlinked repeats (their s03 coreference_regex, on in their run): a plain-text
    # occurrence of an anchor that the revision's earlier new paragraphs linked is a
    # mention too (emerge_lib.text.repeats)
    repeat_mentions: bool = True

    @model_validator(mode="after")
    def _range(self) -> PassageSettings:
        if self.min_tokens > self.max_tokens:
            raise ValueError(
                f"passages.min_tokens ({self.min_tokens}) exceeds max_tokens ({self.max_tokens})"
            )
        return self


def _pid_list(v: list[str]) -> list[str]:
    for pid in v:
        if not (isinstance(pid, str) and pid.startswith("P") and pid[1:].isdigit()):
            raise ValueError(f"not a property id: {pid!r}")
    return v


PidList = Annotated[list[str], BeforeValidator(lambda v: _pid_list(list(v)))]


class DeltaSettings(_Strict):
    """How additions and deprecations are classified (defaults: what the released data shows,
    docs/semantics.md §1.3; the §1.1-1.2 rule is ``not_in_snapshot`` without window additions)."""

    # created_after_snapshot: an entity is emerging when its item was created at or after t;
    # not_in_snapshot: when it is not in V_t
    emerging: Literal["created_after_snapshot", "not_in_snapshot"] = "created_after_snapshot"
    # a triple added inside the window whose end qualifier is dated inside it is also D
    deprecate_window_additions: bool = True
    # R2a (the authors' selection rules, docs/data-model.md): a removal (D without an end
    # qualifier) counts only when the triple is not added back within this many years after
    # τ_k (theirs: 15); 0: every removal counts (the no-selection-rules preset)
    permanent_removal_years: float = Field(default=15.0, ge=0)
    # R4: an item's creation time is the earliest over it and the items redirected to it
    # at the end of the ingested history (the no-selection-rules preset: false)
    creation_over_redirects: bool = True
    # item merges, their s02: every QID read through the redirects at the end of the
    # ingested history, for the whole history (a merged item's statements and states are
    # the surviving item's; histories of one key merged); false: a merged item leaves V
    # at its merge (the no-selection-rules preset)
    resolve_redirects: bool = True
    # their qualifier_info: a removal (D by removed or rank) without an end qualifier
    # carries the start qualifier dated inside the window on its statement as it held at t,
    # and a D carrying a qualifier is judged as one with an end qualifier (the
    # no-selection-rules preset: false, a removal carries none)
    removal_start_qualifier: bool = True


class AlignSettings(_Strict):
    """Which aligned passages become release lines: the authors' selection rules R1, R2b,
    R3 and R5 (docs/data-model.md, with their code's file and line); each off in the
    no-selection-rules preset (``-c no-selection-rules``)."""

    # R1: a line needs a delta triple (E, EE or D) between two entities it mentions
    between_mentions: bool = True
    # R2b: a line must not predate the latest removal among its delta triples
    passage_after_removal: bool = True
    # R3: an EE-KG triple must stay in the KG this many days past τ_k, or to the end of
    # the history (theirs: 182.5); 0: no persistence asked
    ee_kg_persistence_days: float = Field(default=182.5, ge=0)
    # R5: their "interesting passage" test: lines whose delta triples are only plain
    # removals, or whose delta and EE-KG triples are at most ``interesting_min_ratio`` of
    # the entities mentioned, go, unless an end qualifier or an emerging entity keeps them
    interesting: bool = True
    interesting_min_ratio: float = Field(default=0.2, ge=0, le=1)
    # their s07: a triple whose relation is not in the snapshot's relations R_t goes from
    # its line, and a line left without an E, EE, EE-KG or D triple goes (after R1-R5)
    relations_in_snapshot: bool = True


class LLMRoute(_Strict):
    """One model of curation: the name the release records (``llm_name``), where it is
    served (an OpenAI-compatible base URL, ``…/v1``), its served name and dialect."""

    name: str
    url: str | None = None
    model: str | None = None  # the served model name (default: name)
    backend: Literal["vllm", "llamacpp", "openai"] = "vllm"
    api_key: SecretStr | None = None
    # the weights' precision as served (bf16, fp8, a GGUF type such as Q4_1): the release's
    # card and croissant.json state it beside the model; unset, they say "not recorded"
    quantization: str | None = None
    # the servers behind ``url`` (GPU workers of this model): the Airflow pool and Celery
    # queue of this route's curate task get one slot per worker (emerge_lib.airflow.pools)
    workers: int = Field(default=1, ge=1, le=256)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return None if v is None else _check_url(v, ("http", "https"), "curation url")

    @property
    def served(self) -> str:
        return self.model or self.name


Judge = Literal["additions", "deprecations"]
Op = Literal["X", "E", "EE", "EE-KG", "D"]  # the TKGU operations
#: emerge_lib.evaluation.metrics.ALL_METRICS (a test holds the two lists equal)
Metric = Literal["recall", "completeness", "qid_precision", "qid_recall", "qid_f1",
                 "pred_completeness"]


def _judges(*names: Judge) -> list[Judge]:
    return list(names)


def _ops(*ops: Op) -> list[Op]:
    return list(ops)


def _metrics(*metrics: Metric) -> list[Metric]:
    return list(metrics)

# the models the released data names (the paper: Llama 3.1 8B for additions, 405B for
# deprecations); the names a release records unless a route says otherwise
RELEASED_LLM: dict[str, str] = {"additions": "Meta-Llama-3.1-8B",
                                "deprecations": "Meta-Llama-3.1-405B"}


class CurationSettings(_Strict):
    """LLM curation (the paper's Appendix B prompts): which models judge which prompt,
    where they are served, and how hard to try. Off unless ``enabled`` (or ``--llm-url``)."""

    enabled: bool = False
    additions: LLMRoute = Field(default_factory=lambda: LLMRoute(name=RELEASED_LLM["additions"]))
    deprecations: LLMRoute = Field(
        default_factory=lambda: LLMRoute(name=RELEASED_LLM["deprecations"]))
    # who judges what (the paper: additions by the additions model; deprecations by the
    # deprecations model, and also by the additions model when the D carries no qualifier);
    # a triple is asserted when every judge of its rule says YES
    assertion_judges: list[Judge] = Field(default_factory=lambda: _judges("additions"))
    deprecation_judges: list[Judge] = Field(default_factory=lambda: _judges("deprecations"))
    deprecation_without_qualifier_judges: list[Judge] = Field(
        default_factory=lambda: _judges("deprecations", "additions"))
    # what an unparsed (or missing) verdict leaves unknown: "operation", the authors' s07
    # (S07:98-121 asks each operation's judges apart and counts a verdict it cannot read as
    # no: a two-operation triple keeps the operation whose judges said YES); "triple", the
    # earlier rule (the whole triple unknown, none of its operations asserted: the
    # no-selection-rules preset). A triple none of whose operations could be judged is
    # unknown either way
    unparsed_fails: Literal["operation", "triple"] = "operation"
    # answer QA, the authors' Part 3 (docs/curation.md): a later run asks again an answer
    # stored as UNPARSED, or degenerate (their garbage flags; one model's answer repeated
    # word for word for prompts about ``degenerate_repeats`` different triple lists), as
    # long as it was asked at most ``reasks`` times; the new answer replaces it and keeps
    # what it replaced (0 and false: the earlier behaviour, the no-selection-rules preset)
    reasks: int = Field(default=1, ge=0)
    degenerate_check: bool = True
    degenerate_repeats: int = Field(default=3, ge=0)
    # a request of one triple takes the authors' single-triple prompt (their prompts_v1,
    # one unnumbered verdict); false: the paper's list prompt with one item (the
    # no-selection-rules preset)
    single_prompts: bool = True
    # the final judge (the authors' s05 v9, after their test draw): the route whose model
    # is asked, with the paper's prompts, for every operation of every kept line; its
    # verdicts are the release's gold (``asserted_operations``: evaluate's llm-asserted
    # filter, Table 2's supported triples). Theirs: Llama-3.1-405B, prompt_v1 (the
    # deprecations route); null: no final judge, the configured judges' rule is the gold
    final_judge: Judge | None = "deprecations"
    structured: bool = True  # constrained decoding: every answer parses
    concurrency: int = Field(default=64, ge=1)
    timeout_s: float = Field(default=300.0, gt=0)
    retries: int = Field(default=3, ge=0)  # per request, transient failures and unparsed answers
    max_requests: int | None = Field(default=None, ge=1)  # a budget per run (DAG: per model's task)
    max_tokens_per_triple: int = Field(default=64, ge=8)
    temperature: float = Field(default=0.0, ge=0, le=2)
    flush_seconds: float = Field(default=5.0, gt=0)  # verdicts reach the table this often
    flush_rows: int = Field(default=1000, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _route_names(cls, data: Any) -> Any:
        """A route given only where it is served (``{url: …}``) keeps the name the release
        records: overriding the endpoint must not rename the judge."""
        if isinstance(data, dict):
            data = dict(data)
            for judge, name in RELEASED_LLM.items():
                route = data.get(judge)
                if isinstance(route, dict) and "name" not in route:
                    data[judge] = {"name": name, **route}
        return data

    def route(self, judge: Judge) -> LLMRoute:
        return self.additions if judge == "additions" else self.deprecations


class PublishSettings(_Strict):
    """Where ``emerge publish`` (and the ``publish`` stage of a build) puts a release, and
    how hard it pushes. Credentials never come from here: the environment, a profile, or
    a boto3 session handed in (Airflow's connection); the endpoint and region are ``s3``'s."""

    to: str | None = None  # s3://bucket/prefix; unset: a build does not publish
    profile: str | None = None  # a named AWS profile (default: the environment's chain)
    workers: int = Field(default=8, ge=1, le=64)  # parallel requests (parts and files)
    part_size_mb: int = Field(default=16, ge=5, le=5120)  # multipart part size (S3: >= 5 MiB)
    retries: int = Field(default=5, ge=0, le=20)  # per request, transient failures

    @field_validator("to")
    @classmethod
    def _to(cls, v: str | None) -> str | None:
        return None if v is None else _check_url(v, ("s3",), "publish.to")


class QualifierSettings(_Strict):
    end: PidList = Field(default_factory=lambda: list(DEFAULT_END_QUALIFIERS))
    start: PidList = Field(default_factory=lambda: list(DEFAULT_START_QUALIFIERS))


class SelectionSettings(_Strict):
    """Near-duplicate removal and the test split, as the authors' s07/s07b do them, per
    delta file: kept passages are pairwise at most ``max_jaccard`` similar (token sets)
    and at least ``min_edit_distance`` apart (Levenshtein / (len1 + len2))."""

    # The defaults are the authors' selection: their rules R1-R5 (deltas, align), their
    # structural guards, the support rule after curation, their two dedup passes and their
    # two-stage test draw. The selection before those (every aligned passage a line, one
    # greedy dedup pass, one draw), which earlier releases used, is the configuration file
    # ``-c no-selection-rules`` (emerge_lib/core/presets/).
    dedup: bool = True
    # authors: s07's pass 1 (near-identical text, length-sorted) then pass 2 (the
    # thresholds within lines of the same triples); greedy: one pass, the thresholds
    # between any two lines that share a page, their triples or a rare token
    dedup_passes: Literal["authors", "greedy"] = "authors"
    max_jaccard: float = Field(default=0.5, ge=0, le=1)
    min_edit_distance: float = Field(default=0.2, ge=0, le=1)
    # s07's structural guards: lines with template braces, mostly table or list markup
    guards: bool = True
    # a quirk of theirs, kept: the guards read the released passage split at its first
    # ":" (S07:372-373), so a title holding a colon adds its rest and a ":" to the text
    # (false: the paragraph alone; the no-selection-rules preset, whose guards are off)
    guard_split_at_colon: bool = True
    # s07: after curation, a line needs a delta triple (E, EE, EE-KG or D) its judges
    # support; its other triples stay, with their verdicts
    require_supported: bool = True
    # processes selecting a snapshot's windows (each window on its own: transform/select.py);
    # 1: the driver alone. How the rows are made, not what they are: not in dataset_settings
    workers: int = Field(default=1, ge=1, le=64)
    evaluation_per_delta: int = Field(default=100, ge=0)  # lines per delta file
    evaluation_min_per_op: int = Field(default=40, ge=0)  # filled first, in this op order
    evaluation_ops: list[Op] = Field(default_factory=lambda: _ops("D", "EE-KG", "EE", "E"))
    # s07b's first stage: [lines, minimum per op] drawn first (theirs: 1000, 400), the
    # test split then drawn from those; [] for one draw
    evaluation_pre_draw: list[int] = Field(default_factory=lambda: [1000, 400])
    seed: int = 0

    @field_validator("evaluation_pre_draw")
    @classmethod
    def _pre_draw(cls, v: list[int]) -> list[int]:
        if v and (len(v) != 2 or min(v) < 0):
            raise ValueError("evaluation_pre_draw must be [lines, minimum per op] or []")
        return v


class ValidationSettings(_Strict):
    """The Great Expectations gate (docs/validation.md): what must hold before a release
    may be published."""

    enabled: bool = True
    required_ops: list[Op] = Field(  # each present per snapshot
        default_factory=lambda: _ops("X", "E", "EE", "EE-KG", "D"))
    min_instances: int = Field(default=1, ge=0)  # per snapshot
    # what a snapshot without one of the required ops (or with fewer instances) does to the
    # gate: "warn" (released; the validation verdict says what is empty: a small or quiet
    # history may rightly have no removal), or "fail" (nothing is released)
    empty: Literal["warn", "fail"] = "warn"
    max_instances: int | None = Field(default=None, ge=0)
    max_unparsed_share: float = Field(default=0.05, ge=0, le=1)  # of a snapshot's verdicts
    passage_median_tokens: tuple[float, float] = (25, 1000)  # bounds of the median length
    # the authors' s07c, read again at the gate: no two kept lines of a delta file with
    # the same triples are near-duplicates by pass 2's thresholds (and how many lines of
    # one article are, a warning); with the authors' two dedup passes only
    near_duplicates: bool = True
    # run a snapshot's checks again even when they passed on exactly the rows its tables
    # hold, with the same suites (otherwise kept: emerge_lib.validation.validate)
    rerun: bool = False


class SplitSettings(_Strict):
    """The release's leak-free splits (docs/using-a-release.md "Leak-free splits"): ``test``
    is the authors' stratified draw (``evaluation_set/``); every other line whose article
    has no line in ``test`` goes to ``validation`` or ``train`` by a hash of its page_id."""

    # the share of the remaining articles (not lines) that go to validation
    validation_share: float = Field(default=0.1, ge=0, le=1)


class ContextSettings(_Strict):
    """The k-hop context of each released line (``parquet/context/``): the triples of the
    line's snapshot KG within ``hops`` of the entities the line mentions."""

    hops: int = Field(default=1, ge=1, le=3)
    max_triples: int = Field(default=50, ge=0)  # per line, nearest hop first, then (s, p, o)


class ReleaseSettings(_Strict):
    """What the release derives from its lines beyond the authors' files, and how it is
    written."""

    splits: SplitSettings = Field(default_factory=SplitSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    # carry a snapshot's files over from the release already in the folder (hard links,
    # sha256 verified) when nothing they are made of changed (release/carry.py); false:
    # every file rewritten. How the files are made, not what they hold: not in
    # dataset_settings, so either way gives the same bytes
    carry_unchanged: bool = True
    # processes writing the release's independent files (each window of a snapshot written,
    # each KG table, each snapshot's context, each table released whole, each snapshot's
    # splits and statistics on the card: release/units.py);
    # 1: all in the driver's process; 0: min(4, usable cores) when the snapshots written
    # read 64 MB of Parquet or more, else 1. Not in dataset_settings either: any number
    # gives the same bytes
    workers: int = Field(default=0, ge=0, le=64)
    # what the manifest, card and croissant.json say the release was built from. history:
    # per wiki, the day before which every revision is in and the day deletions and moves
    # are known to (release/provenance.py: the same history gives the same bytes, read from
    # a full dump or from a dump and the daily increments since); files: every dump file
    # the warehouse read, with its sha1. Not in dataset_settings: the manifest's own key
    # (``history`` or ``dumps``) says which
    provenance: Literal["history", "files"] = "history"

    def most_workers(self) -> int:
        """What ``workers: 0`` uses for a large release: min(4, usable cores)."""
        from emerge_lib.core.resources import cpu_count

        return min(4, cpu_count())


class EvaluationSettings(_Strict):
    """What the evaluation DAG scores each published release with (``emerge evaluate``'s
    settings): prediction files, metrics, the embedding model, where results go."""

    predictions: list[str] = Field(default_factory=list)  # JSONL {hash_id, model, predicted}
    metrics: list[Metric] = Field(default_factory=lambda: _metrics(
        "recall", "completeness", "qid_precision", "qid_recall", "qid_f1", "pred_completeness"))
    threshold: float = Field(default=0.9, ge=0, le=1)
    # auto: LLM-supported gold where the release is curated (the paper's tables), else all
    gold_filter: Literal["auto", "all", "llm-asserted", "human"] = "auto"
    embedding_model: str = "all-mpnet-base-v2"
    out: str = ".emerge/evaluation"  # one folder per snapshot and release version under it


class Config(_Strict):
    """The whole configuration. Every number of docs/semantics.md §1.1 is a field here."""

    warehouse: str = ".emerge/warehouse"
    engine: EngineSettings = Field(default_factory=EngineSettings)
    s3: S3Settings = Field(default_factory=S3Settings)
    dumps: DumpSettings = Field(default_factory=DumpSettings)
    snapshots: SnapshotSettings = Field(default_factory=SnapshotSettings)
    stability: StabilitySettings = Field(default_factory=StabilitySettings)
    passages: PassageSettings = Field(default_factory=PassageSettings)
    deltas: DeltaSettings = Field(default_factory=DeltaSettings)
    align: AlignSettings = Field(default_factory=AlignSettings)
    qualifiers: QualifierSettings = Field(default_factory=QualifierSettings)
    curation: CurationSettings = Field(default_factory=CurationSettings)
    selection: SelectionSettings = Field(default_factory=SelectionSettings)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    release: ReleaseSettings = Field(default_factory=ReleaseSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    @field_validator("warehouse")
    @classmethod
    def _warehouse(cls, v: str) -> str:
        if "://" in v:
            _check_url(v, ("s3", "s3a", "file"), "warehouse")
        elif not v.strip():
            raise ValueError("warehouse must not be empty")
        return v

    def plans(self) -> list[SnapshotPlan]:
        """Every configured snapshot with its windows, oldest first."""
        s = self.snapshots
        return [SnapshotPlan(t, s.windows, s.window_days) for t in s.timestamps]

    def plan(self, snapshot: datetime | str) -> SnapshotPlan:
        """Any snapshot (configured or not) with the configured windows."""
        return SnapshotPlan(parse_utc(snapshot), self.snapshots.windows, self.snapshots.window_days)

    @property
    def workers(self) -> int:
        """Extraction processes: ``dumps.workers``, 0 meaning one per usable core."""
        from emerge_lib.core.resources import cpu_count

        return self.dumps.workers or cpu_count()

    @property
    def staging(self) -> str:
        return self.dumps.staging or f"{self.warehouse.rstrip('/')}/_staging"

    def dataset_settings(self) -> dict[str, Any]:
        """The settings that decide a release's content (not where it runs): snapshots,
        windows, stability, passage and delta semantics, qualifiers, curation's judges
        and model names (not their endpoints), and whether the dumps were generated
        (``synthetic``). The release manifest records them."""
        c = self.curation
        return {**self.model_dump(mode="json", include={
                    "snapshots", "stability", "passages", "deltas", "align", "qualifiers",
                    "selection", "validation", "release"},
                    exclude={"release": {"carry_unchanged", "workers", "provenance"},
                             "selection": {"workers"}, "stability": {"rebuild"},
                             "snapshots": {"rebuild"},
                             "validation": {"rerun"}}),
                "curation": {"enabled": c.enabled, "additions": c.additions.name,
                             "deprecations": c.deprecations.name,
                             "assertion_judges": c.assertion_judges,
                             "deprecation_judges": c.deprecation_judges,
                             "deprecation_without_qualifier_judges":
                                 c.deprecation_without_qualifier_judges,
                             "structured": c.structured, "temperature": c.temperature},
                "synthetic": self.dumps.synthetic}

    def redacted(self) -> dict[str, Any]:
        """The configuration as plain data with secrets masked (for printing and logs)."""
        return self.model_dump(mode="json")


def _set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        nxt = node.setdefault(key, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"{'.'.join(path)}: cannot override inside a non-mapping")
        node = nxt
    node[path[-1]] = value


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``EMERGE__SNAPSHOTS__WINDOWS=3`` → ``{"snapshots": {"windows": 3}}`` (values are YAML).

    A secret (``EMERGE__S3__SECRET_ACCESS_KEY``, ``…__API_KEY``: a SecretStr setting) is
    taken as the plain string it is, never as YAML, and masked in every later line: read
    as YAML, a key starting with ``*`` showed in an error minus its first character, one
    starting with ``[ { ! @ % "`` or a backtick failed every command, ``null`` and ``~``
    unset it and `` #…`` cut it. Any other value that is not YAML is one line naming its
    variable, the value masked."""
    from emerge_lib.core.logs import register_secrets

    environ = os.environ if environ is None else environ
    tree: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
        if not path:
            continue
        if _is_secret(path[-1]):
            register_secrets([raw])
            _set_path(tree, path, raw)
            continue
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            # the parser quotes parts of the value: never shown
            problem = re.sub(r"'[^']*'", "…", str(getattr(exc, "problem", "") or "invalid"))
            where = f"column {mark.column + 1}: " if mark is not None else ""
            raise ConfigError(f"{name}: not a YAML value ({where}{problem}; the value is not "
                              "shown); quote it, '\"…\"', to give a string") from None
        _set_path(tree, path, value)
    return tree


def _is_secret(key: str) -> bool:
    """Whether a setting's key names a secret (a SecretStr field; a key named like a
    credential is not enough: ``max_tokens`` is a number)."""
    return key in _SECRET_FIELDS


def _secret_fields(model: type[BaseModel]) -> set[str]:
    """The names of every SecretStr field of ``model`` and of the models it holds."""
    import typing

    names: set[str] = set()
    for name, info in model.model_fields.items():
        for arg in [info.annotation, *typing.get_args(info.annotation)]:
            inner = [arg, *typing.get_args(arg)]
            if SecretStr in inner:
                names.add(name)
            for item in inner:
                if isinstance(item, type) and issubclass(item, BaseModel) and item is not model:
                    names |= _secret_fields(item)
    return names


def deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on it, nested sections merged key by key."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


#: ``-c`` as given: a file or a preset's name, or several of them, layered in order
ConfigFiles = str | Path | Sequence[str | Path] | None


@dataclass(frozen=True)
class Layer:
    """One configuration file laid over the defaults: where it came from (``label``), its
    settings, and the folder its relative paths resolve against (None: a preset)."""

    label: str
    data: dict[str, Any]
    folder: Path | None


def _read_yaml(p: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        hint = f" (presets: {', '.join(preset_names())})" if "/" not in str(p) else ""
        raise ConfigError(f"configuration file not found: {p}{hint}") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder, not a configuration file") from None
    except PermissionError:
        raise ConfigError(f"{p}: not readable (permission denied)") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); expected YAML") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {' '.join(str(exc).split())}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{p}: the top level must be a mapping")
    return loaded


def _deprecated(data: dict[str, Any], label: str) -> list[Layer]:
    """The presets an old key of ``data`` stands for, the key taken out with a one-line
    deprecation message: ``selection.rules`` (``none``: the no-selection-rules preset,
    under ``data``; ``authors``: the defaults)."""
    selection = data.get("selection")
    if not isinstance(selection, Mapping) or "rules" not in selection:
        return []
    rules = selection["rules"]
    data["selection"] = {k: v for k, v in selection.items() if k != "rules"}
    log.warning("%s: selection.rules is deprecated: the authors' rules are the defaults; "
                "the selection before them is the file `-c no-selection-rules`", label)
    if rules == "none":
        return [Layer("preset no-selection-rules (selection.rules: none)",
                      preset_settings("no-selection-rules"), None)]
    if rules != "authors":
        raise ConfigError(f"{label}: selection.rules must be authors or none, not {rules!r}")
    return []


def config_layers(paths: ConfigFiles) -> list[Layer]:
    """The files of ``-c``, each a path or, where no file of that name exists, a preset's
    name (``emerge_lib/core/presets/``), in the order they are laid over the defaults."""
    if paths is None:
        return []
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    layers: list[Layer] = []
    for entry in given:
        p = Path(entry)
        preset = preset_path(str(entry)) if not p.exists() else None
        if preset is not None:
            layer = Layer(f"preset {entry}", _read_yaml(preset), None)
        else:
            layer = Layer(str(p), _read_yaml(p), p.resolve().parent)
        layers += _deprecated(layer.data, layer.label) + [layer]
    return layers


def load_config(
    path: ConfigFiles = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """The defaults, then the files of ``path`` in order (each a YAML file or a preset's
    name: :func:`config_layers`), then environment overrides, then explicit overrides.

    Relative local paths (warehouse, evaluation.out and predictions, dumps.download_dir
    and staging, a file:// mirror) resolve where the user wrote them: those in a file
    against the file's folder, and the defaults, when a file is given, against the last
    file's (a config travels with its data); those from the environment or a flag against
    the current directory.
    """
    layers = config_layers(path)
    data: dict[str, Any] = {}
    for layer in layers:
        data = deep_merge(data, _anchor(layer.data, layer.folder) if layer.folder else layer.data)
    source = " + ".join(layer.label for layer in layers) or "defaults"
    cwd = Path.cwd()
    env = env_overrides(environ)
    if env:
        source += " + EMERGE__* environment"
        layers_env = _deprecated(env, "EMERGE__* environment")
        for layer in layers_env:
            data = deep_merge(data, layer.data)
    data = deep_merge(data, _anchor(env, cwd))
    if overrides:
        source += " + command-line flags"
        flags = dict(overrides)
        for layer in _deprecated(flags, "command-line flags"):
            data = deep_merge(data, layer.data)
        data = deep_merge(data, _anchor(flags, cwd))
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None
    folders = [layer.folder for layer in layers if layer.folder is not None]
    if folders:
        cfg = _resolve_relative(cfg, folders[-1])
    from emerge_lib.core.logs import register_secrets

    register_secrets(_secret_values(cfg))
    return cfg


def _secret_values(node: Any) -> list[str]:
    """Every SecretStr value in the configuration (masked in every log line)."""
    if isinstance(node, SecretStr):
        return [node.get_secret_value()]
    if isinstance(node, BaseModel):
        return [v for name in type(node).model_fields
                for v in _secret_values(getattr(node, name))]
    if isinstance(node, list | tuple):
        return [v for item in node for v in _secret_values(item)]
    if isinstance(node, dict):
        return [v for item in node.values() for v in _secret_values(item)]
    return []


def _local_relative(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "://" not in value \
        and not Path(value).is_absolute()


def _anchor(tree: dict[str, Any], base: Path) -> dict[str, Any]:
    """``tree`` (raw settings, before validation) with its relative local paths made
    absolute against ``base``: the folder of the file, or the current directory for the
    environment and the flags."""
    out = dict(tree)

    def section(name: str) -> dict[str, Any] | None:
        value = out.get(name)
        if not isinstance(value, Mapping):
            return None
        copied = out[name] = dict(value)
        return copied

    if _local_relative(out.get("warehouse")):
        out["warehouse"] = str((base / out["warehouse"]).resolve())
    if (evaluation := section("evaluation")) is not None:
        if _local_relative(evaluation.get("out")):
            evaluation["out"] = str((base / evaluation["out"]).resolve())
        if isinstance(evaluation.get("predictions"), list):
            evaluation["predictions"] = [str((base / p).resolve()) if _local_relative(p) else p
                                         for p in evaluation["predictions"]]
    if (dumps := section("dumps")) is not None:
        for key in ("download_dir", "staging"):
            if _local_relative(dumps.get(key)):
                dumps[key] = str((base / dumps[key]).resolve())
        mirror = dumps.get("mirror")
        if isinstance(mirror, str) and mirror.startswith("file://") \
                and not mirror.startswith("file:///"):
            dumps["mirror"] = (base / mirror[len("file://"):]).resolve().as_uri()
    return out


def _resolve_relative(cfg: Config, base: Path) -> Config:
    if "://" not in cfg.warehouse and not Path(cfg.warehouse).is_absolute():
        cfg.warehouse = str((base / cfg.warehouse).resolve())
    if "://" not in cfg.evaluation.out and not Path(cfg.evaluation.out).is_absolute():
        cfg.evaluation.out = str((base / cfg.evaluation.out).resolve())
    cfg.evaluation.predictions = [
        p if "://" in p or Path(p).is_absolute() else str((base / p).resolve())
        for p in cfg.evaluation.predictions]
    if not Path(cfg.dumps.download_dir).is_absolute():
        cfg.dumps.download_dir = str((base / cfg.dumps.download_dir).resolve())
    staging = cfg.dumps.staging
    if staging and "://" not in staging and not Path(staging).is_absolute():
        cfg.dumps.staging = str((base / staging).resolve())
    mirror = cfg.dumps.mirror
    if mirror.startswith("file://") and not mirror.startswith("file:///"):
        cfg.dumps.mirror = (base / mirror[len("file://"):]).resolve().as_uri()
    return cfg


#: the keys of the configuration's secret settings (taken as plain strings from the
#: environment: :func:`env_overrides`)
_SECRET_FIELDS = _secret_fields(Config)
