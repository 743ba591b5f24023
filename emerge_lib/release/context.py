"""The KG context of each released line: what the paper (§6) says a model needs and the
passage alone does not give, computed from what the release ships (``kg_snapshots/``).

Per corpus line (``parquet/context/snapshot_D/delta_D.parquet``): the triples of T_t
within ``release.context.hops`` of the line's entities (its article's QID, then its
mentions' QIDs: the seeds), walked both ways (a triple touches an entity as its subject
or its object; only QIDs are walked through), each with its hop and the labels V_t and
R_t give. At most ``release.context.max_triples`` per line: nearest hop first, then by
(s, p, o). The walk stops after the hop that reaches the cap (a hub such as *human*
would otherwise pull in most of the KG at hop 2): ``context_total`` counts the triples
found up to that hop, ``truncated`` says the cap cut them.

Per snapshot (``relation_priors.parquet``): the relation priors, how many triples of T_t
each relation of R_t (and any other relation T_t uses) has, and its share.

Context is G_t, the KG before the update: an E triple is not in it, an X or D triple is
(docs/using-a-release.md "KG context").
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.core.config import ContextSettings
from emerge_lib.formats.layout import PARQUET_CONTEXT, kg_parquet_path, parquet_twin, priors_path
from emerge_lib.formats.schema import CONTEXT_SCHEMA, PRIORS_SCHEMA, write_table
from emerge_lib.release._atomic import atomic_file

_QID = re.compile(r"Q[1-9][0-9]*")
#: a triple of T_t with its hop from the seeds
Found = tuple[str, str, str, int]


def seeds_of(anchor_qid: str | None, mentions: Iterable[Mapping[str, object]] | None
             ) -> list[str]:
    """A line's seeds: its article's QID, then its mentions' QIDs, each once, in order."""
    out: list[str] = []
    for qid in [anchor_qid, *(m.get("qid") for m in mentions or ())]:
        if isinstance(qid, str) and qid and qid not in out:
            out.append(qid)
    return out


class Graph:
    """T_t indexed by entity, for the entities a walk of ``hops`` from ``seeds`` reaches
    (one pass over the triples per hop: the rest of the KG is never turned into Python)."""

    def __init__(self, triples: pa.Table, seeds: Iterable[str], hops: int) -> None:
        self.triples: list[tuple[str, str, str]] = []
        self.touching: dict[str, list[int]] = defaultdict(list)
        known: set[str] = set()
        frontier = set(seeds)
        for hop in range(hops):
            known |= frontier
            if not frontier or not triples.num_rows:
                break
            wanted = pa.array(sorted(frontier), pa.string())
            mask = pc.or_(pc.is_in(triples["s"], value_set=wanted),
                          pc.is_in(triples["o"], value_set=wanted))
            found = triples.filter(mask)
            triples = triples.filter(pc.invert(mask))  # each triple indexed once
            reached: set[str] = set()
            for s, p, o in zip(*(found[c].to_pylist() for c in ("s", "p", "o")), strict=True):
                self.touching[s].append(len(self.triples))
                if o != s:
                    self.touching[o].append(len(self.triples))
                self.triples.append((s, p, o))
                reached.update(x for x in (s, o) if _QID.fullmatch(x))
            if hop + 1 < hops:
                frontier = reached - known

    def around(self, seeds: Sequence[str], hops: int, cap: int) -> tuple[list[Found], int]:
        """The triples within ``hops`` of ``seeds`` in context order, at most ``cap``, and
        how many were found (up to the hop that reached the cap)."""
        hop_of: dict[int, int] = {}
        seen = set(seeds)
        frontier = sorted(seen)
        for hop in range(1, hops + 1):
            reached: set[str] = set()
            for entity in frontier:
                for i in self.touching.get(entity, ()):
                    if i not in hop_of:
                        hop_of[i] = hop
                        s, _, o = self.triples[i]
                        reached.update(x for x in (s, o) if x not in seen and _QID.fullmatch(x))
            seen |= reached
            frontier = sorted(reached)
            if len(hop_of) >= cap or not frontier:
                break
        ranked = sorted((hop, *self.triples[i]) for i, hop in hop_of.items())
        return [(s, p, o, hop) for hop, s, p, o in ranked[:cap]], len(hop_of)


