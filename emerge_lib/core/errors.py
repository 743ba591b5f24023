"""One family of errors that users (and Airflow) can act on.

Every error emerge raises on purpose derives from :class:`EmergeError`: its message is one
line a user can act on (what is wrong, where, what to do), and ``retryable`` says whether
running the same thing again can succeed (a lost commit race, an unreachable engine or
mirror) or cannot (bad data, bad configuration, a missing file). The CLI prints the
message without a traceback; an Airflow task retries only what is retryable.

Standard library only, and imports nothing: the pure modules (the release's formats: format, manifest)
derive their errors from here too.
"""

from __future__ import annotations


class EmergeError(Exception):
    """Base of emerge's errors; ``retryable`` is a class default that an instance may override."""

    retryable: bool = False

    def __init__(self, *args: object, retryable: bool | None = None) -> None:
        super().__init__(*args)
        if retryable is not None:
            self.retryable = retryable


class InputError(EmergeError):
    """Input paths that cannot be used: missing, a directory, empty, or not a dump file."""
