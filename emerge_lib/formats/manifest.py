"""``manifest.json``: what a release holds, so a reader can verify it byte for byte.

Every file of the release folder (but the manifest itself) with its bytes, sha256 and
row count (JSONL lines, Parquet rows), and what made it: the schema version, the dump files
ingested with their sha1, the snapshot, window and semantics settings, a hash of the
effective configuration and the code version (not the Delta versions read: a rerun makes
new ones from the same rows).

The manifest holds no clock time of its writing (only when the tables' checks ran, a fact
of the tables), so rebuilding the same tables gives a byte-identical manifest, and ``version`` (a hash of the file list) names the content: publishing the same
release twice is the same version, and a reader can tell two releases apart by it alone.
The files that state the version (the card, README.md and card.html, croissant.json, and
the validation page, validation/index.html: ``SELF_DESCRIBING``) cannot be part of its hash, which would have to contain itself: they
are listed and verified like every file, but the version names the rest (the data, the
validation results, the plots, release.json). A card-only change therefore keeps the
version, as a change of ``code_version`` does: publishing it again keeps the first
publication's files of that version (docs/publishing.md).
Pure: no engine, only the files and the values handed in.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.core.errors import EmergeError  # standard library only, as this module
from emerge_lib.formats.layout import (
    CARD,
    CARD_HTML,
    CORPUS,
    CROISSANT,
    EVALUATION_SET,
    VALIDATION_PAGE,
)

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
#: the files that state the release's version, hence outside its hash (see above); the
#: validation page also states when the checks ran
SELF_DESCRIBING = frozenset({CARD, CARD_HTML, CROISSANT, VALIDATION_PAGE})
CHUNK = 1 << 20


class ManifestError(EmergeError):
    """A release does not match its manifest (or has none): not retryable, the files are
    what they are."""


_SHA256 = re.compile(r"[0-9a-f]{64}")
_DRIVE = re.compile(r"[A-Za-z]:")
#: a release's deepest path has 9 components and 154 characters (the Data Docs'): the caps
#: leave room, and refuse a forged path of thousands of components (it passed the rule,
#: then failed a download after 88 files with RecursionError) or one no filesystem takes
MAX_PATH_DEPTH = 32
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255  # a file name (NAME_MAX)


def path_problem(path: object) -> str | None:
    """Why ``path`` may not name a file of a release, or None: the path rule.

    A release's paths come from its manifest, which whoever can write to a bucket can
    forge with self-consistent hashes; so a path is only ever a relative POSIX path that
    stays under the release root: no absolute or drive path, no empty, ``.`` or ``..``
    component, no backslash or NUL, not the manifest itself, at most ``MAX_PATH_DEPTH``
    components and ``MAX_PATH_CHARS`` characters, each name at most ``MAX_NAME_BYTES``."""
    if not isinstance(path, str) or not path:
        return "not a non-empty string"
    if len(path) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters ({len(path)})"
    if path.count("/") >= MAX_PATH_DEPTH:
        return f"is deeper than {MAX_PATH_DEPTH} folders ({path.count('/') + 1} components)"
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES
           for part in path.split("/")):
        return f"has a name longer than {MAX_NAME_BYTES} bytes"
    if "\\" in path or "\0" in path:
        return "holds a backslash or NUL"
    if path.startswith("/") or _DRIVE.match(path):
        return "is absolute"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' component"
    if path == MANIFEST:
        return "is the manifest itself"
    return None


def check_files(files: object, where: str) -> list[dict[str, Any]]:
    """The manifest's file list if every entry keeps the path rule (:func:`path_problem`)
    and is well formed (``bytes`` a count, ``sha256`` 64 hex digits), no two paths name
    the same file (after case folding, as a case-insensitive filesystem would) and no
    file is the folder of another; else :class:`ManifestError` with one line naming the
    first bad path. The whole manifest is refused, before anything is written."""
    if not isinstance(files, list):
        raise ManifestError(f"{where}: 'files' is not a list")
    seen: dict[str, str] = {}
    for entry in files:
        if not isinstance(entry, dict):
            raise ManifestError(f"{where}: a file entry is not an object: {entry!r:.80}")
        path = entry.get("path")
        problem = path_problem(path)
        if problem is None and (not isinstance(entry.get("bytes"), int)
                                or isinstance(entry.get("bytes"), bool) or entry["bytes"] < 0):
            problem = f"has no byte count ({entry.get('bytes')!r:.40})"
        if problem is None and not (isinstance(entry.get("sha256"), str)
                                    and _SHA256.fullmatch(entry["sha256"])):
            problem = f"has no sha256 ({entry.get('sha256')!r:.40})"
        key = str(path).casefold()  # a str once path_problem found nothing
        if problem is None and key in seen:
            problem = f"names the same file as {seen[key]!r}"
        if problem is not None:
            raise ManifestError(f"{where}: refusing the release: file path {path!r:.200} "
                                f"{problem}")
        seen[key] = str(path)
    for path in seen:
        parts = path.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in seen:
                raise ManifestError(f"{where}: refusing the release: file path "
                                    f"{seen[folder]!r} is also the folder of {path!r}")
    return files


def inside(root: str | Path, rel: str) -> Path:
    """``root/rel`` once no symbolic link on the way leads it out of ``root`` (a link
    left in the folder before, pointing elsewhere); else :class:`ManifestError`."""
    base = Path(root).resolve()
    target = (base / rel).parent.resolve() / Path(rel).name
    if not target.is_relative_to(base):
        raise ManifestError(f"{Path(root) / rel}: a symbolic link leads it out of {root}; "
                            "refusing to write or read it")
    return target


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _rows(path: Path) -> int | None:
    if path.suffix == ".jsonl":
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    return None


def file_entries(out_dir: str | Path, paths: Iterable[str] | None = None,
                 known: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``{path, bytes, sha256, rows}`` of the files ``paths`` (relative to ``out_dir``), or
    of every file under it but the manifest and hidden or unfinished files; sorted.
    ``known``: entries computed before for files not written since (not hashed again)."""
    root = Path(out_dir)
    if paths is None:
        paths = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()
                 and not p.name.startswith(".") and not p.name.endswith(".tmp")]
    entries = []
    for rel in sorted(set(paths) - {MANIFEST}):
        if known and rel in known:
            entries.append(dict(known[rel]))
            continue
        path = root / rel
        entries.append({"path": rel, "bytes": path.stat().st_size,
                        "sha256": sha256_file(path), "rows": _rows(path)})
    return entries


