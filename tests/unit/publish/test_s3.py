"""The S3 client emerge makes: a profile that does not exist is one line saying what to
set, not botocore's ProfileNotFound; an endpoint that accepts and never answers (an
in-process socket) is named within seconds, while it waits, and in one line when the
request gives up."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from emerge_lib.core.config import S3Settings
from emerge_lib.publish import S3AccessError, make_client
from emerge_lib.publish import s3 as s3mod


@pytest.fixture()
def hung_endpoint():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for conn in held:
        conn.close()


def test_a_hung_endpoint_is_named_within_seconds_and_when_it_gives_up(
        hung_endpoint: str, monkeypatch, caplog) -> None:
    monkeypatch.setattr(s3mod, "STALL_S", 1.0)
    for name, value in (("AWS_ACCESS_KEY_ID", "AKIAHUNGENDPOINT0001"),
                        ("AWS_SECRET_ACCESS_KEY", "hung-endpoint-secret-0123456789"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    client = s3mod.make_client(S3Settings(endpoint_url=hung_endpoint), retries=0,
                               read_timeout_s=4)
    caplog.set_level(logging.WARNING, logger=s3mod.__name__)
    started, wall = time.monotonic(), time.time()
    with pytest.raises(Exception) as info:
        client.list_objects_v2(Bucket="bucket1")
    took = time.monotonic() - started
    told = [r for r in caplog.records if "no answer to ListObjectsV2" in r.getMessage()]
    assert told and hung_endpoint in told[0].getMessage() and took < 10
    assert told[0].created - wall < 3.5  # while it was still waiting
    line = str(s3mod.s3_error(info.value, "s3://bucket1/x"))
    assert hung_endpoint in line and "did not answer" in line and "None" not in line


@pytest.fixture()
def web_server_of_404s():
    """A web server, not an S3 API: 404 Not Found, an HTML page, to every request."""
    import http.server

    class NotFound(http.server.BaseHTTPRequestHandler):
        def _404(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"<html><body>404 Not Found</body></html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_HEAD = _404  # noqa: N815 (http.server's names)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_web_server_of_404s_is_told_apart_from_a_missing_release(
        web_server_of_404s: str, tmp_path, monkeypatch, capsys) -> None:
    """publish said "not found" and download "no latest pointer" of an endpoint that is
    no S3 server at all."""
    from hubkit import SNAPS, build_release, line

    from emerge_lib.cli import main

    for name, value in (("AWS_ACCESS_KEY_ID", "AKIAWEBSERVER0000001"),
                        ("AWS_SECRET_ACCESS_KEY", "web-server-secret-0123456789"),
                        ("AWS_DEFAULT_REGION", "us-east-1"),
                        ("EMERGE__S3__ENDPOINT_URL", web_server_of_404s)):
        monkeypatch.setenv(name, value)
    assert main(["download", "--from", "s3://bucket1/x", "--to", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "is s3.endpoint_url (--endpoint-url) an S3 server?" in err, err
    release = build_release(tmp_path / "rel", {(SNAPS[0], 1): [line(SNAPS[0], 1, "a", [
        ("E", "Q1", "Q2")])]}, {}, meta={"validation": {"success": True}})
    assert main(["publish", "--release", str(release), "--to", "s3://bucket1/x"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "an S3 server?" in err and err.startswith("emerge: "), err


def test_an_unknown_profile_is_one_line(monkeypatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    with pytest.raises(S3AccessError, match=r"profile \(nope\) could not be found: set "
                                            "AWS_PROFILE") as raised:
        make_client(S3Settings(), profile="nope")
    assert "\n" not in str(raised.value)
