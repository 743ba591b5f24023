"""Named configuration files: ``-c NAME`` reads ``NAME.yaml`` of this folder when no file
of that name exists, layered like any other configuration file (``-c paper -c mine.yaml``:
``mine.yaml`` over the preset; ``emerge config`` shows the layers):

- ``paper``: the authors' current release (klimzaporojets/emerge at 108455c; the file and
  line of each value in docs/configuration.md "Presets");
- ``paper-v1``: the same with the paper's own ten snapshots (annual 2019-2023, quarterly
  2024, 2025-01-01);
- ``no-selection-rules``: the selection before the authors' rules, which earlier releases
  used (every aligned passage a line, one greedy dedup pass, one test draw).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

FOLDER = Path(__file__).resolve().parent


def names() -> list[str]:
    """The presets' names."""
    return sorted(p.stem for p in FOLDER.glob("*.yaml"))


def preset_path(name: str) -> Path | None:
    """The file of preset ``name``, or None."""
    path = FOLDER / f"{name}.yaml"
    return path if name in names() else None


def preset_settings(name: str) -> dict[str, Any]:
    """Preset ``name``'s settings, as a mapping to lay over others (a KeyError names the
    presets there are)."""
    path = preset_path(name)
    if path is None:
        raise KeyError(f"no preset {name!r}; presets: {', '.join(names())}")
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
