"""Client for a Wikimedia dump mirror (``http(s)://`` or ``file://``).

Why: a quarterly extension downloads ~2-3 TB of history files; a transfer that dies at
90 % must resume where it stopped (HTTP ``Range``), every byte must be verified against
the published sha1/md5 before ingest trusts it, and the sensor that waits for a dump needs
to know whether the history job is ``done``. The layout is Wikimedia's:

    {mirror}/{wiki}/{YYYYMMDD}/dumpstatus.json
    {mirror}/{wiki}/{YYYYMMDD}/{wiki}-{date}-sha1sums.txt / -md5sums.txt
    {mirror}/{wiki}/{YYYYMMDD}/{wiki}-{date}-pages-meta-history1.xml-p1p5000.bz2 ...
    {mirror}/{wiki}/{YYYYMMDD}/{wiki}-{date}-pages-meta-history1.xml-p1p5000.7z ...

Files are addressed by name under ``{mirror}/{wiki}/{date}/`` (the ``url`` in
dumpstatus.json is site-absolute and would break on mirrors that live under a path).

The daily adds/changes dumps live apart, one folder per day, with no dumpstatus.json:

    {mirror}/other/incr/{wiki}/{YYYYMMDD}/{wiki}-{date}-pages-meta-hist-incr.xml.bz2
    {mirror}/other/incr/{wiki}/{YYYYMMDD}/{wiki}-{date}-md5sums.txt, status.txt (done),
                                          maxrevid.txt

:meth:`Mirror.increments` lists those of a date range (a ``DumpFile`` with ``incr``),
verified against the md5sums like any other file.

Beside the history files, a dump run publishes its logging dump (job
``xmlpagelogsdump``, ``{wiki}-{date}-pages-logging.xml.gz``, or the largest wikis' parts
``pages-logging1..N.xml.gz``: the log events up to the run, deletions, restorations and
moves among them), which :meth:`Mirror.logging_dump` finds:
the daily increments do not carry those events (docs/operations.md, the reconciliation).

Every history file is published twice: bz2 (job ``metahistorybz2dump``) and 7z
(``metahistory7zdump``, recompressed from the bz2 after it). :meth:`Mirror.history_files`
takes one file per page range, in the preferred format where both are listed (7z by
default: about half the download, and 4-6x less CPU to decompress).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx
import msgspec

from emerge_lib.core.errors import EmergeError

__all__ = [
    "HISTORY_JOBS",
    "ChecksumMismatchError",
    "DumpFile",
    "DumpNotReadyError",
    "Mirror",
    "MirrorError",
    "history_file_range",
]

logger = logging.getLogger(__name__)

HISTORY_JOB = "metahistorybz2dump"
LOGGING_JOB = "xmlpagelogsdump"  # the run's pages-logging.xml.gz
HISTORY_JOBS = {"7z": "metahistory7zdump", "bz2": HISTORY_JOB}  # format -> dumpstatus job
#: a logging dump's file: its wiki and date, and its part number when split
_LOGGING_NAME = re.compile(r"(?:^|/)([^/]+-\d{8})-pages-logging(\d*)\.xml\.gz$")
_HISTORY_NAME = re.compile(r"-pages-meta-history(\d*)\.xml(?:-p(\d+)p(\d+))?\.")
_DATE = re.compile(r"^\d{8}$")
INCR = "other/incr"  # the adds/changes dumps' folder under a mirror's root
_CHUNK = 1 << 20

Progress = Callable[[int], object]
#: a per-download progress for a dump file (``Progress``), e.g. a tqdm bar's update
ProgressFactory = Callable[["DumpFile"], Progress]


class MirrorError(EmergeError):
    """A mirror request failed for good (after retries) or returned something unusable;
    retryable: a mirror that failed now may answer later."""

    retryable = True


class DumpNotReadyError(MirrorError):
    """The dump job exists but is not ``done`` yet (or is missing)."""


class ChecksumMismatchError(MirrorError):
    """A downloaded file's size, sha1 or md5 differs from the published one (a fresh
    download may be right)."""


class DumpFile(msgspec.Struct, frozen=True):
    """One published dump file; checksums come from dumpstatus.json or the *sums.txt files."""

    wiki: str
    date: str
    name: str
    size: int | None = None
    sha1: str | None = None
    md5: str | None = None
    incr: bool = False  # a daily adds/changes dump, under other/incr/

    @property
    def folder(self) -> tuple[str, ...]:
        """Its folder's path under the mirror's root."""
        return (*INCR.split("/"), self.wiki, self.date) if self.incr else (self.wiki, self.date)


def history_file_range(name: str) -> tuple[int, int, int] | None:
    """``...-pages-meta-history3.xml-p100p200.bz2`` -> (3, 100, 200): the natural sort key."""
    m = _HISTORY_NAME.search(name)
    if m is None:
        return None
    part = int(m.group(1) or 0)
    first = int(m.group(2) or 0)
    last = int(m.group(3) or 0)
    return part, first, last


def is_logging_dump(name: str) -> bool:
    """Whether ``name`` (a file name or path) is named as a logging dump's file or part
    (:func:`logging_parts` then says whether they make one dump of one wiki and date)."""
    return re.search(r"-pages-logging\d*\.xml\.gz$", name) is not None


def logging_parts(names: Sequence[str]) -> list[str]:
    """The file names of one logging dump in reading order: one
    ``<wiki>-<date>-pages-logging.xml.gz``, or the parts ``…-pages-logging1..N.xml.gz`` of
    one wiki and date (the largest wikis' logging dump, a range of log ids each), numbered
    from 1 without a gap; ValueError saying what is wrong otherwise."""
    found = [(m, name) for name in names if (m := _LOGGING_NAME.search(name)) is not None]
    if not names or len(found) != len(names):
        odd = sorted(set(names) - {name for _, name in found})
        raise ValueError(f"not one logging dump: {', '.join(odd) if odd else 'no file'} "
                         "(…-pages-logging.xml.gz, or its parts …-pages-logging1..N.xml.gz)")
    if len({m.group(1) for m, _ in found}) > 1:
        raise ValueError(f"the files are of more than one wiki or date: {', '.join(names)}")
    if len(found) == 1 and not found[0][0].group(2):
        return [found[0][1]]
    if any(not m.group(2) for m, _ in found):
        raise ValueError(f"a whole logging dump beside parts of one: {', '.join(names)}")
    numbered = sorted((int(m.group(2) or 0), name) for m, name in found)
    if [n for n, _ in numbered] != list(range(1, len(numbered) + 1)):
        raise ValueError(f"parts {[n for n, _ in numbered]} are not 1 to {len(numbered)}: "
                         f"{', '.join(names)}")
    return [name for _, name in numbered]


def _sort_key(f: DumpFile) -> tuple[Any, ...]:
    r = history_file_range(f.name)
    return (0, *r, f.name) if r else (1, 0, 0, 0, f.name)


def _stem(name: str) -> str:
    """A file's name without its compression suffix: the same content in each format."""
    for suffix in (".bz2", ".7z"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _parse_sums(text: str) -> dict[str, str]:
    """``<hex>  <name>`` lines (md5sum/sha1sum output) -> {name: hex}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split()
        if len(parts) >= 2:
            out[parts[-1].lstrip("*")] = parts[0].lower()
    return out


class Mirror:
    """A dump mirror rooted at ``base_url`` (``https://dumps.wikimedia.org`` or ``file:///...``).

    ``retries`` and ``backoff`` govern transient failures (connection errors, 5xx, 429,
    bodies that end early); each retry of a download resumes from the bytes on disk.
    """

    def __init__(
        self,
        base_url: str,
        *,
        retries: int = 5,
        backoff: float = 1.0,
        timeout: float = 60.0,
        client: httpx.Client | None = None,
        user_agent: str = "emerge-dumps/0.1 (https://github.com/; EMERGE benchmark builder)",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        parsed = urlparse(self.base_url)
        self.scheme = parsed.scheme
        if self.scheme not in ("http", "https", "file"):
            raise ValueError(f"mirror URL must be http(s):// or file://, got {base_url!r}")
        self._root = Path(unquote(parsed.path)) if self.scheme == "file" else None
        self.retries = retries
        self.backoff = backoff
        self._own_client = client is None and self.scheme != "file"
        self._client = client
        if self._own_client:
            self._client = httpx.Client(
                timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0)),
                follow_redirects=True,
                headers={"User-Agent": user_agent},
            )

    def close(self) -> None:
        if self._own_client and self._client is not None:
            self._client.close()

    def __enter__(self) -> Mirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addressing -----------------------------------------------------------------
    def url(self, wiki: str, date: str, name: str = "") -> str:
        """The URL of ``name`` in the dump directory of ``wiki`` at ``date``."""
        return (
            f"{self.base_url}/{wiki}/{date}/{name}" if name else f"{self.base_url}/{wiki}/{date}/"
        )

    def _local(self, *parts: str) -> Path:
        assert self._root is not None
        return self._root.joinpath(*parts)

    def file_url(self, f: DumpFile) -> str:
        return "/".join((self.base_url, *f.folder, f.name))

    # -- small documents ------------------------------------------------------------
    def _get_bytes(self, wiki: str, date: str, name: str, *,
                   incr: bool = False) -> bytes | None:
        """A small file's content, or None when the mirror does not have it (404 / missing)."""
        folder = DumpFile(wiki, date, name, incr=incr).folder
        if self._root is not None:
            p = self._local(*folder, name)
            return p.read_bytes() if p.is_file() else None
        url = "/".join((self.base_url, *folder, name))
        resp = self._request("GET", url)
        if resp.status_code == 404:
            return None
        return resp.content

    def _request(self, method: str, url: str) -> httpx.Response:
        """One request with retries on transport errors, 5xx and 429; 404 is returned."""
        assert self._client is not None
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                resp = self._client.request(method, url)
            except httpx.TransportError as exc:
                last = exc
            else:
                if resp.status_code >= 500 or resp.status_code == 429:
                    last = MirrorError(f"{method} {url}: HTTP {resp.status_code}")
                elif resp.status_code >= 400 and resp.status_code != 404:
                    raise MirrorError(f"{method} {url}: HTTP {resp.status_code}")
                else:
                    return resp
            if attempt < self.retries:
                delay = self.backoff * 2**attempt
                logger.warning("%s (attempt %d), retrying in %.1fs", last, attempt + 1, delay)
                time.sleep(delay)
        raise MirrorError(
            f"{method} {url} failed after {self.retries + 1} attempts: {last}"
        ) from last

    def dumpstatus(self, wiki: str, date: str) -> dict[str, Any]:
        """The parsed dumpstatus.json; raises DumpNotReadyError when the mirror lacks it."""
        data = self._get_bytes(wiki, date, "dumpstatus.json")
        if data is None:
            raise DumpNotReadyError(f"{wiki} {date}: no dumpstatus.json on {self.base_url}")
        try:
            status = json.loads(data)
        except ValueError as exc:
            raise MirrorError(f"{wiki} {date}: dumpstatus.json is not JSON: {exc}") from exc
        if not isinstance(status, dict) or not isinstance(status.get("jobs"), dict):
            raise MirrorError(f"{wiki} {date}: dumpstatus.json has no 'jobs' object")
        return status

    def job_status(self, wiki: str, date: str, job: str = HISTORY_JOB) -> str | None:
        """``done``, ``in-progress``, ``waiting``, ``failed``... or None if the job is absent."""
        try:
            jobs = self.dumpstatus(wiki, date)["jobs"]
        except DumpNotReadyError:
            return None
        entry = jobs.get(job)
        return entry.get("status") if isinstance(entry, dict) else None

    def checksums(self, wiki: str, date: str, kind: str = "sha1") -> dict[str, str]:
        """{file name: hex digest} from ``{wiki}-{date}-{kind}sums.txt`` ({} when absent)."""
        data = self._get_bytes(wiki, date, f"{wiki}-{date}-{kind}sums.txt")
        return _parse_sums(data.decode("utf-8", "replace")) if data else {}

    def files(
        self, wiki: str, date: str, job: str = HISTORY_JOB, *, require_done: bool = True
    ) -> list[DumpFile]:
        """The files of ``job`` in natural order (history part, then page range).

        Checksums missing from dumpstatus.json are filled from the *sums.txt files, so a
        file without any published checksum is the exception, not the rule.
        """
        jobs = self.dumpstatus(wiki, date)["jobs"]
        entry = jobs.get(job)
        if not isinstance(entry, dict):
            raise DumpNotReadyError(f"{wiki} {date}: job {job!r} not in dumpstatus.json")
        status = entry.get("status")
        if require_done and status != "done":
            raise DumpNotReadyError(f"{wiki} {date}: job {job!r} is {status!r}, not 'done'")
        return sorted(self._job_files(wiki, date, job, entry, {}), key=_sort_key)

    def _job_files(self, wiki: str, date: str, job: str, entry: dict[str, Any],
                   sums: dict[str, dict[str, str]]) -> list[DumpFile]:
        """A job's files with their checksums; ``sums`` caches the *sums.txt files (they
        list every job's files)."""
        listed = entry.get("files") or {}
        if not isinstance(listed, dict):
            raise MirrorError(f"{wiki} {date}: job {job!r} 'files' is not an object")
        out: list[DumpFile] = []
        for name, meta in listed.items():
            meta = meta if isinstance(meta, dict) else {}
            sha1, md5 = meta.get("sha1"), meta.get("md5")
            if sha1 is None:
                if "sha1" not in sums:
                    sums["sha1"] = self.checksums(wiki, date, "sha1")
                sha1 = sums["sha1"].get(name)
            if sha1 is None and md5 is None:
                if "md5" not in sums:
                    sums["md5"] = self.checksums(wiki, date, "md5")
                md5 = sums["md5"].get(name)
            size = meta.get("size")
            out.append(
                DumpFile(
                    wiki=wiki,
                    date=date,
                    name=name,
                    size=int(size) if size is not None else None,
                    sha1=sha1.lower() if isinstance(sha1, str) else None,
                    md5=md5.lower() if isinstance(md5, str) else None,
                )
            )
        return out

    def history_files(
        self,
        wiki: str,
        date: str,
        prefer: str = "7z",
        *,
        require_done: bool = True,
        held: Callable[[DumpFile], bool] | None = None,
    ) -> list[DumpFile]:
        """The history files of a dump, one per page range, in natural order.

        Both formats' jobs are read from dumpstatus.json; of a file listed in both, the
        ``prefer`` format is taken, unless ``held(file)`` says the caller already holds the
        other one as it is (ingested: reading the same revisions again in another format
        would gain nothing). A job that is not ``done`` contributes nothing (the 7z job
        finishes after the bz2 one), so files come as bz2 until their 7z is published.
        """
        if prefer not in HISTORY_JOBS:
            raise ValueError(f"prefer must be one of {sorted(HISTORY_JOBS)}, not {prefer!r}")
        jobs = self.dumpstatus(wiki, date)["jobs"]
        order = [prefer] + [f for f in HISTORY_JOBS if f != prefer]
        sums: dict[str, dict[str, str]] = {}
        by_format: dict[str, dict[str, DumpFile]] = {}
        states = []
        for fmt in order:
            job = HISTORY_JOBS[fmt]
            entry = jobs.get(job)
            state = entry.get("status") if isinstance(entry, dict) else None
            states.append(f"{job} {state or 'absent'}")
            if isinstance(entry, dict) and (state == "done" or not require_done):
                by_format[fmt] = {_stem(f.name): f
                                  for f in self._job_files(wiki, date, job, entry, sums)}
        if not by_format:
            raise DumpNotReadyError(f"{wiki} {date}: no history job is done ({', '.join(states)})")
        out: list[DumpFile] = []
        for stem in dict.fromkeys(s for files in by_format.values() for s in files):
            offered = [by_format[fmt][stem] for fmt in order if stem in by_format.get(fmt, {})]
            kept = [f for f in offered if held is not None and held(f)]
            out.append((kept or offered)[0])
        return sorted(out, key=_sort_key)

    def logging_dump(self, wiki: str, date: str) -> list[DumpFile]:
        """The dump run's logging dump (job ``xmlpagelogsdump``) with its checksums: one
        ``pages-logging.xml.gz``, or the largest wikis' parts ``pages-logging1..N.xml.gz``
        (each a range of log ids), in order; DumpNotReadyError while the job is not
        ``done`` or the run has none."""
        files = {f.name: f for f in self.files(wiki, date, LOGGING_JOB)}
        try:
            return [files[name] for name in logging_parts(list(files))]
        except ValueError as exc:
            raise MirrorError(f"{wiki} {date}: job {LOGGING_JOB!r}: {exc}") from None

    def dates(self, wiki: str) -> list[str]:
        """Dump dates (YYYYMMDD) listed for ``wiki``, ascending (directory index or listing)."""
        if self._root is not None:
            d = self._local(wiki)
            names = [p.name for p in d.iterdir() if p.is_dir()] if d.is_dir() else []
        else:
            resp = self._request("GET", f"{self.base_url}/{wiki}/")
            if resp.status_code == 404:
                return []
            names = re.findall(r'href="(\d{8})/?"', resp.text)
        return sorted({n for n in names if _DATE.match(n)})

    def increment_dates(self, wiki: str) -> list[str]:
        """Days (YYYYMMDD) with an adds/changes dump of ``wiki``, ascending."""
        if self._root is not None:
            d = self._local(*INCR.split("/"), wiki)
            names = [p.name for p in d.iterdir() if p.is_dir()] if d.is_dir() else []
        else:
            resp = self._request("GET", f"{self.base_url}/{INCR}/{wiki}/")
            if resp.status_code == 404:
                return []
            names = re.findall(r'href="(\d{8})/?"', resp.text)
        return sorted({n for n in names if _DATE.match(n)})

    def increment(self, wiki: str, date: str) -> DumpFile:
        """The day's pages-meta-hist-incr file with its published md5; DumpNotReadyError
        while its status.txt is not ``done`` (or the day is missing)."""
        status = self._get_bytes(wiki, date, "status.txt", incr=True)
        state = status.decode("utf-8", "replace").strip() if status is not None else None
        if state != "done":
            raise DumpNotReadyError(f"{wiki} {date}: the adds/changes dump is "
                                    f"{state or 'absent'!r}, not 'done' ({INCR}/{wiki}/{date})")
        data = self._get_bytes(wiki, date, f"{wiki}-{date}-md5sums.txt", incr=True)
        sums = _parse_sums(data.decode("utf-8", "replace")) if data else {}
        name = f"{wiki}-{date}-pages-meta-hist-incr.xml.bz2"
        if name not in sums:
            raise MirrorError(f"{wiki} {date}: {name} is not in the adds/changes dump's md5sums")
        return DumpFile(wiki, date, name, md5=sums[name], incr=True)

    def increments(self, wiki: str, first: str, last: str) -> list[DumpFile]:
        """The adds/changes dumps of ``first`` … ``last`` (YYYYMMDD, inclusive), oldest
        first. Every day of the range must be published and done: a missing day would
        leave a gap the ingest can only refuse, page by page."""
        listed = set(self.increment_dates(wiki))
        days = _days(first, last)
        missing = [d for d in days if d not in listed]
        if missing:
            raise DumpNotReadyError(
                f"{wiki}: no adds/changes dump for {len(missing)} day(s) of {first}..{last} "
                f"on {self.base_url} (first: {missing[0]})")
        return [self.increment(wiki, d) for d in days]

    # -- downloads ------------------------------------------------------------------
    def local_path(self, f: DumpFile, *, verify: bool = False) -> Path:
        """On a ``file://`` mirror, the file itself (read in place instead of copying
        terabytes); ``verify`` checks size and checksum first."""
        if self._root is None:
            raise MirrorError("local_path() needs a file:// mirror; use download()")
        path = self._local(*f.folder, f.name)
        if not path.is_file():
            raise MirrorError(f"{path} does not exist")
        if verify:
            if f.size is not None and path.stat().st_size != f.size:
                raise ChecksumMismatchError(
                    f"{f.name}: size {path.stat().st_size} != published {f.size}"
                )
            if not self._verify(f, path):
                raise ChecksumMismatchError(f"{f.name}: checksum differs from the published one")
        return path

    def download(
        self,
        f: DumpFile,
        dest_dir: str | os.PathLike[str],
        *,
        progress: Progress | None = None,
        verify: bool = True,
    ) -> Path:
        """Fetch ``f`` into ``dest_dir`` (resuming a ``.part`` file), verify, and rename.

        ``progress`` is called with byte increments (first with the bytes already on disk
        when resuming), e.g. ``tqdm.update``. A complete, verified target is not fetched
        again. On a checksum mismatch the bad file is removed and ChecksumMismatchError
        raised, so a rerun starts clean.
        """
        dest = Path(dest_dir) / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_file() and (f.size is None or dest.stat().st_size == f.size):
            if not verify or self._verify(f, dest):
                logger.info("%s already present and verified", dest.name)
                return dest
            dest.unlink()
        part = dest.with_name(dest.name + ".part")
        hashers = _hashers(f) if verify else {}
        if part.exists():
            have = part.stat().st_size
            if f.size is not None and have > f.size:
                part.unlink()
                have = 0
            elif hashers and have:
                _hash_file(part, hashers)
        else:
            have = 0
        if have and progress is not None:
            progress(have)
        started, start_bytes = time.monotonic(), have
        rate_log = _RateLog(f.name, f.size)

        def report(n: int) -> None:
            rate_log(n)
            if progress is not None:
                progress(n)

        if self._root is not None:
            self._copy_local(f, part, have, hashers, report)
        else:
            self._fetch_http(f, part, have, hashers, report)
        size = part.stat().st_size
        elapsed = max(time.monotonic() - started, 1e-9)
        mb = (size - start_bytes) / 1e6
        logger.info(
            "downloaded %s: %.1f MB in %.1fs (%.1f MB/s)", f.name, mb, elapsed, mb / elapsed
        )
        if f.size is not None and size != f.size:
            part.unlink()
            raise ChecksumMismatchError(f"{f.name}: size {size} != published {f.size}")
        if verify:
            self._check_digests(f, part, hashers)
        part.replace(dest)
        return dest

    def _copy_local(
        self, f: DumpFile, part: Path, have: int, hashers: dict[str, Any], progress: Progress | None
    ) -> None:
        src = self._local(*f.folder, f.name)
        if not src.is_file():
            raise MirrorError(f"{src} does not exist")
        with open(src, "rb") as fin, open(part, "ab") as fout:
            fin.seek(have)
            while chunk := fin.read(_CHUNK):
                fout.write(chunk)
                for h in hashers.values():
                    h.update(chunk)
                if progress is not None:
                    progress(len(chunk))

    def _fetch_http(
        self, f: DumpFile, part: Path, have: int, hashers: dict[str, Any], progress: Progress | None
    ) -> None:
        assert self._client is not None
        url = self.file_url(f)
        attempt = 0
        while True:
            if f.size is not None and have >= f.size:
                return
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                with self._client.stream("GET", url, headers=headers) as resp:
                    if resp.status_code == 416 and f.size is None:
                        return  # nothing left to send: the part file is complete
                    if resp.status_code == 404:
                        raise MirrorError(f"{url}: HTTP 404")
                    if resp.status_code >= 400:
                        raise _Retryable(f"{url}: HTTP {resp.status_code}")
                    if have and resp.status_code == 200:
                        # The server ignored Range: start over rather than append a duplicate.
                        logger.warning("%s: server ignored Range, restarting from 0", f.name)
                        have = 0
                        for k in list(hashers):
                            hashers[k] = hashlib.new(k)
                        mode = "wb"
                    elif resp.status_code == 206:
                        start = _content_range_start(resp.headers.get("content-range"))
                        if start != have:
                            raise MirrorError(
                                f"{url}: asked for byte {have}, got Content-Range {start}"
                            )
                        mode = "ab"
                    else:
                        mode = "ab" if have else "wb"
                    with open(part, mode) as out:
                        for chunk in resp.iter_bytes():  # unbuffered: a cut keeps what arrived
                            out.write(chunk)
                            have += len(chunk)
                            for h in hashers.values():
                                h.update(chunk)
                            if progress is not None:
                                progress(len(chunk))
                if f.size is None or have >= f.size:
                    return
                raise _Retryable(f"{url}: body ended at byte {have} of {f.size}")
            except (httpx.TransportError, _Retryable) as exc:
                attempt += 1
                if attempt > self.retries:
                    raise MirrorError(
                        f"{url}: giving up after {attempt} attempts at byte {have}: {exc}"
                    ) from exc
                delay = self.backoff * 2 ** (attempt - 1)
                logger.warning("%s: %s; resuming at byte %d in %.1fs", f.name, exc, have, delay)
                time.sleep(delay)

    def _verify(self, f: DumpFile, path: Path) -> bool:
        hashers = _hashers(f)
        if not hashers:
            return True
        _hash_file(path, hashers)
        try:
            self._check_digests(f, path, hashers, remove=False)
        except ChecksumMismatchError:
            return False
        return True

    def _check_digests(
        self, f: DumpFile, path: Path, hashers: dict[str, Any], remove: bool = True
    ) -> None:
        expected = {"sha1": f.sha1, "md5": f.md5}
        for algo, h in hashers.items():
            got = h.hexdigest()
            if got != expected[algo]:
                if remove:
                    path.unlink(missing_ok=True)
                raise ChecksumMismatchError(f"{f.name}: {algo} {got} != published {expected[algo]}")
        if not hashers:
            logger.warning("%s: no published checksum, size-only verification", f.name)


def _days(first: str, last: str) -> list[str]:
    """YYYYMMDD days from ``first`` to ``last``, inclusive."""
    from datetime import datetime, timedelta

    try:
        day, end = (datetime.strptime(d, "%Y%m%d") for d in (first, last))
    except ValueError as exc:
        raise MirrorError(f"not a YYYYMMDD date range: {first}..{last}") from exc
    out = []
    while day <= end:
        out.append(day.strftime("%Y%m%d"))
        day += timedelta(days=1)
    return out


class _Retryable(Exception):
    pass


class _RateLog:
    """Periodic ``MB done / total (MB/s)`` log lines: Airflow task logs have no tqdm bar."""

    def __init__(self, name: str, total: int | None, every_s: float = 30.0) -> None:
        self.name, self.total, self.every_s = name, total, every_s
        self.t0 = self.last = time.monotonic()
        self.done = 0

    def __call__(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            rate = self.done / 1e6 / max(now - self.t0, 1e-9)
            total = f"/{self.total / 1e6:.1f}" if self.total else ""
            logger.info(
                "downloading %s: %.1f%s MB (%.1f MB/s)", self.name, self.done / 1e6, total, rate
            )


def _hashers(f: DumpFile) -> dict[str, Any]:
    """sha1 when published (what Wikimedia lists first), else md5; none if neither."""
    if f.sha1:
        return {"sha1": hashlib.sha1()}
    if f.md5:
        return {"md5": hashlib.md5()}
    return {}


def _hash_file(path: Path, hashers: dict[str, Any]) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            for h in hashers.values():
                h.update(chunk)


def _content_range_start(value: str | None) -> int | None:
    m = re.match(r"bytes (\d+)-", value or "")
    return int(m.group(1)) if m else None
