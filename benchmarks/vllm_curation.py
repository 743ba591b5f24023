"""vLLM serving curation, on a machine with a GPU: starts vLLM (the pinned version, in its
own environment) with whatever chat model is at hand, and measures requests/s, tokens/s
and the unparsed share through emerge's client, with the curate stage's prompts and
answer constraint, at concurrency 1, 8, 64 and 256. It runs as far as it can without a
GPU, and says where it stopped and why:

1. the request contract: the exact bodies the curate stage's client sends, held to
   vLLM's exported request schema and compiled with xgrammar here (as in `make test`),
   and through vLLM's own classes when its environment is there (scripts/vllm_contract.py);
2. the model: ``--model`` (a Hugging Face id or a folder), else the smallest chat model
   (a chat template in its tokenizer_config.json) in the Hugging Face cache;
3. the GPU (nvidia-smi, then CUDA in vLLM's environment);
4. the server: ``python -m vllm.entrypoints.openai.api_server`` on a free 127.0.0.1
   port, served as ``emerge-bench``, stopped by its PID;
5. the measurements.

    .venv/bin/python benchmarks/vllm_curation.py                  # what this machine allows
    .venv/bin/python benchmarks/vllm_curation.py --model Qwen/Qwen2.5-0.5B-Instruct \\
        --vllm-python .venv-vllm/bin/python --requests 512

vLLM's environment: ``--vllm-python``, else $EMERGE_VLLM_PYTHON, else .venv-vllm
(``make vllm-env``). Exit status 0 when it stopped for want of a GPU, a model or vLLM (it
says which), 1 when a step failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import REPO

from emerge_lib.curation import contract
from emerge_lib.curation.answers import parse_answer
from emerge_lib.curation.client import ChatClient, Endpoint

SCHEMA = REPO / "tests" / "kits" / "vllm" / "ChatCompletionRequest.schema.json"
SERVED = "emerge-bench"


def say(step: str, text: str) -> None:
    print(f"[{step}] {text}", flush=True)


def vllm_python(given: str | None) -> Path | None:
    for candidate in (given, os.environ.get("EMERGE_VLLM_PYTHON"),
                      str(REPO / ".venv-vllm" / "bin" / "python")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def check_contract(python: Path | None) -> bool:
    started = time.monotonic()
    bodies = contract.request_bodies()
    accepted, garbage = contract.accepted_answers(), contract.garbage_answers()
    exported = json.loads(SCHEMA.read_text())
    refused = [b.label for b in bodies
               if contract.vllm_schema_errors(b.body, exported["ChatCompletionRequest"])]
    checks = wrong = 0
    for b in bodies:
        field, spec = contract.constraint_of(b.body)
        for n, text in accepted:
            if n == b.n:
                checks += 1
                wrong += not contract.xgrammar_accepts(field, spec, text)
        for n, _, text in garbage:
            if n == b.n:
                checks += 1
                wrong += contract.xgrammar_accepts(field, spec, text)
    say("contract", f"{len(bodies) - len(refused)} of {len(bodies)} bodies fit vLLM "
        f"{exported['vllm']}'s exported request schema; xgrammar: {checks - wrong} of {checks} "
        f"answer checks right ({time.monotonic() - started:.1f}s)")
    if python is None:
        say("contract", "vLLM's own environment is not here (make vllm-env): its classes "
            "not tried")
        return not refused and not wrong
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({
            "bodies": [{"label": b.label, "n": b.n, "body": b.body} for b in bodies],
            "accepted": accepted, "garbage": garbage}))
        proc = subprocess.run([str(python), str(REPO / "scripts" / "vllm_contract.py"),
                               "check", str(src), str(out)], capture_output=True, text=True,
                              timeout=1800)
        if proc.returncode != 0:
            say("contract", f"vLLM's check failed: {proc.stderr.strip()[-800:]}")
            return False
        report = json.loads(out.read_text())
    say("contract", f"vLLM {report['vllm']}'s own ChatCompletionRequest took "
        f"{report['taken']} of {report['bodies']} bodies (SamplingParams, xgrammar "
        f"{report['xgrammar']} backend), {report['answers_checked']} answer checks, "
        f"{len(report['failures'])} failures")
    for failure in report["failures"][:5]:
        say("contract", f"  {failure}")
    return not refused and not wrong and not report["failures"]


def find_model(given: str | None) -> str | None:
    if given:
        return given
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or
                                                     Path.home() / ".cache" / "huggingface")
               / "hub")
    found = []
    for config in hub.glob("models--*/snapshots/*/tokenizer_config.json"):
        try:
            if "chat_template" not in json.loads(config.read_text()):
                continue
        except ValueError:
            continue
        folder = config.parent
        size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
        if size:
            found.append((size, str(folder)))
    return min(found)[1] if found else None


def gpu(python: Path | None) -> str | None:
    """The GPU as nvidia-smi names it, or None; CUDA must answer in vLLM's environment
    too, where there is one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    proc = subprocess.run([smi, "--query-gpu=name,memory.total", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    name = proc.stdout.strip().splitlines()[0]
    if python is None:
        return name
    cuda = subprocess.run([str(python), "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True, timeout=300)
    return name if cuda.stdout.strip() == "True" else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(python: Path, model: str, port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", model,
         "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
         "--max-model-len", "8192", "--max-num-seqs", "256", "--enable-prefix-caching",
         "--gpu-memory-utilization", "0.85"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def ready(url: str, proc: subprocess.Popen, timeout: float) -> bool:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(2)
    return False


async def measure(endpoint: Endpoint, items: list[tuple[str, int]], concurrency: int) -> dict:
    unparsed = tokens = cut = 0

    async def one(prompt: str, n: int) -> None:
        nonlocal unparsed, tokens, cut
        answer = await client.ask(endpoint, prompt, n, True)
        tokens += answer.tokens_out
        cut += answer.finish_reason == "length"
        unparsed += answer.finish_reason == "length" or parse_answer(answer.text, n) is None

    client = ChatClient(concurrency, timeout_s=600, retries=2)
    started = time.perf_counter()
    async with client:
        await asyncio.gather(*(one(p, n) for p, n in items))
    return {"wall": time.perf_counter() - started, "tokens": tokens, "unparsed": unparsed,
            "cut": cut}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="a Hugging Face id or folder (default: the smallest chat "
                                   "model in the Hugging Face cache)")
    p.add_argument("--vllm-python", help="vLLM's environment's python (default: "
                                         "$EMERGE_VLLM_PYTHON, else .venv-vllm)")
    p.add_argument("--requests", type=int, default=256, help="requests per measurement")
    p.add_argument("--concurrency", default="1,8,64,256")
    p.add_argument("--start-timeout", type=float, default=1200)
    args = p.parse_args()

    python = vllm_python(args.vllm_python)
    if not check_contract(python):
        return 1
    model = find_model(args.model)
    say("model", model or "no chat model in the Hugging Face cache and no --model")
    where = gpu(python)
    say("gpu", where or "none: nvidia-smi is not here or sees no GPU, or CUDA does not "
        "answer in vLLM's environment")
    missing = [what for what, have in (("a GPU", where), ("vLLM's environment (make "
                                                         "vllm-env)", python),
                                       ("a model (--model)", model)) if not have]
    if missing:
        say("stop", f"missing {', '.join(missing)}: stopped before starting vLLM; where all "
            "are, this script serves the model and measures requests/s and the unparsed "
            f"share through emerge's client at concurrency {args.concurrency}")
        return 0
    assert python is not None and model is not None
    sys.path.insert(0, str(Path(__file__).parent))
    from curation import prompts  # the benchmark's prompts: 60-180 words, 1-6 triples

    port = free_port()
    log = Path(tempfile.gettempdir()) / f"vllm-curation-{port}.log"
    started = time.monotonic()
    proc = serve(python, model, port, log)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        if not ready(url, proc, args.start_timeout):
            say("serve", f"vLLM did not answer within {args.start_timeout:.0f}s; its log "
                f"{log}:\n" + log.read_text(errors="replace")[-3000:])
            return 1
        say("serve", f"vLLM up in {time.monotonic() - started:.0f}s at {url} ({log})")
        endpoint = Endpoint(url, SERVED, "vllm")
        items = prompts(args.requests)
        asyncio.run(measure(endpoint, items[:8], 8))  # warm-up: CUDA graphs, the grammar
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            r = asyncio.run(measure(endpoint, items, concurrency))
            say("measure", f"concurrency {concurrency:>3}: {len(items) / r['wall']:8.1f} req/s "
                f"{r['tokens'] / r['wall']:9.0f} tok/s, unparsed {r['unparsed']} of "
                f"{len(items)} ({r['unparsed'] / len(items):.1%}; cut by max_tokens "
                f"{r['cut']})")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
