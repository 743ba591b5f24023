"""Curation throughput: requests/s and tokens/s at concurrency 1, 8, 64 and 256, against
any OpenAI-compatible endpoint (``--url``) or, by default, the instant local stub; next to
a naive baseline measured in the same run; then ``emerge curate`` itself, the path a user
runs, with its defaults.

* client: ``curation.client.ChatClient`` as the curate stage drives it (one coroutine per
  request, the semaphore, the constraint of the route's backend, ``parse_answer`` of each
  answer), on prompts rendered by ``curation.prompts.render`` from passages of 60-180
  words with 1-6 triples (the released data's spread). CPU seconds of this process are
  printed next to wall seconds: against the stub, ``requests / CPU second`` is the
  client's own ceiling on one core (target >= 500 requests/s: the client must never be
  what a GPU waits for).
* naive: one blocking ``httpx.Client`` posting the same prompts one after another (how
  a script loops over an OpenAI client), unconstrained.
* CLI: ``emerge curate -c <world>/config.yaml --warehouse W --llm-url URL`` on a sample
  world built once (``--world``; generated and built when missing), its defaults
  (concurrency 64, structured output), verdicts committed to Delta as they come; the
  stage's own requests/s and the command's wall time including engine start-up.

* census (``--census FILE.jsonl``, EMERGE-format instances, e.g. the authors' released
  ones): the requests the curate stage would make for them, sent to the endpoint (the
  local llama.cpp server with SmolLM2 by default: ``--local-llm``), with prompt and answer
  tokens per request and per triple as the server counts them: the basis of the GPU-hours
  estimate in docs/curation.md.

The stub runs in a process of its own (``python -m emerge_lib.curation.stub``) so that it
does not share the client's core and GIL.

    .venv/bin/python benchmarks/curation.py                      # the stub
    .venv/bin/python benchmarks/curation.py --url http://gpu:8000/v1 --model Meta-Llama-3.1-8B \\
        --requests 2000 --no-cli                                 # a vLLM worker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
from _harness import emerge as harness_emerge

from emerge_lib.curation.answers import parse_answer
from emerge_lib.curation.client import ChatClient, Endpoint
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION, render

WORDS = ["the", "of", "and", "in", "was", "a", "to", "he", "she", "his", "her", "it", "for", "with", "as", "by", "on", "at", "from", "that", "which", "born", "died", "river", "city", "album", "film", "team", "club", "league", "party", "member", "president", "university", "founded", "located", "capital", "north", "south"]


def prompts(n: int, seed: int = 7) -> list[tuple[str, int]]:
    """n (prompt, number of triples) pairs, three in four assertions, fixed by the seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        passage = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 180)))
        labels = [(f"Entity {i}-{k}", rng.choice(["place of birth", "member of", "country"]),
                   f"Value {rng.randint(1, 10_000)}") for k in range(rng.randint(1, 6))]
        kind = DEPRECATION if i % 4 == 3 else ASSERTION
        out.append((render(kind, passage, labels), len(labels)))
    return out


async def client_run(endpoint: Endpoint, items: list[tuple[str, int]], concurrency: int,
                     structured: bool) -> dict:
    unparsed = tokens = 0

    async def one(prompt: str, n: int) -> None:
        nonlocal unparsed, tokens
        answer = await client.ask(endpoint, prompt, n, structured)
        tokens += answer.tokens_out
        unparsed += parse_answer(answer.text, n) is None

    client = ChatClient(concurrency, timeout_s=600, retries=3)
    cpu, wall = time.process_time(), time.perf_counter()
    async with client:
        await asyncio.gather(*(one(p, n) for p, n in items))
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "tokens": tokens, "unparsed": unparsed, "sent": client.sent}


def naive_run(endpoint: Endpoint, items: list[tuple[str, int]]) -> dict:
    cpu, wall, tokens = time.process_time(), time.perf_counter(), 0
    with httpx.Client(timeout=600) as http:
        for prompt, n in items:
            resp = http.post(endpoint.chat_url, json={
                "model": endpoint.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": 0, "max_tokens": 64 * n})
            resp.raise_for_status()
            tokens += int((resp.json().get("usage") or {}).get("completion_tokens") or 0)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "tokens": tokens}


def row(name: str, n: int, r: dict) -> str:
    rate = n / r["wall"]
    per_cpu = n / r["cpu"] if r["cpu"] else float("inf")
    extra = f"  unparsed {r['unparsed']}" if "unparsed" in r else ""
    return (f"{name:<24} {n:>7,} req {r['wall']:>8.2f} s wall {r['cpu']:>7.2f} s CPU "
            f"{rate:>9,.0f} req/s {per_cpu:>9,.0f} req/CPU-s "
            f"{r['tokens'] / r['wall']:>10,.0f} tok/s{extra}")


def start_stub() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "emerge_lib.curation.stub"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def emerge(*args: str) -> subprocess.CompletedProcess:
    return harness_emerge(*args, capture_output=True, text=True, check=False)


def cli_section(world: Path, url: str, model: str | None, backend: str | None) -> None:
    if not (world / "config.yaml").exists():
        print(f"generating the sample world in {world} ...", flush=True)
        # bench mode: thousands of linked paragraphs and item-valued statements in the
        # windows, so the build aligns thousands of instances to curate
        done = emerge("sample", "--out", str(world), "--items", "1500", "--articles", "600",
                      "--bench-statements", "4", "--bench-passages", "3000", "--quiet")
        assert done.returncode == 0, done.stderr[-2000:]
    built = world / "warehouse"
    if not (built / "instances").exists():
        print("building it (no curation) ...", flush=True)
        done = emerge("build", "-c", str(world / "config.yaml"), "--warehouse", str(built),
                      "--out", str(world / "release"))
        assert done.returncode == 0, done.stderr[-2000:]
    fresh = world / "warehouse-curated"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(built, fresh)
    args = ["curate", "-c", str(world / "config.yaml"), "--warehouse", str(fresh),
            "--llm-url", url]
    args += ["--llm-model", model] if model else []
    args += ["--llm-backend", backend] if backend else []
    started = time.perf_counter()
    done = emerge(*args)
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-3000:]
    rates = [float(m) for m in re.findall(r"([\d,.]+) requests/s", done.stdout + done.stderr)
             if m.replace(",", "").replace(".", "").isdigit()]
    asked = sum(int(m.replace(",", "")) for m in
                re.findall(r"([\d,]+) asked", done.stdout + done.stderr))
    print(f"emerge curate (defaults): {asked:,} requests over the world's snapshots, "
          f"{wall:.1f} s wall for the command (engine start-up and Delta commits included); "
          f"stage rates per snapshot: {', '.join(f'{r:,.0f}' for r in rates) or 'n/a'} req/s")


