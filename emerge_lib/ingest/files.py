"""Dump files as the ingest knows them: a local path, the dump date it belongs to, its
page-id range (from the name, ``…-p100p200.bz2``) and its published sha1; grouped by dump
date, oldest first. And the ingest's own error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from emerge_lib.core.errors import EmergeError

_RANGE = re.compile(r"-p(\d+)p(\d+)\.")


_DATE = re.compile(r"-(\d{8})-")


class IngestError(EmergeError):
    """A file failed, or the share of rejected revisions or pages exceeded its limit."""


@dataclass(frozen=True)
class DumpFileRef:
    """A local dump file, the dump date it belongs to, and its published sha1 (a mirror's)."""

    path: Path
    dump_date: str = ""
    sha1: str | None = None

    @classmethod
    def of(cls, path: str | Path, dump_date: str | None = None,
           sha1: str | None = None) -> DumpFileRef:
        p = Path(path)
        if dump_date is None:
            m = _DATE.search(p.name)
            dump_date = m.group(1) if m else ""
        return cls(p, dump_date, sha1)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def page_range(self) -> tuple[int, int] | None:
        m = _RANGE.search(self.path.name)
        return (int(m.group(1)), int(m.group(2))) if m else None


def refs_by_date(files: Sequence[DumpFileRef]) -> dict[str, list[DumpFileRef]]:
    """Files grouped by dump date, oldest first: each newer dump must see the watermarks
    the older one left."""
    out: dict[str, list[DumpFileRef]] = {}
    for r in sorted(files, key=lambda r: (r.dump_date, r.path.name)):
        out.setdefault(r.dump_date, []).append(r)
    return out
