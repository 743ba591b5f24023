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
    "emerge_lib.commands.config",
    "emerge_lib.commands.evaluate",
    "emerge_lib.commands.predict",
    "emerge_lib.commands.publish",
    "emerge_lib.commands.download",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="emerge",
        description=(
            "Build, extend and publish the EMERGE benchmark for text-driven knowledge-graph "
            "updating from Wikimedia revision-history dumps."
        ),
    )
    parser.add_argument("--version", action="version", version=f"emerge {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from emerge_lib.core.config import ConfigError
    from emerge_lib.core.errors import EmergeError

    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"emerge: {exc}", file=sys.stderr)
        return 2
    except EmergeError as exc:
        # one line a user can act on; the traceback only with --verbose
        logging.getLogger(__name__).debug("failed", exc_info=True)
        again = " (retrying may succeed)" if exc.retryable else ""
        print(f"emerge: {_one_line(exc)}{again}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("emerge: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 2000 else text[:2000] + " …"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
