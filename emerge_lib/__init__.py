"""emerge: the EMERGE benchmark pipeline, from Wikimedia history dumps to a release.

Importing this package makes sure ``SPARK_HOME`` names an existing folder: pyspark-client
4.2 exits the interpreter when it is unset (see docs/configuration.md). The project's
virtual environment sets it already (a .pth file written by the Makefile); this is the
fallback for other installs.
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"


def _ensure_spark_home() -> None:
    home = _os.environ.get("SPARK_HOME")
    if home and _os.path.isdir(home):
        return
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec and spec.submodule_search_locations:
        _os.environ["SPARK_HOME"] = list(spec.submodule_search_locations)[0]


_ensure_spark_home()
