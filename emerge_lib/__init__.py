"""emerge: the EMERGE benchmark pipeline, from Wikimedia history dumps to a release.

``emerge_lib.load_release(path_or_s3_url, …)`` is the one-line loader of a release
(``emerge_lib.hub``; docs/using-a-release.md), imported when first asked for, so that
``import emerge_lib`` (and ``emerge --help``) stays light.

Importing this package makes sure ``SPARK_HOME`` names an existing folder: pyspark-client
4.2 exits the interpreter when it is unset (see docs/configuration.md). The project's
virtual environment sets it already (a .pth file written by the Makefile); this is the
fallback for other installs.
"""

from __future__ import annotations

import os as _os
from typing import Any

from emerge_lib.core.version import __version__

__all__ = ["__version__", "load_release"]


def __getattr__(name: str) -> Any:
    if name == "load_release":
        from emerge_lib.hub import load_release

        return load_release
    raise AttributeError(f"module 'emerge_lib' has no attribute {name!r}")


def _ensure_spark_home() -> None:
    home = _os.environ.get("SPARK_HOME")
    if home and _os.path.isdir(home):
        return
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec and spec.submodule_search_locations:
        _os.environ["SPARK_HOME"] = list(spec.submodule_search_locations)[0]


_ensure_spark_home()
