"""The redactor's other maskers: a masker told once (Airflow's, in a task) hears every
secret known then and every secret registered later."""

from __future__ import annotations

import os

import pytest

from emerge_lib.core import logs


def test_another_masker_hears_every_secret_now_and_later(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(logs, "_secrets", set())
    monkeypatch.setattr(logs, "_maskers", [])
    for name in [k for k in os.environ if logs.SECRET_NAME.search(k)]:  # this machine's
        monkeypatch.delenv(name)
    monkeypatch.setenv("EMERGE__CURATION__ADDITIONS__API_KEY", "env-key-0123456789")
    monkeypatch.setenv("EMERGE__DUMPS__MIRROR", "https://mirror.example")  # no credential
    logs.register_secrets(["known-before-0123", "short"])  # short: never a mask
    heard: list[str] = []
    logs.also_mask_with(heard.append)
    logs.also_mask_with(heard.append)  # once per masker
    assert sorted(heard) == ["env-key-0123456789", "known-before-0123"]
    logs.register_secrets(["registered-later-0123", "known-before-0123", None])
    assert heard[2:] == ["registered-later-0123"]  # what is new, once
    assert "registered-later-0123" not in logs.redact("a line quoting registered-later-0123")
