"""``emerge config``: show the effective configuration: its layers (the defaults, each
file or preset of ``-c`` in order, the environment), then the settings."""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import config_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "config",
        help="print the effective configuration as YAML",
        description=("Validate the configuration files (or presets) of -c, laid over the "
                     "defaults in order, apply EMERGE__* overrides, print the layers and the "
                     "result (secrets are shown as **********)."),
    )
    examples(p, "emerge config", "emerge config -c paper",
             "emerge config -c world/config.yaml -c no-selection-rules")
    config_flag(p, "default: the built-in defaults")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import yaml

    from emerge_lib.core.config import config_layers, env_overrides, load_config

    cfg = load_config(args.config)
    layers = ["defaults", *(layer.label for layer in config_layers(args.config))]
    if env_overrides():
        layers.append("EMERGE__* environment")
    print(f"# layers, each over the one before: {' < '.join(layers)}")
    print(yaml.safe_dump(cfg.redacted(), sort_keys=False), end="")
    return 0
