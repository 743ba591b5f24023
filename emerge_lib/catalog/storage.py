"""Small files beside the tables, on the warehouse's own filesystem (a local folder or any
pyarrow filesystem URI, ``s3://…``): ``filesystem_of`` a path, and a stage's state file
(``_state/<name>.json``: what a global stage was last built from, so a rerun with the same
inputs writes nothing)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from emerge_lib.catalog.catalog import Catalog


def filesystem_of(uri: str) -> tuple[pafs.FileSystem, str]:
    """(filesystem, path inside it) of a local path or a filesystem URI."""
    if "://" in uri:
        filesystem, path = pafs.FileSystem.from_uri(uri)
        return filesystem, str(path)
    return pafs.LocalFileSystem(), os.path.abspath(uri)


def _state_path(catalog: Catalog, name: str) -> str:
    return f"{catalog.warehouse}/_state/{name}.json"


def read_state(catalog: Catalog, name: str) -> dict[str, Any] | None:
    """The state a stage recorded, or None (never written, or unreadable)."""
    filesystem, path = filesystem_of(_state_path(catalog, name))
    try:
        with filesystem.open_input_stream(path) as fh:
            state: dict[str, Any] = json.loads(fh.read().decode("utf-8"))
            return state
    except (FileNotFoundError, OSError, ValueError):
        return None


def write_state(catalog: Catalog, name: str, state: dict[str, Any]) -> None:
    filesystem, path = filesystem_of(_state_path(catalog, name))
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as fh:
        fh.write(json.dumps(state, sort_keys=True).encode("utf-8"))
