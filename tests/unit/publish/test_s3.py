"""The S3 client emerge makes: a profile that does not exist is one line saying what to
set, not botocore's ProfileNotFound (every command makes its client this way)."""

from __future__ import annotations

import pytest

from emerge_lib.core.config import S3Settings
from emerge_lib.publish import S3AccessError, make_client


def test_an_unknown_profile_is_one_line(monkeypatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    with pytest.raises(S3AccessError, match=r"profile \(nope\) could not be found: set "
                                            "AWS_PROFILE") as raised:
        make_client(S3Settings(), profile="nope")
    assert "\n" not in str(raised.value)
