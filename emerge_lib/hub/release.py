"""A release to read: a local folder, or a published one on S3 fetched into a cache.

``open_release(source)`` gives a folder with a manifest, whatever the source:

- a folder: read as it is (its ``manifest.json`` names the version);
- ``s3://BUCKET/PREFIX``: the version ``PREFIX/latest`` points at; ``s3://BUCKET/PREFIX/v/VERSION``:
  that version. Fetched with ``emerge download``'s verified download
  (``emerge_lib.publish.download``: every file's sha256 checked before it gets its name)
  into ``CACHE/BUCKET/PREFIX/VERSION/``; a version already there (its manifest the same
  bytes, every file wanted present at its size) is not fetched again, and a pinned
  version (``…/v/VERSION``) already cached needs no request at all.

The cache is ``cache_dir``, else ``$EMERGE_CACHE``, else ``$XDG_CACHE_HOME/emerge/releases``
(``~/.cache/emerge/releases``). Credentials and the endpoint are the ``emerge download``
ones (the environment, ``EMERGE__S3__ENDPOINT_URL``; ``unsigned`` for a public bucket).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.core.errors import EmergeError
from emerge_lib.formats.manifest import MANIFEST, ManifestError, read_manifest

if TYPE_CHECKING:
    from emerge_lib.publish.s3 import S3Location

_PINNED = re.compile(r"^(?P<base>s3://.+?)/v/(?P<version>[0-9a-f]{16})/?$")


class ReleaseNotFound(EmergeError):
    """No release where one was asked for (no folder, no manifest, no such snapshot)."""


@dataclass
class OpenRelease:
    """A release folder on this machine, with its manifest."""

    root: Path
    manifest: dict[str, Any]
    source: str

    @property
    def version(self) -> str:
        return str(self.manifest.get("version"))

    @property
    def paths(self) -> list[str]:
        return [f["path"] for f in self.manifest["files"]]

    def files(self, pattern: str) -> list[Path]:
        """The manifest's files matching ``pattern`` (a glob relative to the root), sorted,
        that are on this machine."""
        from fnmatch import fnmatchcase

        return [self.root / p for p in sorted(self.paths)
                if fnmatchcase(p, pattern) and (self.root / p).is_file()]


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("EMERGE_CACHE"):
        return Path(os.environ["EMERGE_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "emerge" / "releases"


def _client(unsigned: bool) -> Any:
    from emerge_lib.core.config import load_config
    from emerge_lib.publish import client_for

    return client_for(load_config(), unsigned=unsigned)


def _complete(folder: Path, manifest_bytes: bytes, wanted: Iterable[dict[str, Any]]) -> bool:
    """Is this version already in the cache (verified when it was fetched)? Sizes are
    checked again, not hashes: a cut file is fetched again, cheaply."""
    try:
        if (folder / MANIFEST).read_bytes() != manifest_bytes:
            return False
    except OSError:
        return False
    return all((folder / f["path"]).is_file() and
               (folder / f["path"]).stat().st_size == f["bytes"] for f in wanted)


def open_release(source: str | Path, *, snapshots: Sequence[str] = (),
                 cache_dir: str | Path | None = None, client: Any = None,
                 unsigned: bool = False) -> OpenRelease:
    """The release at ``source`` on this machine (see the module docstring); from S3,
    only ``snapshots``' files when given (``emerge download --snapshot``)."""
    text = str(source)
    if not text.startswith("s3://"):
        root = Path(text).expanduser()
        if not root.is_dir():
            raise ReleaseNotFound(f"{root}: no such release folder")
        try:
            return OpenRelease(root, read_manifest(root), text)
        except ManifestError as exc:
            raise ReleaseNotFound(str(exc)) from None
    from emerge_lib.publish.download import select_files
    from emerge_lib.publish.s3 import S3Location

    pinned = _PINNED.match(text)
    location = S3Location.parse(pinned["base"] if pinned else text)
    version = pinned["version"] if pinned else None
    parent = cache_root(cache_dir) / location.bucket / (location.prefix or "_")
    if version is not None:  # an immutable version already here needs no request
        folder = parent / version
        try:
            manifest = read_manifest(folder)
            wanted = select_files(manifest, list(snapshots))
            if _complete(folder, (folder / MANIFEST).read_bytes(), wanted):
                return OpenRelease(folder, manifest, text)
        except (ManifestError, EmergeError):
            pass
    return _fetch(location, version, parent, snapshots, client, unsigned, text)


def _fetch(location: S3Location, version: str | None, parent: Path, snapshots: Sequence[str],
           client: Any, unsigned: bool, text: str) -> OpenRelease:
    """The version of ``location`` (the latest when None) in the cache under ``parent``,
    fetched when missing. Any S3 failure is the one line ``emerge download`` gives for it
    (no credentials, an endpoint that does not answer, a wrong key, no such bucket), never
    botocore's exception."""
    from emerge_lib.publish.download import download_release, resolve_version, select_files
    from emerge_lib.publish.s3 import s3_error

    try:
        client = client if client is not None else _client(unsigned)
        version, manifest_bytes, manifest = resolve_version(client, location, version)
        folder = parent / version
        if not _complete(folder, manifest_bytes, select_files(manifest, list(snapshots))):
            download_release(location, folder, client, version=version, snapshots=snapshots)
    except EmergeError:
        raise
    except OSError as exc:
        if exc.filename:  # this machine's cache folder, not the network
            raise
        raise s3_error(exc, text) from exc
    except Exception as exc:
        raise s3_error(exc, text) from exc
    return OpenRelease(folder, read_manifest(folder), text)