def is_line_file(rel: str) -> bool:
    """Whether ``rel`` is a file of lines the release suites check (a JSONL file of the
    corpus or of the evaluation set)."""
    return rel.endswith(".jsonl") and rel.split("/", 1)[0] in (CORPUS, EVALUATION_SET)


def validated_files(out_dir: str | Path) -> dict[str, str]:
    """The line files of a release being validated, with their sha256: what its validation
    results record, so that the publish gate holds the files to what was checked, not to
    a manifest that can be written again after an edit."""
    root = Path(out_dir)
    found = (p.relative_to(root).as_posix() for p in root.rglob("*.jsonl") if p.is_file())
    return {rel: sha256_file(root / rel) for rel in sorted(found) if is_line_file(rel)}


def content_version(files: Iterable[Mapping[str, Any]]) -> str:
    """The release's name from its content: 16 hex digits of sha256 over path and sha256
    of every file but those that state the version (``SELF_DESCRIBING``)."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f["path"]):
        if f["path"] in SELF_DESCRIBING:
            continue
        h.update(f"{f['path']}\t{f['sha256']}\n".encode())
    return h.hexdigest()[:16]


def config_hash(settings: Mapping[str, Any]) -> str:
    """sha256 of the configuration as canonical JSON (secrets already redacted)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def code_version() -> str:
    """The package version, with the git commit when the code runs from a checkout."""
    from emerge_lib.core.version import __version__

    head = Path(__file__).resolve().parent.parent / ".git"
    commit = None
    try:
        ref = (head / "HEAD").read_text().strip()
        if ref.startswith("ref: "):
            target = head / ref[5:]
            if target.exists():
                commit = target.read_text().strip()
            else:  # a packed ref
                for line in (head / "packed-refs").read_text().splitlines():
                    if line.endswith(" " + ref[5:]):
                        commit = line.split()[0]
        else:
            commit = ref
    except OSError:
        pass
    return f"{__version__}+g{commit[:12]}" if commit else __version__


def build_manifest(out_dir: str | Path, paths: Iterable[str], *, meta: Mapping[str, Any],
                   known: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The manifest of the release files ``paths`` in ``out_dir`` (the files a release
    wrote: a stray file in the folder is not part of it): ``meta`` (settings, dumps, …)
    plus the file list and the content version (``known``: see :func:`file_entries`)."""
    files = file_entries(out_dir, paths, known)
    return {"schema_version": SCHEMA_VERSION, "dataset": "EMERGE",
            "version": content_version(files), **meta, "files": files}


def write_manifest(out_dir: str | Path, paths: Iterable[str], *, meta: Mapping[str, Any],
                   known: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Write ``manifest.json`` last (atomically: a reader sees the old one or the new one).
    A later step that adds files (validation results, the card) writes it again with
    ``paths`` = the manifest's files plus its own."""
    manifest = build_manifest(out_dir, paths, meta=meta, known=known)
    path = Path(out_dir) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)
    return manifest


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: no manifest (not a release folder?)") from None
    except ValueError as exc:
        raise ManifestError(f"{path}: not JSON: {exc}") from None
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ManifestError(f"{path}: schema_version {manifest.get('schema_version')!r}, "
                            f"this emerge reads {SCHEMA_VERSION}")
    if not isinstance(manifest, dict):
        raise ManifestError(f"{path}: not a JSON object")
    check_files(manifest.get("files"), str(path))
    return manifest


@dataclass
class Verification:
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    unlisted: list[str] | None = None  # None: not looked for (given paths)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.mismatched)


def verify_release(out_dir: str | Path, paths: Iterable[str] | None = None) -> Verification:
    """Check the files of the manifest (or those of ``paths``) by size and sha256; files
    the manifest does not list are reported, not failed."""
    root = Path(out_dir)
    manifest = read_manifest(root)
    listed = {f["path"]: f for f in manifest["files"]}
    wanted = sorted(listed) if paths is None else sorted(paths)
    result = Verification()
    for rel in wanted:
        entry = listed.get(rel)
        if entry is None:
            result.missing.append(rel)
            continue
        path = inside(root, rel)
        if not path.is_file():
            result.missing.append(rel)
            continue
        result.checked += 1
        if path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            result.mismatched.append(rel)
    if paths is None:
        present = {e["path"] for e in file_entries(root)}
        result.unlisted = sorted(present - set(listed))
    return result
