"""Where a release came from, for its manifest: the history it holds (``history``: per
wiki, how far its revisions and its deletions go) or the dump files the warehouse was
built from (``dumps``), and who judged the released triples (``judges``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import CurationSettings
from emerge_lib.curation.prompts import TEMPLATES
from emerge_lib.release.windows import Reads


def dumps(catalog: Catalog, version: int | None) -> list[dict[str, Any]]:
    """The dump files the warehouse was built from, with their sha1."""
    return [] if version is None else sorted(
        ({"wiki": r["wiki"], "dump_date": r["dump_date"], "file": r["dump_file"],
          "bytes": r["bytes"], "sha1": r["sha1"]}
         for r in catalog.read_arrow("ingested_files", version=version).to_pylist()),
        key=lambda d: (d["wiki"], d["dump_date"], d["file"]))


def judges(reads: Reads, snapshots: Sequence[str]) -> list[dict[str, Any]]:
    """Who judged the released snapshots' triples: per model, route, prompt type and
    served model, the verdicts recorded (YES, NO, UNPARSED), how many of them answer QA
    asked again (``asked_again``: an UNPARSED or a degenerate answer replaced), the prompt
    template's sha256, and, for a configured route, its backend and quantization."""
    version = reads.versions.get("verdicts")
    if version is None:
        return []
    columns = ["snapshot", "llm_name", "judge", "prompt_type", "served_model", "verdict"]
    try:  # answer QA's columns (a warehouse curated before them has none)
        rows = reads.catalog.read_arrow("verdicts", columns=[*columns, "ask_round", "replaced"],
                                        version=version).to_pylist()
    except (KeyError, ValueError):  # pyarrow: a column the stored schema lacks
        rows = reads.catalog.read_arrow("verdicts", columns=columns, version=version).to_pylist()
    counts: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    again: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        if r["snapshot"] in snapshots:
            key = (r["llm_name"], r["judge"] or "", r["prompt_type"], r["served_model"] or "")
            counts[key][r["verdict"]] += 1
            if (r.get("ask_round") or 1) > 1:  # answer QA: asked again, and why
                why = json.loads(r.get("replaced") or "{}").get("why", "")
                again[key]["unparsed" if why == "unparsed" else "degenerate"] += 1
    out = []
    final = reads.curation.final_judge
    for (name, judge, prompt_type, served), verdicts in sorted(counts.items()):
        route = reads.curation.route("additions") if judge == "additions" else \
            reads.curation.route("deprecations") if judge == "deprecations" else \
            reads.curation.route(final) if judge == "final" and final else None
        mine = route is not None and route.name == name
        template = TEMPLATES.get(prompt_type)
        out.append({"llm_name": name, "judge": judge or None, "prompt_type": prompt_type,
                    "served_model": served or None,
                    "backend": route.backend if route is not None and mine else None,
                    "quantization": route.quantization if route is not None and mine
                    else None,
                    "template_sha256": hashlib.sha256(template.encode()).hexdigest()
                    if template else None,
                    "verdicts": dict(sorted(verdicts.items())),
                    "asked_again": {"unparsed": again[(name, judge, prompt_type, served)][
                        "unparsed"], "degenerate": again[(name, judge, prompt_type, served)][
                        "degenerate"]}})
    return out



def gold(curation: CurationSettings, lines: Mapping[str, int]) -> dict[str, Any] | None:
    """Which judge made the release's gold (``asserted_operations``: evaluate's
    llm-asserted filter, the card's supported triples): the final judge, the authors'
    s05 v9 (``curation.final_judge``), or without one the configured judges' rule; with
    ``lines``, the released lines whose gold each made (a line the final judge has not
    judged whole keeps the configured rule). None when curation is off."""
    if not curation.enabled:
        return None
    counted = {"lines": {k: lines.get(k, 0) for k in ("final judge", "configured judges")}}
    if curation.final_judge is None:
        return {"rule": "configured judges", "llm_name": None, "route": None,
                "prompts": "the paper's (Appendix B)", **counted}
    return {"rule": "final judge", "llm_name": curation.route(curation.final_judge).name,
            "route": curation.final_judge,
            "prompts": "the paper's (Appendix B), the authors' prompt_v1",
            "reference": "the authors' s05 v9: Meta-Llama-3.1-405B_prompt_v1 judges every "
                         "operation of the kept lines (their evaluation's assessor)",
            **counted}


