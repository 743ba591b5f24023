"""Headless Chromium for the tests that open a page as a reader would (the card, the
checks page): the binary (a skip outside CI where it is missing, a failure in CI), its
flags, and the same with the network cut off."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs Debian's chromium")
        pytest.skip("chromium is not installed")
    return found


def flags(profile: Path, offline: bool = False) -> list[str]:
    """Headless flags; ``offline``: no name resolves and every request goes to a closed
    proxy port, so a page that needs the network shows what a reader offline sees."""
    out = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--hide-scrollbars"]
    if offline:
        out += ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                "--proxy-bypass-list=<-loopback>"]
    return out


def screenshot(page: Path, shot: Path, profile: Path, size: str = "1000,2600",
               offline: bool = False) -> None:
    subprocess.run([chromium(), *flags(profile, offline), f"--window-size={size}",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120,
                   check=True)


def dom(page: Path, profile: Path, offline: bool = False) -> str:
    return subprocess.run([chromium(), *flags(profile, offline), "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=True).stdout
