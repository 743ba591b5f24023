"""The files of an earlier release in the folder a new one replaces: those a release writes
and this one does not (stale: they go with the swap), and those no release writes (the
user's own, the human annotation: carried into the new folder). Which is which is the
layout's grammar (``emerge_lib.formats.layout.written_by_release``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from emerge_lib.catalog import TABLES
from emerge_lib.formats.layout import AGREEMENT, HUMAN_ANNOTATION, written_by_release
from emerge_lib.formats.manifest import MANIFEST


def stale(old: Path, keep: set[str]) -> list[str]:
    """The release files of the old folder this release does not write (an earlier
    release's windows, snapshots, tables or validation pages): they go with the swap."""
    if not old.is_dir():
        return []
    return sorted(rel for path in old.rglob("*") if path.is_file()
                  and written_by_release(rel := path.relative_to(old).as_posix(), TABLES)
                  and rel not in keep)


def carry_foreign(old: Path, new: Path) -> list[str]:
    """Hard-link (or copy) into ``new`` the files of ``old`` no release writes; returns
    those of the human annotation (``human_annotation/``, ``agreement/``), which the
    release validates, shows on its card and lists in its manifest (other foreign files
    are carried, not listed)."""
    if not old.is_dir():
        return []
    annotation = []
    for path in sorted(old.rglob("*")):
        rel = path.relative_to(old).as_posix()
        if not path.is_file() or written_by_release(rel, TABLES) or rel == MANIFEST or \
                (new / rel).exists():
            continue
        (new / rel).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, new / rel)
        except OSError:
            shutil.copy2(path, new / rel)
        if rel.split("/", 1)[0] in (HUMAN_ANNOTATION, AGREEMENT) and \
                not path.name.startswith("."):
            annotation.append(rel)
    return annotation
