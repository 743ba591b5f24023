"""The dump mirror layout: streamed bz2 and 7z history files, dumpstatus.json, checksums.

Why stream through compressor objects: a history file never exists in memory, and the
md5/sha1 of the compressed bytes are computed as they are written, so publishing the
checksums costs no second read (a 7z file is read back once: its start header is written
last, and it is ~40x smaller than the XML). Wikimedia publishes each history file twice,
as bz2 (job ``metahistorybz2dump``) and as 7z recompressed from it (``metahistory7zdump``,
``7za a -mx=4``); so does this. bz2 and our 7z writer are pure functions of their input,
so the same seed gives byte-identical files. Conventions are documented in docs/dumps.md.
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
from typing import BinaryIO

from emerge_lib.dumps.sevenzip import SevenZipWriter

HISTORY_JOB = "metahistorybz2dump"
HISTORY_JOBS = {"bz2": HISTORY_JOB, "7z": "metahistory7zdump"}
FORMATS = ("bz2", "7z")


def history_name(wiki: str, date: str, part: int, first: int, last: int,
                 fmt: str = "bz2") -> str:
    stem = f"{wiki}-{date}-pages-meta-history{part}.xml-p{first}p{last}"
    return stem if fmt == "xml" else f"{stem}.{fmt}"


@dataclass
class WrittenFile:
    name: str
    size: int
    md5: str
    sha1: str
    xml_bytes: int
    pages: int
    revisions: int
    format: str = "bz2"  # bz2, 7z, xml (uncompressed), or logging (a pages-logging.xml.gz)


class HistoryWriter:
    """One history file being written in each of ``formats``: header on first page,
    footer and rename on close.

    The final name carries the first and last page id actually written, as Wikimedia's do.
    ``compress=False`` writes plain XML (no extension), for measuring generation alone.
    """

    def __init__(self, folder: Path, wiki: str, date: str, part: int, header: str,
                 *, compress: bool = True, level: int = 9,
                 formats: tuple[str, ...] = FORMATS) -> None:
        self.folder, self.wiki, self.date, self.part = folder, wiki, date, part
        self.header = header
        self.compress = compress
        self.formats = tuple(formats) if compress else ("xml",)
        unknown = set(self.formats) - {*FORMATS, "xml"}
        if unknown or not self.formats:
            raise ValueError(f"dump formats are bz2 and 7z, not {sorted(unknown)}")
        self._comp = bz2.BZ2Compressor(level) if "bz2" in self.formats else None
        self._md5, self._sha1 = hashlib.md5(), hashlib.sha1()
        stem = f".{wiki}-{date}-part{part}-{os.getpid()}-{id(self)}"
        self._tmp = folder / f"{stem}.tmp"
        self._tmp7 = folder / f"{stem}.7z.tmp"
        self._fh: BinaryIO | None = None
        self._fh7: BinaryIO | None = None
        self._seven: SevenZipWriter | None = None
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
        if self._seven is not None:
            self._seven.write(data)
        if self._comp is not None:
            self._write_out(self._comp.compress(data))
        elif "xml" in self.formats:
            self._write_out(data)

    def _write_out(self, out: bytes) -> None:
        if out:
            assert self._fh is not None
            self._fh.write(out)
            self._md5.update(out)
            self._sha1.update(out)
            self.size += len(out)

    def write_page(self, page_id: int, xml: str, revisions: int) -> None:
        if self._fh is None and self._fh7 is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self._comp is not None or "xml" in self.formats:
                self._fh = open(self._tmp, "wb")  # noqa: SIM115 - closed in close()
            if "7z" in self.formats:
                self._fh7 = open(self._tmp7, "wb")  # noqa: SIM115 - closed in close()
                self._seven = SevenZipWriter(self._fh7, "")  # named on close
            self.first = page_id
            self._emit(self.header.encode("utf-8"))
        self.last = page_id
        self.pages += 1
        self.revisions += revisions
        self._emit(xml.encode("utf-8"))

    @property
    def opened(self) -> bool:
        return self._fh is not None or self._fh7 is not None

    def close(self, footer: str) -> list[WrittenFile]:
        """Finish every format; returns the files written (none if no page was)."""
        if not self.opened:
            return []
        self._emit(footer.encode("utf-8"))
        self._flush_pending()
        out = []
        for fmt in self.formats:
            name = history_name(self.wiki, self.date, self.part, self.first, self.last, fmt)
            if fmt == "7z":
                assert self._seven is not None and self._fh7 is not None
                self._seven.name = name[: -len(".7z")]  # the XML file inside, as 7za -si
                size = self._seven.close()
                self._fh7.close()
                md5, sha1 = _digests(self._tmp7)
                os.replace(self._tmp7, self.folder / name)
            else:
                assert self._fh is not None
                if self._comp is not None:
                    self._write_out(self._comp.flush())
                self._fh.close()
                size, md5, sha1 = self.size, self._md5.hexdigest(), self._sha1.hexdigest()
                os.replace(self._tmp, self.folder / name)
            out.append(WrittenFile(name, size, md5, sha1, self.xml_bytes, self.pages,
                                   self.revisions, fmt))
        return out


def _digests(path: Path) -> tuple[str, str]:
    md5, sha1 = hashlib.md5(), hashlib.sha1()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            md5.update(chunk)
            sha1.update(chunk)
    return md5.hexdigest(), sha1.hexdigest()


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
    """Write dumpstatus.json, dumpruninfo and the md5/sha1 sums; returns the names written.
    Each format has its job in dumpstatus.json (as on dumps.wikimedia.org), and so has a
    logging dump (``xmlpagelogsdump``); the sums files list every file."""
    files = sorted(run.files, key=lambda f: f.name)
    updated = finished_at(run.date)
    prefix = f"{run.wiki}-{run.date}"
    jobs = {}
    # a logging dump (sample.logdump) is its own job, as on dumps.wikimedia.org
    for fmt, job in {**HISTORY_JOBS, "logging": "xmlpagelogsdump"}.items():
        listed = [f for f in files if f.format == fmt]
        if not listed:
            continue
        jobs[job] = {
            "status": "done",
            "updated": updated,
            "files": {
                f.name: {
                    "size": f.size,
                    "url": f"/{run.wiki}/{run.date}/{f.name}",
                    "md5": f.md5,
                    "sha1": f.sha1,
                }
                for f in listed
            },
        }
    status = {"jobs": jobs, "version": "0.8"}
    runinfo = {job: {"status": "done", "updated": updated} for job in jobs}
    written = {
        "dumpstatus.json": json.dumps(status, indent=None, sort_keys=False) + "\n",
        f"{prefix}-md5sums.txt": "".join(f"{f.md5}  {f.name}\n" for f in files),
        f"{prefix}-sha1sums.txt": "".join(f"{f.sha1}  {f.name}\n" for f in files),
        f"{prefix}-md5sums.json": json.dumps({"md5": {f.name: f.md5 for f in files}}) + "\n",
        f"{prefix}-sha1sums.json": json.dumps({"sha1": {f.name: f.sha1 for f in files}}) + "\n",
        "dumpruninfo.json": json.dumps({"jobs": runinfo}) + "\n",
        "dumpruninfo.txt": "".join(f"name:{job}; status:done; updated:{updated}\n"
                                   for job in runinfo),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(written)
