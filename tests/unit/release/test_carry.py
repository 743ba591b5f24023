"""The carry-over's fingerprints: the code a snapshot's bytes come from is named by files
that exist, and its digest moves with their sources."""

from __future__ import annotations

from pathlib import Path

import emerge_lib
from emerge_lib.release import carry

ROOT = Path(emerge_lib.__file__).resolve().parent


def test_the_writer_code_names_existing_modules() -> None:
    missing = [p for p in carry.WRITER_CODE if not (ROOT / p).is_file()]
    assert missing == []
    assert "release/windows.py" in carry.WRITER_CODE  # what writes a window's lines


def test_the_code_digest_follows_the_sources(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "windows.py").write_text("A = 1\n")
    fake = tmp_path / "release" / "carry.py"
    fake.write_text("")
    monkeypatch.setattr(carry, "__file__", str(fake))
    carry.code_digest.cache_clear()
    try:
        one = carry.code_digest(("release/windows.py",))
        (tmp_path / "release" / "windows.py").write_text("A = 2\n")
        carry.code_digest.cache_clear()
        two = carry.code_digest(("release/windows.py",))
    finally:
        carry.code_digest.cache_clear()
    assert one != two and len(one) == 32
