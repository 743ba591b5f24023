"""An instant OpenAI-compatible chat server on 127.0.0.1, for fault drills and for
measuring the client's own ceiling (``benchmarks/curation.py``).

It speaks the same protocol over the same wire as vLLM's and llama.cpp's servers
(HTTP/1.1 with keep-alive, ``POST /v1/chat/completions``, ``GET /v1/models``) and answers
each prompt's numbered triples with ``k. YES …`` lines (or NO for triples whose subject
label starts with "No"), instantly; models named in ``contrary`` answer the other way,
those in ``garbled`` with prose that never parses; with ``garbage_for`` set (the sample
worlds' ``GARBLED_SUBJECT``), a deprecation prompt about a subject whose label starts with
it gets prose that never parses too (a world plants its own garbage answer: the
``unparsed-two-operations`` scenario). ``faults`` scripts what the next
requests get instead: ``"500"``, ``"hang"`` (no answer until the client gives up), ``"close"`` (the connection
is dropped), ``"prose"`` (an answer without a list), ``"short"`` (one line too few),
``"long"`` (one too many), ``"401"`` (a refusal whose body quotes the API key the
request carried, as some servers' error bodies do), ``"loop"`` (every explanation ``again again …``: it parses,
but is degenerate), ``"cut"`` (the normal answer, but ``finish_reason: length``, as
when ``max_tokens`` cut an answer that happens to parse), ``"400"``, or ``"ok"`` (the
normal answer); ``script(…, prompt_with=text)`` aims faults at
the requests whose prompt holds ``text``. ``hold()`` makes every request wait (a model
busy elsewhere) until ``release()``; ``record=True`` keeps each request's body as it came
over the wire (``bodies``). A real model is the local llama.cpp server
(``curation.local_server``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

_TRIPLE = re.compile(r"^(\d+)\. \((.*)\)$", re.MULTILINE)


_SINGLE = re.compile(r"^\((.*)\)$", re.MULTILINE)

#: what the stub answers instead of a verdict list: prose that never parses
GARBAGE = "The text supports some of these triples but not all of them."
#: the subject label the sample worlds give a triple whose deprecation answer is garbage
#: (``garbage_for``; emerge_lib.sample.plan's ``unparsed-two-operations`` scenario)
GARBLED_SUBJECT = "Mumbles"


def garbled_prompt(prompt: str, subject: str | None) -> bool:
    """Whether ``prompt`` is a deprecation prompt about a triple whose subject label starts
    with ``subject`` (never, when it is None)."""
    return subject is not None and "no longer valid" in prompt and any(
        inside.startswith(subject)
        for inside in [*(t for _, t in _TRIPLE.findall(prompt)), *_SINGLE.findall(prompt)])


def answer_for(prompt: str, contrary: bool = False) -> str:
    """The stub's answer: one verdict line per numbered triple of the prompt (each verdict
    reversed when ``contrary``); to a single-triple prompt, one unnumbered verdict."""
    if "the following triple?" in prompt or "the following triple is" in prompt:
        inside = _SINGLE.findall(prompt)[-1]
        verdict = "NO" if inside.startswith("No") != contrary else "YES"
        return f"{verdict} the stub reads ({inside})"
    lines = []
    for number, inside in _TRIPLE.findall(prompt):
        verdict = "NO" if inside.startswith("No") != contrary else "YES"
        lines.append(f"{number}. {verdict} the stub reads ({inside})")
    return "\n".join(lines)


@dataclass
class StubServer:
    """``with StubServer() as stub: stub.url`` (…/v1); ``stub.faults.extend([...])``."""

    faults: deque[str] = field(default_factory=deque)
    # faults for the requests whose prompt holds a given text, taken before ``faults``:
    # a fault drill that must meet one request whatever the order of arrival
    faults_for: dict[str, deque[str]] = field(default_factory=dict)
    # served model names that answer every triple the other way: judges that disagree
    contrary: set[str] = field(default_factory=set)
    record: bool = False  # keep the request bodies, raw bytes (``bodies``)
    # served model names whose every answer is prose without a list (never parses): a
    # judge that always answers garbage, whatever the retries
    garbled: set[str] = field(default_factory=set)
    # a deprecation prompt about a subject whose label starts with this is answered with
    # prose (``garbled_prompt``): the garbage answer a sample world plants
    garbage_for: str | None = None
    requests: int = 0
    waiting: int = 0  # requests held back now (``hold``)
    bodies: list[bytes] = field(default_factory=list)
    url: str = ""
    _loop: asyncio.AbstractEventLoop | None = None
    _open: asyncio.Event | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.AbstractServer | None = None

    def __enter__(self) -> StubServer:
        ready = threading.Event()

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._open = asyncio.Event()
            self._open.set()
            self._server = loop.run_until_complete(
                asyncio.start_server(self._client, "127.0.0.1", 0, backlog=1024))
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}/v1"
            ready.set()
            loop.run_forever()
            pending = asyncio.all_tasks(loop)  # connections still open: end them quietly
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=serve, name="openai-stub", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            def stop() -> None:
                assert self._server is not None
                self._server.close()
                self._loop.stop()  # type: ignore[union-attr]
            self._loop.call_soon_threadsafe(stop)
        if self._thread is not None:
            self._thread.join(10)

    def hold(self) -> None:
        """From now on, every request waits (unanswered, its connection open) until
        :meth:`release`."""
        assert self._loop is not None and self._open is not None
        self._loop.call_soon_threadsafe(self._open.clear)

    def release(self) -> None:
        """Answer the held requests, and the next ones at once again."""
        assert self._loop is not None and self._open is not None
        self._loop.call_soon_threadsafe(self._open.set)

    def script(self, faults: Iterable[str], *, prompt_with: str | None = None) -> None:
        """Queue faults for the next requests, or for those whose prompt holds
        ``prompt_with``."""
        if prompt_with is None:
            self.faults.extend(faults)
        else:
            self.faults_for.setdefault(prompt_with, deque()).extend(faults)

    def _fault(self, body: bytes) -> str | None:
        if self.faults_for:
            try:
                text = json.loads(body)["messages"][-1]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                text = ""
            for needle, queue in self.faults_for.items():
                if queue and needle in text:
                    return queue.popleft()
        return self.faults.popleft() if self.faults else None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length, key = 0, ""
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                    elif line.lower().startswith("authorization:"):
                        key = line.split(":", 1)[1].strip().removeprefix("Bearer ")
                body = await reader.readexactly(length) if length else b""
                self.requests += 1
                if self.record and method == "POST":
                    self.bodies.append(body)
                if self._open is not None and not self._open.is_set():
                    self.waiting += 1
                    try:
                        await self._open.wait()
                    finally:
                        self.waiting -= 1
                fault = self._fault(body)
                if fault == "close":
                    writer.close()
                    return
                if fault == "hang":
                    await asyncio.sleep(3600)
                status, payload = self._answer(method, path, body, fault) if fault != "401" \
                    else ("401 Unauthorized",
                          {"error": {"message": f"invalid api key {key} (key={key})"}})
                data = json.dumps(payload).encode()
                writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            writer.close()

    def _answer(self, method: str, path: str, body: bytes, fault: str | None
                ) -> tuple[str, dict]:
        if method == "GET" and path.endswith("/models"):
            return "200 OK", {"object": "list", "data": [{"id": "stub", "object": "model"}]}
        if fault == "500":
            return "500 Internal Server Error", {"error": "the stub was told to fail"}
        if fault == "400":
            return "400 Bad Request", {"error": "the stub refuses this request"}
        request = json.loads(body or b"{}")
        prompt = request.get("messages", [{}])[-1].get("content", "")
        text = answer_for(prompt, request.get("model") in self.contrary)
        if fault == "prose" or request.get("model") in self.garbled or \
                garbled_prompt(prompt, self.garbage_for):
            text = GARBAGE
        elif fault == "short":
            text = "\n".join(text.splitlines()[:-1])
        elif fault == "loop":  # parses, but every explanation is a loop
            text = "\n".join(" ".join(line.split(" ", 2)[:2]) + " again" * 8
                              for line in text.splitlines())
        elif fault == "long":
            text += f"\n{len(text.splitlines()) + 1}. YES a triple nobody asked about"
        return "200 OK", {
            "id": "stub", "object": "chat.completion", "model": request.get("model", "stub"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length" if fault == "cut" else "stop"}],
            "usage": {"prompt_tokens": len(prompt.split()),
                      "completion_tokens": len(text.split())},
        }


def main(argv: list[str] | None = None) -> int:
    """``python -m emerge_lib.curation.stub``: serve until killed, printing the URL first
    (a stub in a process of its own does not share the client's core and GIL)."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with StubServer() as stub:
        print(stub.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