@dataclass(frozen=True)
class Reach:
    """How far a wiki's ingested history goes (days, ``YYYYMMDD``): ``increments``, the day
    after its newest daily adds/changes file ("" with none); ``full``, its newest full
    dump; ``deletions``, the day its deletions and moves are known to (its first full
    dump, or the newest logging dump reconciled, or a newer full dump ingested completely:
    its reconciled_logs row)."""

    increments: str = ""
    full: str = ""
    deletions: str = ""

    @property
    def revisions(self) -> str:
        """The day before which every revision is in the warehouse."""
        return max(self.increments, self.full)


def reaches(catalog: Catalog, versions: Mapping[str, int | None]) -> dict[str, Reach]:
    """wiki → its :class:`Reach`, from ingested_files and reconciled_logs at ``versions``
    (files ingested with an error do not count)."""
    from datetime import datetime, timedelta

    files, logs = versions.get("ingested_files"), versions.get("reconciled_logs")
    if files is None:
        return {}
    increments: dict[str, str] = {}
    full: dict[str, list[str]] = {}
    for r in catalog.read_arrow("ingested_files", version=files,
                                columns=["wiki", "dump_date", "dump_file", "error"]).to_pylist():
        if r["error"] is not None or not r["dump_date"]:
            continue
        if "-pages-meta-hist-incr.xml" in r["dump_file"]:  # a day: before the next day
            day = (datetime.strptime(r["dump_date"], "%Y%m%d") + timedelta(days=1))
            increments[r["wiki"]] = max(increments.get(r["wiki"], ""), day.strftime("%Y%m%d"))
        else:
            full.setdefault(r["wiki"], []).append(r["dump_date"])
    deletions = {w: min(dates) for w, dates in full.items()}
    if logs is not None:
        for r in catalog.read_arrow("reconciled_logs", version=logs,
                                    columns=["wiki", "dump_date"]).to_pylist():
            deletions[r["wiki"]] = max(deletions.get(r["wiki"], ""), r["dump_date"])
    return {w: Reach(increments.get(w, ""), max(full.get(w, [""])), deletions.get(w, ""))
            for w in sorted({*increments, *full})}


def history(catalog: Catalog, versions: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """The history a release was built from, by what it holds rather than by the files
    that brought it (``release.provenance: history``): per wiki, the day before which
    every revision is in (``revisions_before``) and the day its deletions and moves are
    known to (``deletions_known_to``). A full dump of day D and a dump of an earlier day
    with the daily increments to D - 1 and the logging dump of D hold the same history,
    so their releases are the same bytes; the files each read stay in the warehouse's
    ingested_files (``emerge inspect``)."""
    def day(d: str) -> str | None:
        return f"{d[:4]}-{d[4:6]}-{d[6:8]}" if d else None

    return [{"wiki": w, "revisions_before": day(r.revisions),
             "deletions_known_to": day(r.deletions)}
            for w, r in reaches(catalog, versions).items()]


def built_earlier(catalog: Catalog, snapshots: Sequence[str],
                  held: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The snapshots whose rows were built from another history than the one the release
    holds (``held``: :func:`history`), each with that history: those a build kept as they
    were built (``snapshots.rebuild: new``), or released without being built again. From
    the record the last whole build of each left (``pipeline.built``); a snapshot with no
    record (built stage by stage) is not marked."""
    from emerge_lib.catalog.storage import built_state, read_state

    out = []
    for snap in snapshots:
        state = read_state(catalog, built_state(snap))
        if state is not None and "history" in state and state["history"] != list(held):
            out.append({"snapshot": snap, "history": state["history"]})
    return out


def provisional(catalog: Catalog, versions: Mapping[str, int | None],
                plans: Sequence[Any]) -> list[dict[str, Any]]:
    """The snapshots built provisionally (docs/operations.md, *The reconciliation*): the
    timelines of a wiki reach past the day its deletions are known to (its first full
    dump, or the newest logging dump reconciled), and the snapshot's last window ends
    after that day. Each with that day. Only increments count as reaching past it: a
    warehouse of full dumps is not marked (a newer one ingested completely removes what
    it lacks and writes its reconciled_logs row: ``ingest.absent``)."""
    from datetime import UTC, datetime

    behind = [r.deletions for r in reaches(catalog, versions).values()
              if r.increments > r.deletions]
    if not behind:
        return []
    to = datetime.strptime(min(behind), "%Y%m%d").replace(tzinfo=UTC)
    return [{"snapshot": p.key, "last_window_end": p.horizon.strftime("%Y-%m-%dT%H:%M:%SZ"),
             "covered_to": to.strftime("%Y-%m-%d")}
            for p in plans if p.horizon > to]