def census_requests(path: Path) -> list[tuple[str, int]]:
    """(prompt, triples) per (instance, prompt type) of EMERGE-format lines, as the curate
    stage asks them: assertion for the additions, deprecation for the D triples."""
    from emerge_lib.curation.prompts import render as render_prompt

    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        inst = json.loads(line)
        adds, deps = [], []
        for t in inst["tkgu_triples"]:
            labels = tuple(t["triple_labels"])
            ops = set(t["tkgu_operations"])
            if ops - {"d-triples"}:
                adds.append(labels)
            if "d-triples" in ops:
                deps.append(labels)
        for kind, labels in ((ASSERTION, adds), (DEPRECATION, deps)):
            if labels:
                out.append((render_prompt(kind, inst["passage"], labels), len(labels)))
    return out


def census(path: Path, endpoint: Endpoint, structured: bool) -> None:
    items = census_requests(path)

    async def go() -> list:
        async with ChatClient(1, timeout_s=600, retries=1) as client:
            return [await client.ask(endpoint, p, n, structured) for p, n in items]

    answers = asyncio.run(go())
    triples = sum(n for _, n in items)
    tin = sum(a.tokens_in for a in answers)
    tout = sum(a.tokens_out for a in answers)
    parsed = sum(parse_answer(a.text, n) is not None for a, (_, n) in zip(answers, items,
                                                                          strict=True))
    print(f"census of {path.name}: {len(items)} requests, {triples} triples "
          f"({triples / len(items):.2f} per request), parsed {parsed}/{len(items)}")
    print(f"  prompt tokens: {tin / len(items):,.0f} per request; answer tokens: "
          f"{tout / len(items):,.0f} per request, {tout / triples:,.1f} per triple; "
          f"{sum(a.seconds for a in answers):.1f} s on {endpoint.model}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", help="an OpenAI-compatible base URL (default: the local stub)")
    p.add_argument("--model", default="Meta-Llama-3.1-8B", help="the served model name")
    p.add_argument("--backend", default="vllm", choices=["vllm", "llamacpp", "openai"])
    p.add_argument("--requests", type=int, help="requests per measurement "
                                                "(default: 4000 on the stub, 500 otherwise)")
    p.add_argument("--concurrency", default="1,8,64,256")
    p.add_argument("--no-structured", action="store_true")
    p.add_argument("--no-cli", action="store_true", help="skip the emerge curate section")
    p.add_argument("--world", type=Path, default=Path("/tmp/bench-curation-world"))
    p.add_argument("--census", type=Path, metavar="FILE.jsonl",
                   help="token census of these EMERGE instances (then exit)")
    p.add_argument("--local-llm", action="store_true",
                   help="use the local llama.cpp server (the census default)")
    args = p.parse_args()
    if args.census:
        from contextlib import ExitStack

        from emerge_lib.curation import local_server

        with ExitStack() as stack:
            if args.url is None:
                server = stack.enter_context(local_server.start())
                endpoint = Endpoint(server.url, server.model, "llamacpp")
            else:
                endpoint = Endpoint(args.url, args.model, args.backend)
            census(args.census, endpoint, not args.no_structured)
        return 0

    stub = None
    url = args.url
    if url is None:
        stub, url = start_stub()
    n = args.requests or (4000 if stub else 500)
    endpoint = Endpoint(url=url, model=args.model, backend=args.backend)
    items = prompts(n)
    try:
        print(f"endpoint {url} ({'the local stub' if stub else args.backend}), {n:,} requests "
              f"each, structured={not args.no_structured}, load average "
              f"{os.getloadavg()[0]:.2f}", flush=True)
        print(row("naive (blocking, 1)", n, naive_run(endpoint, items)), flush=True)
        for c in (int(x) for x in args.concurrency.split(",")):
            result = asyncio.run(client_run(endpoint, items, c, not args.no_structured))
            print(row(f"client, concurrency {c}", n, result), flush=True)
        if not args.no_cli:
            cli_section(args.world, url, None if stub else args.model,
                        None if stub else args.backend)
    finally:
        if stub is not None:
            stub.terminate()
            stub.wait(10)
    print(json.dumps({"load_average": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
