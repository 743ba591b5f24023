"""The history files a configuration names, as local paths (downloaded when remote).

A ``file://`` mirror is read in place (verified against its published checksums); an
``http(s)://`` mirror is downloaded into ``dumps.download_dir`` with resumable, verified
transfers. ``progress_factory`` lets the CLI show a progress bar per file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from emerge_lib.config import Config, WikiDumps
from emerge_lib.dumps.mirror import DumpFile, Mirror

ProgressFactory = Callable[[DumpFile], Callable[[int], object]]


def history_files(
    cfg: Config, dumps: WikiDumps, progress_factory: ProgressFactory | None = None
) -> list[tuple[Path, str]]:
    """(local path, dump date) of every history file of every configured dump date."""
    out: list[tuple[Path, str]] = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for date in dumps.dates:
            for f in mirror.files(dumps.wiki, date):
                if mirror.scheme == "file":
                    out.append((mirror.local_path(f, verify=True), date))
                else:
                    progress = progress_factory(f) if progress_factory else None
                    dest = Path(cfg.dumps.download_dir) / dumps.wiki / date
                    out.append((mirror.download(f, dest, progress=progress), date))
    return out
