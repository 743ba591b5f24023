"""What the adapters share: a release snapshot's entity and relation dictionaries."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from emerge_lib.core.errors import InputError


@dataclass
class Dictionaries:
    """V_t and R_t of one snapshot: QID → entity name, PID → (label, description)."""

    entities: dict[str, str] = field(default_factory=dict)
    relations: dict[str, tuple[str, str]] = field(default_factory=dict)


def _num(ident: str) -> tuple[int, str]:
    m = re.match(r"[A-Z](\d+)$", ident)
    return (int(m.group(1)), ident) if m else (1 << 62, ident)


def release_dictionaries(release: str | Path, snapshot: str) -> Dictionaries:
    """The dictionaries of ``snapshot`` (YYYY-MM-DD) from a release of ours:
    ``kg_snapshots/snapshot_<date>/entities.parquet`` (its Wikipedia title, else its label)
    and ``relations.parquet`` (label and description), ordered by numeric id."""
    import pyarrow.parquet as pq

    from emerge_lib.formats.layout import kg_parquet_path

    ents, rels = (Path(release) / kg_parquet_path(snapshot, t) for t in ("entities", "relations"))
    if not rels.is_file():
        raise InputError(f"no relation dictionary for snapshot {snapshot}: {rels} is missing")
    out = Dictionaries()
    for r in sorted(pq.read_table(rels, columns=["pid", "label", "description"]).to_pylist(),
                    key=lambda r: _num(r["pid"])):
        if r["label"]:
            out.relations[r["pid"]] = (r["label"], r["description"] or "")
    if ents.is_file():
        for r in sorted(pq.read_table(ents, columns=["qid", "title", "label"]).to_pylist(),
                        key=lambda r: _num(r["qid"])):
            name = r["title"] or r["label"]
            if name:
                out.entities[r["qid"]] = name
    return out