def _labels(out: Path, snapshot: str, table: str, key: str) -> dict[str, str | None]:
    path = out / kg_parquet_path(snapshot, table)
    if not path.is_file():
        return {}
    rows = pq.read_table(path, columns=[key, "label"])
    return dict(zip(rows[key].to_pylist(), rows["label"].to_pylist(), strict=True))


def priors(snapshot_day: date, triples: pa.Table, labels: Mapping[str, str | None]) -> pa.Table:
    """R_t's prior in T_t: triples per relation, most first, then by pid."""
    counts: dict[str, int] = dict.fromkeys(labels, 0)
    if triples.num_rows:
        grouped = triples.group_by("p").aggregate([("p", "count")])
        counts.update(zip(grouped["p"].to_pylist(), grouped["p_count"].to_pylist(), strict=True))
    total = sum(counts.values())
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return pa.table({
        "snapshot": [snapshot_day] * len(rows), "pid": [p for p, _ in rows],
        "label": [labels.get(p) for p, _ in rows], "triples": [n for _, n in rows],
        "share": [n / total if total else 0.0 for _, n in rows]}, schema=PRIORS_SCHEMA)


def write_context(out: Path, corpus: Mapping[str, Sequence[str]], settings: ContextSettings
                  ) -> dict[str, int]:
    """Each snapshot's context files under ``out`` (see the module docstring), from its
    corpus JSONL files (release-relative, ``corpus``: snapshot → files) and its released
    KG. Returns the files written with their rows."""
    written: dict[str, int] = {}
    for snap, files in sorted(corpus.items()):
        kg_path = out / kg_parquet_path(snap, "kg_triples")
        kg = pq.read_table(kg_path, columns=["s", "p", "o"]) if kg_path.is_file() else \
            pa.table({c: pa.array([], pa.string()) for c in ("s", "p", "o")})
        entities = _labels(out, snap, "entities", "qid")
        relations = _labels(out, snap, "relations", "pid")
        columns = ["hash_id", "delta_dates", "window", "anchor_page_qid", "mentions"]
        lines = {f: pq.read_table(out / parquet_twin(f), columns=columns).to_pylist()
                 for f in files}
        seeds = {r["hash_id"]: seeds_of(r["anchor_page_qid"], r["mentions"])
                 for rows in lines.values() for r in rows}
        graph = Graph(kg, {q for s in seeds.values() for q in s}, settings.hops)
        for f, rows in lines.items():
            out_rows = []
            for r in rows:
                found, total = graph.around(seeds[r["hash_id"]], settings.hops,
                                            settings.max_triples)
                out_rows.append({
                    "hash_id": r["hash_id"], "snapshot": r["delta_dates"][0], "delta_end": r["delta_dates"][1],
                    "window": r["window"], "seeds": seeds[r["hash_id"]], "hops": settings.hops,
                    "context_triples": [
                        {"s": s, "p": p, "o": o, "s_label": entities.get(s),
                         "p_label": relations.get(p), "o_label": entities.get(o), "hop": hop}
                        for s, p, o, hop in found],
                    "context_total": total, "truncated": total > len(found)})
            rel = parquet_twin(f, PARQUET_CONTEXT)
            with atomic_file(out / rel) as tmp:
                written[rel] = write_table(tmp, pa.Table.from_pylist(out_rows,
                                                                     schema=CONTEXT_SCHEMA))
        rel = priors_path(snap)
        with atomic_file(out / rel) as tmp:
            written[rel] = write_table(tmp, priors(date.fromisoformat(snap[:10]), kg, relations))
    return written
