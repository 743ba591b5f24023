"""Dump files as the ingest knows them: a local path, the dump date it belongs to, its
page-id range (from the name, ``…-p100p200.bz2``) and its published sha1; grouped by dump
date, oldest first. And the ingest's own error and its lock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from emerge_lib.catalog.storage import timelines_lock
from emerge_lib.core.errors import EmergeError

if TYPE_CHECKING:
    from emerge_lib.catalog import Catalog

_RANGE = re.compile(r"-p(\d+)p(\d+)\.")


_DATE = re.compile(r"-(\d{8})-")


#: Wikimedia's daily adds/changes dumps (other/incr/…): ``<wiki>-<date>-pages-meta-hist-incr``
_INCREMENT = re.compile(r"-\d{8}-pages-meta-hist-incr\.xml")


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

    @property
    def increment(self) -> bool:
        """A daily adds/changes dump: only the day's revisions, continued from the
        warehouse (``ingest.wikidata.extract``), by its Wikimedia name."""
        return _INCREMENT.search(self.path.name) is not None


def refs_by_date(files: Sequence[DumpFileRef]) -> dict[str, list[DumpFileRef]]:
    """Files grouped by dump date, oldest first: each newer dump must see the watermarks
    the older one left. A day's increment (``DumpFileRef.increment``, keyed ``DATE+incr``)
    follows the full dump of its date, which holds the revisions before that day."""
    out: dict[str, list[DumpFileRef]] = {}
    for r in sorted(files, key=lambda r: (r.dump_date, r.increment, r.path.name)):
        out.setdefault(f"{r.dump_date}+incr" if r.increment else r.dump_date, []).append(r)
    return out


@contextmanager
def ingest_lock(catalog: Catalog, wiki: str) -> Iterator[None]:
    """One ingest of a wiki at a time, and none while a stage reads its timelines (two
    builds started side by side: the second waits, then finds the files done). On an
    ``s3://`` warehouse the lock is this machine's; the commit's basis check still refuses
    to commit an extraction that went stale under another machine's writer."""
    with timelines_lock(catalog.warehouse, [wiki], mode="write"):
        yield
