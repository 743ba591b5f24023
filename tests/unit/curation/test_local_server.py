"""The local LLM server counts as started only once it has generated a token: one that
lists its model and then dies on its first decode (the SIGILL of a native llama.cpp build
on a CPU that refuses an instruction it advertises) or answers generations with errors is
a one-line LocalServerError, and its process is gone.

The servers here are small real processes speaking the OpenAI protocol that fail the way a
broken llama.cpp server does (a real SIGILL, a real 500); the real server is started in
tests/system/curation/test_verdicts.py."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from emerge_lib.curation import local_server
from emerge_lib.curation.local_server import LocalServerError

SERVER = '''
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

MODE = sys.argv[2]

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        if MODE == "sigill":
            print("ggml_backend_amx_mul_mat: tilezero", flush=True)
            os.kill(os.getpid(), signal.SIGILL)
        if MODE == "500":
            self.reply(500, {"error": {"message": "llama_decode returned -1"}})
            return
        self.reply(200, {"choices": [{"index": 0, "finish_reason": "length",
                                      "message": {"role": "assistant", "content": "OK"}}]})

print("serving", flush=True)
HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''


def launch(tmp_path: Path, mode: str) -> local_server.LocalServer:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return local_server.launch([sys.executable, str(script), str(port), mode], port, "m",
                               startup_timeout_s=30)


def test_a_server_that_generates_is_started_and_stopped_by_pid(tmp_path: Path) -> None:
    with launch(tmp_path, "ok") as server:
        assert server.process.poll() is None and server.url.endswith("/v1")
    assert server.process.poll() is not None


def test_a_server_that_dies_on_its_first_generation_is_not_started(tmp_path: Path) -> None:
    with pytest.raises(LocalServerError) as info:
        launch(tmp_path, "sigill")
    message = str(info.value)
    assert "\n" not in message
    assert "exited (killed by SIGILL) on its first generation" in message
    assert "last line: ggml_backend_amx_mul_mat: tilezero" in message


def test_a_server_that_lists_its_model_but_fails_to_generate_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = []
    real_popen = local_server.subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(local_server.subprocess, "Popen", popen)
    with pytest.raises(LocalServerError, match=r"lists its model but cannot generate "
                                               r"\(HTTP 500: .*llama_decode returned -1") as info:
        launch(tmp_path, "500")
    assert "\n" not in str(info.value)
    assert started and started[0].poll() is not None  # stopped, not left running


def test_the_local_server_routes_record_its_weights_quantization() -> None:
    """A release curated by the local server names SmolLM2 and its GGUF type as the judge
    (the card and croissant.json state it): the configuration the overrides give."""
    from emerge_lib.core.config import load_config

    server = local_server.LocalServer(process=None, url="http://127.0.0.1:1/v1")  # type: ignore[arg-type]
    cfg = load_config(overrides={"curation": server.curation_overrides()})
    assert local_server.MODEL_FILE.endswith(".Q4_1.gguf")
    for route in (cfg.curation.additions, cfg.curation.deprecations):
        assert (route.name, route.backend, route.quantization) == (
            local_server.MODEL_ALIAS, "llamacpp", "GGUF Q4_1")
