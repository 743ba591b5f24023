"""The ``emerge`` command.

Each sub-command lives in its own module that exposes ``register(subparsers)``; the
module is imported only when listed here, and heavy imports happen inside the handler,
so ``emerge --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from emerge_lib import __version__

# Modules that add sub-commands, in the order --help lists them.
COMMAND_MODULES = [
    "emerge_lib.commands.demo",
    "emerge_lib.commands.sample",
    "emerge_lib.commands.build",
    "emerge_lib.commands.curate",
    "emerge_lib.commands.ingest",
    "emerge_lib.commands.inspect",
    "emerge_lib.commands.tables",
    "emerge_lib.commands.stats",
    "emerge_lib.commands.validate",
    "emerge_lib.commands.config",
    "emerge_lib.commands.evaluate",
    "emerge_lib.commands.leaderboard",
    "emerge_lib.commands.annotate",
    "emerge_lib.commands.predict",
    "emerge_lib.commands.publish",
    "emerge_lib.commands.download",
    "emerge_lib.commands.query",
    "emerge_lib.commands.diff",
]


class Parser(argparse.ArgumentParser):
    """argparse without prefix matching (``--releas`` is refused, not taken for
    ``--release``), and a mistyped command, choice or flag gets "did you mean". Every
    sub-command's parser is one of these (argparse makes them of the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: Any = None) -> tuple[Any, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            # a command's own parser says what it does not know, with its own flags to
            # suggest (the top parser would only know its own)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message: str) -> NoReturn:
        super().error(message + did_you_mean(message, self._given,
                                             list(self._option_string_actions)))


def did_you_mean(message: str, given: Sequence[str], flags: Sequence[str]) -> str:
    """" (did you mean …?)" for argparse's ``message``: the closest choice to an invalid
    one, the closest flag to each flag ``given`` that the parser does not have; "" when
    nothing is close."""
    import difflib
    import re

    guesses: list[str] = []
    if choice := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message):
        options = [c.strip().strip("'\"") for c in choice[2].split(",")]
        guesses += [f"did you mean '{m}'?"
                    for m in difflib.get_close_matches(choice[1], options, n=1)]
    for word in dict.fromkeys(w.split("=", 1)[0] for w in given):
        if word.startswith("--") and word not in flags:
            guesses += [f"{word}: did you mean {m}?"
                        for m in difflib.get_close_matches(word, flags, n=1, cutoff=0.7)]
    return f" ({'; '.join(guesses)})" if guesses else ""


def build_parser() -> argparse.ArgumentParser:
    from emerge_lib.commands._common import examples

    parser = Parser(
        prog="emerge",
        description=(
            "Build, extend and publish the EMERGE benchmark for text-driven knowledge-graph "
            "updating from Wikimedia revision-history dumps."
        ),
    )
    examples(parser, "emerge demo", "emerge query --release demo/release \"SELECT operation, "
             "count(*) FROM operations GROUP BY ALL\"", "emerge build --help")
    parser.add_argument("--version", action="version", version=f"emerge {__version__}",
                        help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging, and the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so that the same cleanup
    runs (servers stopped, workers ended, staging folders removed): ``kill`` and a
    scheduler's stop left the local LLM server and the S3 server running."""


def _terminate(_signum: int, _frame: object) -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one does not cut the cleanup
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from emerge_lib.core.logs import setup_logging

    setup_logging(args.verbose)
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _run(parser, args)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _run(parser, args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The command, its errors each one line (the traceback only with --verbose)."""
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from emerge_lib.core.config import ConfigError
    from emerge_lib.core.errors import EmergeError

    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        from emerge_lib.core.logs import redact

        print(f"emerge: {redact(str(exc))}", file=sys.stderr)  # a line per bad setting
        return 2
    except EmergeError as exc:
        # one line a user can act on; the traceback only with --verbose
        logging.getLogger(__name__).debug("failed", exc_info=True)
        again = " (retrying may succeed)" if exc.retryable else ""
        print(f"emerge: {_one_line(exc)}{again}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated):
            print("emerge: terminated (SIGTERM); stopped what it had started", file=sys.stderr)
            return 143
        print("emerge: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback: one line, the traceback with --verbose
        logging.getLogger(__name__).debug("failed", exc_info=True)
        print(f"emerge: {_one_line_for(exc, args)}", file=sys.stderr)
        return 1


def _one_line_for(exc: BaseException, args: argparse.Namespace) -> str:
    """The line for an error emerge did not raise on purpose: a full disk names the
    folder and the space left, a file where a folder is needed says so; anything else
    is its type and message."""
    import errno
    import re

    text = " ".join(str(exc).split())
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or \
            "No space left on device" in text:
        where = getattr(exc, "filename", None) or next(
            iter(re.findall(r"(?:file:)?(/[^\s'\"(),]+)", text)), None) or next(
            (str(v) for k in ("out", "warehouse", "to", "release")
             if isinstance(v := getattr(args, k, None), str) and "://" not in v), None)
        return _disk_full(where)
    if isinstance(exc, FileExistsError | NotADirectoryError) and exc.filename:
        return f"{exc.filename}: a file is in the way of a folder emerge needs there"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, ValueError):
        return _one_line(exc)
    return (f"{type(exc).__name__}: {_one_line(exc)} (an unexpected error: -v shows the "
            "traceback; please report it)")


def _disk_full(where: str | None) -> str:
    import shutil
    from pathlib import Path

    if not where:
        return "no space left on device; free some space and run again (finished work is kept)"
    folder = Path(where.removeprefix("file:"))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = f"{shutil.disk_usage(folder).free / 1e6:,.0f} MB left"
    except OSError:
        free = "space left unknown"
    return (f"no space left on device under {folder} ({free}); free some space and run "
            "again (finished work is kept)")


def _one_line(exc: BaseException) -> str:
    from emerge_lib.core.logs import redact

    text = redact(" ".join(str(exc).split())) or type(exc).__name__
    return text if len(text) <= 2000 else text[:2000] + " …"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
