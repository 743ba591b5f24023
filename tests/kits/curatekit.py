"""The curate stage as its tests drive it: the context that sends every route to one
server, the requests and verdict rows the snapshots need, what a release says of the
verdicts, and the CLI in a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stagekit import context

from emerge_lib.catalog import Catalog
from emerge_lib.curation import endpoint_overrides
from emerge_lib.curation.verdicts import final_requests, kept_lines, plan_requests
from emerge_lib.pipeline.runner import run_stage

#: the names a release records for the two judges unless a served model names them
ADDITIONS_LLM, DEPRECATIONS_LLM = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"
REAL_WINDOWS = 2  # what the tests with the real model curate: 12 requests, 25 verdicts


def curated_ctx(catalog: Catalog, world: Path, url: str, *, backend: str = "vllm",
                model: str | None = None, **curation):
    settings = endpoint_overrides(url, backend=backend, model=model, flush_seconds=0.2,
                                  **curation)
    return context(catalog, base=world / "config.yaml", curation=settings,
                   release_dir=catalog.warehouse + "-release")


def requests_of(ctx) -> list:
    """The requests the configured snapshots need."""
    out = []
    for plan in ctx.cfg.plans():
        snap = [("snapshot", "=", plan.key)]
        reqs = plan_requests(ctx.cfg.curation, ctx.cfg.passages,
                             ctx.catalog.read_arrow("instances", filters=snap).to_pylist(),
                             ctx.catalog.read_arrow("passages", filters=snap).to_pylist())
        assert all(len(set(r.targets)) == len(r.targets) for r in reqs)  # each asked once
        out += reqs
    return out


def expected_rows(ctx) -> tuple[int, int]:
    """(requests, verdict rows) the configured snapshots need."""
    reqs = requests_of(ctx)
    return len(reqs), sum(len(r.targets) * len(r.triples) for r in reqs)


def final_expected(ctx) -> tuple[int, int]:
    """(requests, verdict rows) the final judge adds to curate's, once select has kept its
    lines: its prompts curate did not ask the same model."""
    asked = {(r.llm_name, r.sha) for r in requests_of(ctx)}
    new = []
    for plan in ctx.cfg.plans():
        snap = [("snapshot", "=", plan.key)]
        new += [r for r in final_requests(
            ctx.cfg.curation, ctx.cfg.passages,
            ctx.catalog.read_arrow("instances", filters=snap).to_pylist(),
            ctx.catalog.read_arrow("passages", filters=snap).to_pylist(),
            kept_lines(ctx.catalog, plan.key)) if (r.llm_name, r.sha) not in asked]
    return len(new), sum(len(r.targets) * len(r.triples) for r in new)


def released_triples(release_dir: str | Path) -> list[dict]:
    return [t for f in sorted(Path(release_dir).glob("corpus/snapshot_*/delta_*.jsonl"))
            for x in f.read_text().splitlines() for t in json.loads(x)["tkgu_triples"]]


def curate_all(ctx) -> list:
    return [run_stage(ctx, "curate", plan) for plan in ctx.cfg.plans()]


def verdict_keys(catalog: Catalog) -> list[tuple]:
    return [(r["snapshot"], r["window"], r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"],
             r["prompt_type"], r["prompt_sha"]) for r in catalog.read_arrow("verdicts").to_pylist()]


def emerge(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it (a process of its own, its own engine)."""
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args], capture_output=True,
                          text=True, timeout=600)
