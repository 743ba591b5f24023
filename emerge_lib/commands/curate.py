"""``emerge curate``: LLM curation of an existing build, then the release rewritten."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emerge_lib.commands._common import config_flag, examples


def add_llm_flags(p: argparse.ArgumentParser) -> None:
    """The flags that point every curation route at one OpenAI-compatible server."""
    p.add_argument("--llm-url", metavar="URL",
                   help="turn curation on, every model at this OpenAI-compatible base URL "
                        "(e.g. http://gpu-node:8000/v1); the configuration keeps per-route "
                        "endpoints")
    p.add_argument("--llm-backend", choices=["vllm", "llamacpp", "openai"],
                   help="the server's dialect for constrained decoding (default: the "
                        "configuration's, vllm)")
    p.add_argument("--llm-model", metavar="NAME",
                   help="the model served at --llm-url; the release records it as the judge "
                        "(default: each route's released name)")
    p.add_argument("--local-llm", action="store_true",
                   help="start the local llama.cpp server (SmolLM2-135M) and curate with it")


@contextmanager
def llm_curation(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """The ``curation`` overrides the LLM flags ask for: every route to --llm-url, or to
    the local llama.cpp server started for --local-llm (stopped on exit); {} for neither."""
    from emerge_lib.curation import endpoint_overrides

    if getattr(args, "local_llm", False):
        from emerge_lib.curation import local_server

        with local_server.start() as server:
            yield server.curation_overrides()
    elif getattr(args, "llm_url", None):
        yield endpoint_overrides(args.llm_url, backend=args.llm_backend, model=args.llm_model)
    else:
        yield {}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "curate",
        help="ask the LLMs whether each passage supports its triples; rewrite the release",
        description=(
            "Curate an existing build: one request per (passage, prompt type, model) with "
            "the paper's prompts (Appendix B), to the configured OpenAI-compatible "
            "endpoints (vLLM in production; --local-llm for llama.cpp here). Verdicts are "
            "committed as answers arrive, so a rerun asks only what is not answered yet. "
            "The selection (and the validation gate, when on) then runs again: lines without "
            "a delta triple the judges support leave the corpus; the final judge "
            "(curation.final_judge) is then asked about every operation of every kept line, "
            "and its verdicts are the gold. With --out the release is rewritten with "
            "llm_assessment filled in."
        ),
    )
    examples(p, "emerge curate -c world/config.yaml --local-llm --out release",
             "emerge curate --warehouse .emerge/warehouse --llm-url http://gpu-node:8000/v1 "
             "--llm-model meta-llama/Llama-3.1-8B-Instruct --out release")
    config_flag(p)
    p.add_argument("--warehouse", help="warehouse root (default: the configuration's)")
    p.add_argument("--engine", help="embedded (default) or sc://host:port")
    p.add_argument("--snapshot", action="append", dest="snapshots", metavar="ISO_TS",
                   help="snapshot t to curate (repeatable; default: the configuration's)")
    p.add_argument("--out", metavar="DIR", help="rewrite the release in DIR afterwards")
    add_llm_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.commands._common import bars, curation_progress, load, require_warehouse
    from emerge_lib.core.errors import EmergeError
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.registry import stage
    from emerge_lib.pipeline.runner import run_stage

    with llm_curation(args) as overrides:
        snapshots = {"timestamps": args.snapshots} if args.snapshots else {}
        cfg = load(args, curation=overrides, snapshots=snapshots)
        if not overrides:  # curating is what this command is for
            cfg.curation.enabled = True
        require_warehouse(cfg, "curate")
        with open_context(cfg, release_dir=args.out) as ctx, bars():
            unbuilt = [p.key for p in cfg.plans()
                       if not ctx.catalog.has_snapshot("instances", p.key)]
            if unbuilt:
                raise EmergeError(f"curate: snapshot {', '.join(unbuilt)} was never built in "
                                  f"{cfg.warehouse}; build it first (emerge build)")
            curation_progress(ctx)
            # the selection reads the verdicts (lines without a supported delta triple go,
            # duplicates are ranked by them), the final judge asks about its kept lines,
            # and the gate checks the new selection
            after = [name for name in ("select", "final_judge", "validate")
                     if stage(name).applies(ctx)]
            for plan in cfg.plans():
                for name in ("curate", *after):
                    run_stage(ctx, name, plan)
            if args.out:
                print(run_stage(ctx, "release").brief())
    return 0
