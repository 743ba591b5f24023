"""Mirror client against a real HTTP server on 127.0.0.1 (Range, cut transfers, checksums)."""

from __future__ import annotations

import bz2
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from emerge_lib.dumps.mirror import (
    ChecksumMismatchError,
    DumpFile,
    DumpNotReadyError,
    Mirror,
    MirrorError,
    history_file_range,
)

WIKI, DATE = "wikidatawiki", "20240301"
# Lexicographic order (history10 < history2) differs from the natural order on purpose.
NAMES = [
    f"{WIKI}-{DATE}-pages-meta-history10.xml-p90p99.bz2",
    f"{WIKI}-{DATE}-pages-meta-history2.xml-p5001p6000.bz2",
    f"{WIKI}-{DATE}-pages-meta-history1.xml-p1p5000.bz2",
]


class _Handler(SimpleHTTPRequestHandler):
    """Static files with Range support plus fault injection, configured on the server."""

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        srv = self.server
        path = Path(self.translate_path(self.path))
        srv.requests.append((self.path, self.headers.get("Range")))  # type: ignore[attr-defined]
        if srv.fail_once.pop(path.name, False):  # type: ignore[attr-defined]
            self.send_error(503, "try again")
            return
        if path.is_dir() or not path.is_file():
            return super().do_GET()
        data = path.read_bytes()
        start = 0
        rng = self.headers.get("Range")
        if rng and not srv.ignore_range:  # type: ignore[attr-defined]
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = srv.cut_once.pop(path.name, None)  # type: ignore[attr-defined]
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


def _history_xml(n: int) -> bytes:
    pages = "".join(
        f"<page><title>Q{i}</title><ns>0</ns><id>{i}</id><revision><id>{i}</id>"
        f"<timestamp>2024-01-01T00:00:00Z</timestamp><text>{os.urandom(64).hex()}</text></revision></page>"
        for i in range(n)
    )
    return f"<mediawiki>{pages}</mediawiki>".encode()


@pytest.fixture()
def mirror_dir(tmp_path: Path) -> Path:
    root = tmp_path / "mirror"
    d = root / WIKI / DATE
    d.mkdir(parents=True)
    files = {}
    for k, name in enumerate(NAMES):
        data = bz2.compress(_history_xml(1500 + k), 1)
        (d / name).write_bytes(data)
        files[name] = data
    status_files = {
        name: {
            "size": len(data),
            "url": f"/{WIKI}/{DATE}/{name}",
            "md5": hashlib.md5(data).hexdigest(),
            # the first file has no sha1 in dumpstatus: must come from sha1sums.txt
            **({"sha1": hashlib.sha1(data).hexdigest()} if name != NAMES[0] else {}),
        }
        for name, data in files.items()
    }
    status = {
        "jobs": {
            "metahistorybz2dump": {
                "status": "done",
                "updated": "2024-03-05 10:00:00",
                "files": status_files,
            },
            "metahistory7zdump": {"status": "in-progress", "files": {}},
        },
        "version": "0.8",
    }
    (d / "dumpstatus.json").write_text(json.dumps(status))
    (d / f"{WIKI}-{DATE}-sha1sums.txt").write_text(
        "".join(f"{hashlib.sha1(data).hexdigest()}  {name}\n" for name, data in files.items())
    )
    (d / f"{WIKI}-{DATE}-md5sums.txt").write_text(
        "".join(f"{hashlib.md5(data).hexdigest()}  {name}\n" for name, data in files.items())
    )
    (root / WIKI / "20240201").mkdir()
    (root / WIKI / "20240201" / "dumpstatus.json").write_text(
        json.dumps({"jobs": {"metahistorybz2dump": {"status": "failed", "files": {}}}})
    )
    return root


@pytest.fixture()
def server(mirror_dir: Path) -> Iterator[ThreadingHTTPServer]:
    def handler(*args: object, **kwargs: object) -> _Handler:
        return _Handler(*args, directory=str(mirror_dir), **kwargs)  # type: ignore[arg-type]

    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.requests = []  # type: ignore[attr-defined]
    srv.cut_once = {}  # type: ignore[attr-defined]
    srv.fail_once = {}  # type: ignore[attr-defined]
    srv.ignore_range = False  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def test_history_file_range_natural_order() -> None:
    assert history_file_range(NAMES[0]) == (10, 90, 99)
    assert history_file_range(f"{WIKI}-{DATE}-pages-meta-history.xml.bz2") == (0, 0, 0)
    assert history_file_range("enwiki-20240301-pages-articles.xml.bz2") is None


def test_files_from_dumpstatus_with_sums_fallback(
    server: ThreadingHTTPServer, mirror_dir: Path
) -> None:
    with Mirror(_url(server), backoff=0) as m:
        files = m.files(WIKI, DATE)
    assert [f.name for f in files] == [NAMES[2], NAMES[1], NAMES[0]]
    by_name = {f.name: f for f in files}
    data0 = (mirror_dir / WIKI / DATE / NAMES[0]).read_bytes()
    assert by_name[NAMES[0]].sha1 == hashlib.sha1(data0).hexdigest()  # from sha1sums.txt
    assert by_name[NAMES[0]].size == len(data0)
    assert by_name[NAMES[0]].md5 == hashlib.md5(data0).hexdigest()


