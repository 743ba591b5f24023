"""The dump mirror layout: streamed bz2 history files, dumpstatus.json, checksum files.

Why stream through a compressor object: a history file never exists in memory, and the
md5/sha1 of the compressed bytes are computed as they are written, so publishing the
checksums costs no second read. bz2 output is a pure function of its input, so the same
seed gives byte-identical files. Conventions are documented in docs/dumps.md.
"""

from __future__ import annotations

import bz2
import calendar
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

HISTORY_JOB = "metahistorybz2dump"


def history_name(wiki: str, date: str, part: int, first: int, last: int) -> str:
    return f"{wiki}-{date}-pages-meta-history{part}.xml-p{first}p{last}.bz2"


@dataclass
class WrittenFile:
    name: str
    size: int
    md5: str
    sha1: str
    xml_bytes: int
    pages: int
    revisions: int


class HistoryWriter:
    """One history file being written: header on first page, footer and rename on close.

    The final name carries the first and last page id actually written, as Wikimedia's do.
    ``compress=False`` writes plain XML (``.xml``), for measuring generation alone.
    """

    def __init__(self, folder: Path, wiki: str, date: str, part: int, header: str,
                 *, compress: bool = True, level: int = 9) -> None:
        self.folder, self.wiki, self.date, self.part = folder, wiki, date, part
        self.header = header
        self.compress = compress
        self._comp = bz2.BZ2Compressor(level) if compress else None
        self._md5, self._sha1 = hashlib.md5(), hashlib.sha1()
        self._tmp = folder / f".{wiki}-{date}-part{part}-{os.getpid()}-{id(self)}.tmp"
        self._fh = None
        self.first = self.last = 0
        self.size = self.xml_bytes = self.pages = self.revisions = 0
        self._pending: list[bytes] = []
        self._pending_len = 0

    def _emit(self, data: bytes) -> None:
        self.xml_bytes += len(data)
        self._pending.append(data)
        self._pending_len += len(data)
        if self._pending_len >= 1 << 20:
            self._flush_pending()

    def _flush_pending(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        out = self._comp.compress(data) if self._comp is not None else data
        self._write_out(out)

    def _write_out(self, out: bytes) -> None:
        if out:
            assert self._fh is not None
            self._fh.write(out)
            self._md5.update(out)
            self._sha1.update(out)
            self.size += len(out)

    def write_page(self, page_id: int, xml: str, revisions: int) -> None:
        if self._fh is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fh = open(self._tmp, "wb")  # noqa: SIM115 - closed in close()
            self.first = page_id
            self._emit(self.header.encode("utf-8"))
        self.last = page_id
        self.pages += 1
        self.revisions += revisions
        self._emit(xml.encode("utf-8"))

    @property
    def opened(self) -> bool:
        return self._fh is not None

    def close(self, footer: str) -> WrittenFile | None:
        if self._fh is None:
            return None
        self._emit(footer.encode("utf-8"))
        self._flush_pending()
        if self._comp is not None:
            self._write_out(self._comp.flush())
        self._fh.close()
        name = history_name(self.wiki, self.date, self.part, self.first, self.last)
        if not self.compress:
            name = name[: -len(".bz2")]
        final = self.folder / name
        os.replace(self._tmp, final)
        return WrittenFile(name, self.size, self._md5.hexdigest(), self._sha1.hexdigest(),
                           self.xml_bytes, self.pages, self.revisions)


@dataclass
class DumpRun:
    """What one wiki's dump at one date published."""

    wiki: str
    date: str
    files: list[WrittenFile] = field(default_factory=list)


def finished_at(date: str) -> str:
    """When the (simulated) history job finished: three days after the dump date."""
    ts = calendar.timegm(time.strptime(date, "%Y%m%d")) + 3 * 86400 + 4 * 3600 + 757
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))


def publish(folder: Path, run: DumpRun) -> list[str]:
    """Write dumpstatus.json, dumpruninfo and the md5/sha1 sums; returns the names written."""
    files = sorted(run.files, key=lambda f: f.name)
    updated = finished_at(run.date)
    prefix = f"{run.wiki}-{run.date}"
    status = {
        "jobs": {
            HISTORY_JOB: {
                "status": "done",
                "updated": updated,
                "files": {
                    f.name: {
                        "size": f.size,
                        "url": f"/{run.wiki}/{run.date}/{f.name}",
                        "md5": f.md5,
                        "sha1": f.sha1,
                    }
                    for f in files
                },
            },
        },
        "version": "0.8",
    }
    written = {
        "dumpstatus.json": json.dumps(status, indent=None, sort_keys=False) + "\n",
        f"{prefix}-md5sums.txt": "".join(f"{f.md5}  {f.name}\n" for f in files),
        f"{prefix}-sha1sums.txt": "".join(f"{f.sha1}  {f.name}\n" for f in files),
        f"{prefix}-md5sums.json": json.dumps({"md5": {f.name: f.md5 for f in files}}) + "\n",
        f"{prefix}-sha1sums.json": json.dumps({"sha1": {f.name: f.sha1 for f in files}}) + "\n",
        "dumpruninfo.json": json.dumps({"jobs": {HISTORY_JOB: {"status": "done", "updated": updated}}}) + "\n",
        "dumpruninfo.txt": f"name:{HISTORY_JOB}; status:done; updated:{updated}\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(written)
