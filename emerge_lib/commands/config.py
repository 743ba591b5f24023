"""``emerge config``: show the effective configuration (file + environment overrides)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "config",
        help="print the effective configuration as YAML",
        description=("Validate a configuration file, apply EMERGE__* overrides, print the result "
                     "(secrets are shown as **********)."),
    )
    p.add_argument("--config", "-c", help="YAML configuration file (default: built-in defaults)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import yaml

    from emerge_lib.core.config import load_config

    cfg = load_config(args.config)
    print(yaml.safe_dump(cfg.redacted(), sort_keys=False), end="")
    return 0