def test_transient_503_is_retried(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    server.fail_once["dumpstatus.json"] = True  # type: ignore[attr-defined]
    with Mirror(_url(server), backoff=0) as m:
        files = m.files(WIKI, DATE)
        server.fail_once[files[0].name] = True  # type: ignore[attr-defined]
        out = m.download(files[0], tmp_path)
    assert out.stat().st_size == files[0].size
    status_requests = [p for p, _ in server.requests if p.endswith("dumpstatus.json")]  # type: ignore[attr-defined]
    assert len(status_requests) == 2
    with Mirror(_url(server), backoff=0, retries=0) as m:
        server.fail_once["dumpstatus.json"] = True  # type: ignore[attr-defined]
        with pytest.raises(MirrorError, match="503"):
            m.dumpstatus(WIKI, DATE)


def test_job_not_done_and_missing_dump(server: ThreadingHTTPServer) -> None:
    with Mirror(_url(server), backoff=0) as m:
        with pytest.raises(DumpNotReadyError, match="in-progress"):
            m.files(WIKI, DATE, "metahistory7zdump")
        with pytest.raises(DumpNotReadyError, match="failed"):
            m.files(WIKI, "20240201")
        with pytest.raises(DumpNotReadyError, match="no dumpstatus"):
            m.files(WIKI, "20990101")
        assert m.job_status(WIKI, DATE) == "done"
        assert m.dates(WIKI) == ["20240201", DATE]


def test_download_full_with_progress(
    server: ThreadingHTTPServer, mirror_dir: Path, tmp_path: Path
) -> None:
    seen: list[int] = []
    with Mirror(_url(server), backoff=0) as m:
        f = m.files(WIKI, DATE)[0]
        out = m.download(f, tmp_path / "dl", progress=seen.append)
    assert out.read_bytes() == (mirror_dir / WIKI / DATE / f.name).read_bytes()
    assert sum(seen) == f.size
    assert not out.with_name(out.name + ".part").exists()


def test_download_resumes_after_cut_connection(
    server: ThreadingHTTPServer, mirror_dir: Path, tmp_path: Path
) -> None:
    with Mirror(_url(server), backoff=0, retries=3) as m:
        f = m.files(WIKI, DATE)[1]
        assert f.size is not None and f.size > 50_000
        cut = f.size // 3
        server.cut_once[f.name] = cut  # type: ignore[attr-defined]
        out = m.download(f, tmp_path / "dl")
    assert out.read_bytes() == (mirror_dir / WIKI / DATE / f.name).read_bytes()
    ranges = [r for p, r in server.requests if p.endswith(f.name)]  # type: ignore[attr-defined]
    assert ranges == [None, f"bytes={cut}-"]


def test_download_resumes_existing_part_file(
    server: ThreadingHTTPServer, mirror_dir: Path, tmp_path: Path
) -> None:
    with Mirror(_url(server), backoff=0) as m:
        f = m.files(WIKI, DATE)[0]
        src = (mirror_dir / WIKI / DATE / f.name).read_bytes()
        dest = tmp_path / "dl"
        dest.mkdir()
        (dest / (f.name + ".part")).write_bytes(src[:12345])
        seen: list[int] = []
        out = m.download(f, dest, progress=seen.append)
    assert out.read_bytes() == src
    assert seen[0] == 12345 and sum(seen) == len(src)
    ranges = [r for p, r in server.requests if p.endswith(f.name)]  # type: ignore[attr-defined]
    assert ranges == ["bytes=12345-"]


def test_server_ignoring_range_restarts_cleanly(
    server: ThreadingHTTPServer, mirror_dir: Path, tmp_path: Path
) -> None:
    server.ignore_range = True  # type: ignore[attr-defined]
    with Mirror(_url(server), backoff=0) as m:
        f = m.files(WIKI, DATE)[0]
        src = (mirror_dir / WIKI / DATE / f.name).read_bytes()
        (tmp_path / (f.name + ".part")).write_bytes(src[:999])
        out = m.download(f, tmp_path)
    assert out.read_bytes() == src


def test_checksum_mismatch_removes_file(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    with Mirror(_url(server), backoff=0) as m:
        good = m.files(WIKI, DATE)[0]
        bad = DumpFile(good.wiki, good.date, good.name, good.size, sha1="0" * 40)
        with pytest.raises(ChecksumMismatchError, match="sha1"):
            m.download(bad, tmp_path)
        assert not (tmp_path / good.name).exists()
        assert not (tmp_path / (good.name + ".part")).exists()
        # md5-only verification catches corruption as well
        bad_md5 = DumpFile(good.wiki, good.date, good.name, good.size, md5="f" * 32)
        with pytest.raises(ChecksumMismatchError, match="md5"):
            m.download(bad_md5, tmp_path)
        # and the correct file then downloads and verifies
        assert m.download(good, tmp_path).stat().st_size == good.size


def test_missing_file_is_an_error(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    with Mirror(_url(server), backoff=0, retries=1) as m, pytest.raises(MirrorError, match="404"):
        m.download(DumpFile(WIKI, DATE, "nope.bz2", 10), tmp_path)


def test_file_mirror(mirror_dir: Path, tmp_path: Path) -> None:
    m = Mirror(mirror_dir.as_uri())
    files = m.files(WIKI, DATE)
    assert [f.name for f in files] == [NAMES[2], NAMES[1], NAMES[0]]
    assert m.dates(WIKI) == ["20240201", DATE]
    out = m.download(files[0], tmp_path)
    assert out.read_bytes() == (mirror_dir / WIKI / DATE / files[0].name).read_bytes()
    with pytest.raises(ChecksumMismatchError):
        m.download(
            DumpFile(WIKI, DATE, files[1].name, files[1].size, sha1="1" * 40), tmp_path / "x"
        )


def _increments(root: Path, days: list[str], status: str = "done") -> dict[str, bytes]:
    """Adds/changes dumps of ``days`` under ``root``/other/incr, Wikimedia's layout."""
    out = {}
    for k, day in enumerate(days):
        folder = root / "other" / "incr" / WIKI / day
        folder.mkdir(parents=True)
        name = f"{WIKI}-{day}-pages-meta-hist-incr.xml.bz2"
        data = bz2.compress(_history_xml(800 + k), 1)
        (folder / name).write_bytes(data)
        stubs = f"{WIKI}-{day}-stubs-meta-hist-incr.xml.gz"
        (folder / stubs).write_bytes(b"stub")
        (folder / f"{WIKI}-{day}-md5sums.txt").write_text(
            f"{hashlib.md5(data).hexdigest()}  {name}\n{hashlib.md5(b'stub').hexdigest()}  {stubs}\n")
        (folder / "status.txt").write_text(f"{status}\n")
        (folder / "maxrevid.txt").write_text("123\n")
        out[name] = data
    return out


def test_increments_of_a_date_range_download_resumably_and_verified(
    server: ThreadingHTTPServer, mirror_dir: Path, tmp_path: Path
) -> None:
    data = _increments(mirror_dir, ["20240302", "20240303", "20240304"])
    with Mirror(_url(server), backoff=0, retries=3) as m:
        assert m.increment_dates(WIKI) == ["20240302", "20240303", "20240304"]
        found = m.increments(WIKI, "20240302", "20240303")
        assert [(f.date, f.name, f.incr) for f in found] == [
            ("20240302", f"{WIKI}-20240302-pages-meta-hist-incr.xml.bz2", True),
            ("20240303", f"{WIKI}-20240303-pages-meta-hist-incr.xml.bz2", True)]
        assert found[0].md5 == hashlib.md5(data[found[0].name]).hexdigest()
        cut = len(data[found[1].name]) // 2
        server.cut_once[found[1].name] = cut  # type: ignore[attr-defined]
        paths = [m.download(f, tmp_path / "dl" / f.date) for f in found]
        assert [p.read_bytes() for p in paths] == [data[f.name] for f in found]
        ranges = [r for p, r in server.requests if p.endswith(found[1].name)]  # type: ignore[attr-defined]
        assert ranges == [None, f"bytes={cut}-"]
        assert all(f"/other/incr/{WIKI}/" in p for p, _ in server.requests  # type: ignore[attr-defined]
                   if "incr.xml" in p)
        (mirror_dir / "other" / "incr" / WIKI / "20240304" /
         f"{WIKI}-20240304-pages-meta-hist-incr.xml.bz2").write_bytes(b"tampered")
        bad = m.increment(WIKI, "20240304")
        with pytest.raises(ChecksumMismatchError, match="md5"):
            m.download(bad, tmp_path / "dl" / "bad")
        assert not (tmp_path / "dl" / "bad" / bad.name).exists()


def test_a_missing_or_unfinished_day_is_not_ready(server: ThreadingHTTPServer,
                                                  mirror_dir: Path) -> None:
    _increments(mirror_dir, ["20240302", "20240304"])
    _increments(mirror_dir, ["20240305"], status="in-progress")
    with Mirror(_url(server), backoff=0) as m:
        with pytest.raises(DumpNotReadyError, match="1 day.*first: 20240303"):
            m.increments(WIKI, "20240302", "20240304")
        with pytest.raises(DumpNotReadyError, match="'in-progress', not 'done'"):
            m.increments(WIKI, "20240304", "20240305")


def test_increments_on_a_file_mirror_are_read_in_place(mirror_dir: Path) -> None:
    data = _increments(mirror_dir, ["20240302"])
    with Mirror(mirror_dir.as_uri()) as m:
        (f,) = m.increments(WIKI, "20240302", "20240302")
        path = m.local_path(f, verify=True)
    assert path == mirror_dir / "other" / "incr" / WIKI / "20240302" / f.name
    assert path.read_bytes() == data[f.name]
