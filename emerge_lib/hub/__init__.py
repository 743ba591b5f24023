"""Reading a release as a researcher does: ``load_release`` (one line to a
``datasets.Dataset``, pandas or Arrow), ``emerge query`` (DuckDB over the typed Parquet)
and ``emerge diff`` (what a release adds, removes and changes by ``hash_id``), on a
folder or a published S3 release fetched verified into a cache (docs/using-a-release.md).

Above ``publish`` (an S3 release comes through its verified download) and the release's
file modules; nothing here needs the engine, the catalog or Airflow.
"""

from __future__ import annotations

from emerge_lib.hub.load import load_release, read_table, version_of
from emerge_lib.hub.release import OpenRelease, ReleaseNotFound, open_release

__all__ = ["OpenRelease", "ReleaseNotFound", "load_release", "open_release", "read_table",
           "version_of"]
