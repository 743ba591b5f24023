"""The engine-call deadline (core.engine.CallDeadline) on a stand-in client: a call that
gets no answer is interrupted, then its channel closed, and the caller gets one
EngineCallTimeout naming what was asked; calls within the deadline are untouched."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from emerge_lib.core.engine import CallDeadline, EngineCallTimeout, engine_activity


class Client:
    """Spark Connect's client methods the deadline wraps: each waits until ``release``
    is set (an interrupt the engine honours) or the channel is closed."""

    def __init__(self, honours_interrupt: bool) -> None:
        self.honours_interrupt = honours_interrupt
        self.release = threading.Event()
        self.interrupts = 0
        self.closed = False
        client = self

        class Channel:
            def close(self) -> None:
                client.closed = True
                client.release.set()

        self._channel = Channel()

    def _wait(self, seconds: float) -> str:
        if self.release.wait(seconds):
            raise RuntimeError("operation not found" if not self.closed else
                               "Cannot invoke RPC on closed channel!")
        return "answer"

    def _execute(self, seconds: float) -> str:
        return self._wait(seconds)

    def _execute_and_fetch_as_iterator(self, seconds: float) -> Iterator[str]:
        yield "first"
        yield self._wait(seconds)

    def _analyze(self, seconds: float) -> str:
        return self._wait(seconds)

    def config(self, seconds: float) -> str:
        raise ValueError("a bad setting")

    def interrupt_all(self) -> list[str]:
        self.interrupts += 1
        if self.honours_interrupt:
            self.release.set()
        return ["op"]


def test_calls_within_the_deadline_are_untouched() -> None:
    client = Client(honours_interrupt=True)
    deadline = CallDeadline(client, timeout_s=5)
    try:
        assert client._execute(0.01) == "answer"
        assert list(client._execute_and_fetch_as_iterator(0.01)) == ["first", "answer"]
        with pytest.raises(ValueError, match="a bad setting"):  # other errors pass through
            client.config(0)
        assert client.interrupts == 0
    finally:
        deadline.close()


def test_a_call_past_its_deadline_is_interrupted_and_named() -> None:
    client = Client(honours_interrupt=True)
    deadline = CallDeadline(client, timeout_s=0.3, grace_s=5)
    try:
        started = time.monotonic()
        with engine_activity("stage deltas 2024-01-01T00:00:00Z"), \
                engine_activity("delta_triples: replace partitions"), \
                pytest.raises(EngineCallTimeout) as info:
            list(client._execute_and_fetch_as_iterator(60))
        assert time.monotonic() - started < 5
        text = str(info.value)
        assert "stage deltas 2024-01-01T00:00:00Z, delta_triples: replace partitions (a query)" \
            in text
        assert "engine.call_timeout_s" in text and info.value.retryable
        assert client.interrupts == 1 and not client.closed
    finally:
        deadline.close()


def test_an_engine_that_ignores_the_interrupt_loses_its_channel() -> None:
    client = Client(honours_interrupt=False)
    deadline = CallDeadline(client, timeout_s=0.3, grace_s=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(EngineCallTimeout, match=r"an engine call \(a command\)"):
            client._execute(60)
        assert time.monotonic() - started < 5
        assert client.interrupts == 1 and client.closed
    finally:
        deadline.close()


def test_each_call_has_its_own_deadline() -> None:
    """Many short calls add up to more than the deadline without tripping it."""
    client = Client(honours_interrupt=True)
    deadline = CallDeadline(client, timeout_s=0.2)
    try:
        for _ in range(8):
            assert client._analyze(0.05) == "answer"
        assert client.interrupts == 0
    finally:
        deadline.close()
