"""Where the repository is, for tests in any folder of any tier."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KITS = REPO / "tests" / "kits"
