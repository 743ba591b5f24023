"""A release on S3 that cannot be read says why in one line, the line ``emerge download``
gives for the same failure, in ``load_release("s3://…")`` and in every command that reads
``s3://`` (``emerge query``, ``emerge diff``, ``emerge tables`` of a warehouse there): no credentials, an endpoint nothing answers,
a wrong secret key, a bucket that does not exist. Against the real S3 server (SeaweedFS)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from hubkit import small_release
from s3kit import BUCKET, cli_env

from emerge_lib.cli import main
from emerge_lib.hub import load_release
from emerge_lib.publish import PublishError, S3AccessError, S3NotFoundError, TransferError


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _no_credentials(mp: pytest.MonkeyPatch, server: Any) -> str:
    cli_env(mp, server, None)
    return f"s3://{BUCKET}/hub"


def _closed_endpoint(mp: pytest.MonkeyPatch, server: Any) -> str:
    cli_env(mp, server, "reader")
    mp.setenv("EMERGE__S3__ENDPOINT_URL", f"http://127.0.0.1:{_closed_port()}")
    mp.setenv("EMERGE__PUBLISH__RETRIES", "0")  # botocore's backoff would take seconds
    return f"s3://{BUCKET}/hub"


def _wrong_secret(mp: pytest.MonkeyPatch, server: Any) -> str:
    cli_env(mp, server, "reader")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    return f"s3://{BUCKET}/hub"


def _missing_bucket(mp: pytest.MonkeyPatch, server: Any) -> str:
    cli_env(mp, server, "reader")
    return "s3://no-such-bucket/hub"


CASES = {
    "no credentials": (_no_credentials, S3AccessError, "no AWS credentials found"),
    "closed endpoint": (_closed_endpoint, TransferError, "cannot reach the S3 endpoint"),
    "wrong secret": (_wrong_secret, S3AccessError, "the secret key does not match"),
    "missing bucket": (_missing_bucket, S3NotFoundError,
                       "the bucket 'no-such-bucket' does not exist"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_unreadable_s3_release_is_one_line_everywhere(case: str, s3_server: Any,
                                                         tmp_path: Path, capsys) -> None:
    setup, error, says = CASES[case]
    local = small_release(tmp_path / "local")
    cache = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        url = setup(mp, s3_server)
        with pytest.raises(error, match=says) as raised:
            load_release(url, cache_dir=cache)
        assert isinstance(raised.value, PublishError) and "\n" not in str(raised.value)
        assert str(raised.value).startswith(url)
        for argv in (["query", "--release", url, "SELECT 1"],
                     ["diff", "--old", str(local), "--new", url],
                     ["download", "--from", url, "--to", str(tmp_path / "down")],
                     ["tables", "--warehouse", url]):
            assert main([*argv, "--cache-dir", str(cache)] if argv[0] in ("query", "diff")
                        else argv) == 1, argv
            err = capsys.readouterr().err
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"emerge: {url}: "), (argv, err)
            assert says in err and "unexpected" not in err and "Traceback" not in err, err
    assert not any(cache.rglob("*.json"))  # nothing half-fetched was left as a release


def test_tables_of_an_empty_s3_warehouse_says_so(s3_server: Any, capsys) -> None:
    """A reachable warehouse folder with nothing in it: one line, not a list of empty
    tables with rc 0 (what delta-rs's "not a table" made of any S3 failure)."""
    with pytest.MonkeyPatch.context() as mp:
        cli_env(mp, s3_server, "reader")
        url = f"s3://{BUCKET}/no-warehouse-here"
        assert main(["tables", "--warehouse", url]) == 1
        err = capsys.readouterr().err
        assert err.strip() == (f"emerge: tables: the warehouse {url} is empty; give "
                               "--warehouse (or -c) of a built one, or build it first with "
                               "`emerge build`"), err
