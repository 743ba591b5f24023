"""Logging for the ``emerge`` command: one format, and no credential in any line.

Two guards, because one is not enough: the wire loggers (botocore, urllib3, s3transfer,
httpx, …) are capped at INFO even under ``--verbose`` (their DEBUG lines are request
headers: signatures, ``X-Amz-Security-Token``), and every formatted line, tracebacks
included, passes :func:`redact`, which masks the values of credential-named environment
variables (``AWS_SECRET_ACCESS_KEY``, ``*_TOKEN``, ``*_API_KEY``, …), secrets the
configuration holds (registered by ``load_config``) and credential-shaped text (AWS key
ids, ``Signature=``, ``Credential=``, ``Bearer``). Standard library only.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable

MASK = "***"
SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|CREDENTIAL|PRIVATE_KEY",
                         re.IGNORECASE)
# loggers whose DEBUG output is the wire itself
WIRE_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3", "aiobotocore", "httpx",
                "httpcore", "openai", "requests", "fsspec", "s3fs", "grpc")
_SHAPES = [
    (re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}\b"), MASK),
    (re.compile(r"(?i)(x-amz-security-token['\"]?\s*[:=]\s*['\"]?b?['\"]?)[^\s'\",&}]+"), r"\1" + MASK),
    (re.compile(r"(?i)(x-amz-(?:signature|credential)=)[^\s&'\"]+"), r"\1" + MASK),
    (re.compile(r"(?i)((?:Credential|Signature)=)[^\s,'\"]+"), r"\1" + MASK),
    (re.compile(r"(?i)(\bBearer\s+)[A-Za-z0-9._~+/=-]+"), r"\1" + MASK),
    (re.compile(r"(?i)((?:aws_)?secret_access_key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"), r"\1" + MASK),
    (re.compile(r"(?i)((?:aws_)?session_token['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"), r"\1" + MASK),
]
_secrets: set[str] = set()
#: other maskers told each secret too (Airflow's, in a task: its task log lines are
#: formatted by Airflow's handlers, which never see :func:`redact`)
_maskers: list[Callable[[str], object]] = []


def register_secrets(values: Iterable[str | None]) -> None:
    """Mask these values in every later line (short values would mask ordinary words)."""
    new = {v for v in values if v and len(v) >= 6} - _secrets
    _secrets.update(new)
    for masker in _maskers:
        for value in sorted(new):
            masker(value)


def also_mask_with(masker: Callable[[str], object]) -> None:
    """Tell ``masker`` (a function that masks one value in its own log output) every
    secret known now (registered, and the values of credential-named environment
    variables) and every secret registered later; once per masker."""
    if masker in _maskers:
        return
    _maskers.append(masker)
    for value in sorted(_secrets | _environment_secrets()):
        masker(value)


def _environment_secrets() -> set[str]:
    return {v for k, v in os.environ.items() if SECRET_NAME.search(k) and v and len(v) >= 6}


def redact(text: str) -> str:
    """``text`` with every known secret and credential-shaped value masked."""
    for secret in sorted(_secrets | _environment_secrets(), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


class RedactingFormatter(logging.Formatter):
    """A formatter whose output (message, arguments and traceback) passes :func:`redact`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(verbose: bool = False) -> None:
    """The root logger for a command: INFO (DEBUG with ``verbose``) through a redacting
    formatter, wire loggers never below INFO."""
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for name in WIRE_LOGGERS:  # boto's INFO ("Found credentials in …") only with -v
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
