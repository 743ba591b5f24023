"""What the sub-commands share: flags → configuration, and progress bars that log lines
do not tear (log records are written through tqdm while a bar is shown)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emerge_lib.core.config import Config
    from emerge_lib.core.schedule import SnapshotPlan
    from emerge_lib.core.stage import StageContext, StageResult
    from emerge_lib.curation.verdicts import CurateReport
    from emerge_lib.ingest.plan import IngestPlan
    from emerge_lib.ingest.staging import FileSummary


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter (descriptions re-wrapped to the terminal), but an ``examples:``
    epilog keeps its lines: a command line wrapped in the middle could not be pasted."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


EXAMPLES = "examples:"


def examples(parser: argparse.ArgumentParser, *lines: str) -> None:
    """Give ``parser`` an ``examples:`` epilog: one command line each (a test parses every
    one, so an example cannot name a flag the command does not have)."""
    parser.epilog = "\n".join([EXAMPLES, *(f"  {line}" for line in lines)])
    if parser.formatter_class is argparse.HelpFormatter:
        parser.formatter_class = HelpFormatter


def config_flag(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``-c FILE|PRESET``, repeatable: configuration files (or presets' names: ``paper``,
    ``paper-v1``, ``no-selection-rules``) laid over the defaults in order, the flags over
    them."""
    parser.add_argument("--config", "-c", action="append", metavar="FILE|PRESET",
                        help="a YAML configuration file or a preset's name (paper, "
                             "paper-v1, no-selection-rules); repeatable: each laid over the "
                             "one before"
                             + (f" ({what})" if what else ""))


class Renamed(argparse.Action):
    """An old flag name still accepted: it sets the new flag's value, with one line on
    stderr saying the new name."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kw: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"emerge: {option_string} is deprecated: it is {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum`` (``--items -5`` is refused)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value

    return parse


def load(args: argparse.Namespace, **sections: Any) -> Config:
    """The configuration of ``--config`` with the common flags (and ``sections``) on top."""
    from emerge_lib.core.config import load_config

    overrides: dict[str, Any] = {k: v for k, v in sections.items() if v}
    if getattr(args, "warehouse", None):
        overrides["warehouse"] = args.warehouse
    if getattr(args, "engine", None):
        overrides["engine"] = {"url": args.engine}
    dumps: dict[str, Any] = dict(overrides.pop("dumps", {}) or {})
    if getattr(args, "workers", None) is not None:
        dumps["workers"] = args.workers
    if dumps:
        overrides["dumps"] = dumps
    return load_config(getattr(args, "config", None), overrides=overrides)


def require_warehouse(cfg: Config, command: str) -> None:
    """Refuse, with one line, a warehouse that does not exist or holds no table (on S3: one
    that cannot be reached, read or holds nothing, in publish's words): a command that
    reads one would otherwise succeed on nothing."""
    from pathlib import Path

    from emerge_lib.core.errors import EmergeError

    if cfg.warehouse.startswith("s3://"):
        from emerge_lib.publish.s3 import probe_prefix

        if not probe_prefix(cfg.warehouse, cfg.s3):
            raise EmergeError(f"{command}: the warehouse {cfg.warehouse} is empty; give "
                              "--warehouse (or -c) of a built one, or build it first with "
                              "`emerge build`")
        return
    if "://" in cfg.warehouse:
        return
    root = Path(cfg.warehouse)
    if not root.is_dir() or not any((p / "_delta_log").is_dir() for p in root.iterdir()):
        what = "does not exist" if not root.exists() else (
            "is not a folder" if not root.is_dir() else "holds no table")
        raise EmergeError(f"{command}: the warehouse {root} {what}; give --warehouse (or "
                          "-c) of a built one, or build it first with `emerge build`")


@contextmanager
def bars() -> Iterator[None]:
    """Route log records through tqdm while progress bars are drawn."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    with logging_redirect_tqdm():
        yield


def ingest_progress(ctx: StageContext) -> None:
    """Per-file byte bars for the ingest stages of ``ctx`` (one bar per plan)."""
    from tqdm import tqdm

    state: dict[str, Any] = {}

    def on_plan(plan: IngestPlan) -> None:
        if state.get("bar") is not None:
            state["bar"].close()
        pending = plan.pending
        state["bar"] = tqdm(total=sum(f.bytes for f in pending), unit="B", unit_scale=True,
                            desc=plan.wiki, leave=False, disable=None) if pending else None

    def on_file(summary: FileSummary) -> None:
        if state.get("bar") is not None:
            state["bar"].update(summary.bytes)

    ctx.on_plan, ctx.on_file = on_plan, on_file


def curation_progress(ctx: StageContext) -> None:
    """A bar over the curation requests of each snapshot: done, left, tokens/s, failures."""
    from tqdm import tqdm

    state: dict[str, Any] = {}

    def on_curation(report: CurateReport) -> None:
        bar = state.get("bar")
        if bar is None or state.get("total") != report.requests:
            if bar is not None:
                bar.close()
            bar = state["bar"] = tqdm(total=report.requests, unit="req", desc="curate",
                                      leave=False, disable=None)
            state["total"] = report.requests
            state["started"] = time.monotonic()
        done = report.answered_before + report.answered + report.failed + report.left
        bar.update(done - bar.n)
        seconds = time.monotonic() - state["started"]
        bar.set_postfix_str(f"{report.tokens_out / seconds if seconds else 0:.0f} tok/s, "
                            f"{report.unparsed} unparsed, {report.failed} failed")

    ctx.on_curation = on_curation


def run_with_bar(ctx: StageContext, desc: str = "build") -> list[StageResult]:
    """build_dataset with a bar over its steps (the exact step list, advanced as each one
    finishes) and byte bars inside the ingest stages."""
    from tqdm import tqdm

    from emerge_lib.pipeline.runner import build_dataset, build_steps

    steps = build_steps(ctx)
    ingest_progress(ctx)
    curation_progress(ctx)
    # disable=None: no bar where stderr is not a terminal (CI, task logs: the log lines say it)
    with bars(), tqdm(total=len(steps), unit="stage", desc=desc, disable=None) as bar:
        def on_step(name: str, plan: SnapshotPlan | None) -> None:
            bar.set_postfix_str(f"{name} {plan.key}" if plan is not None else name)

        return build_dataset(ctx, on_step=on_step, on_result=lambda _: bar.update(1))
