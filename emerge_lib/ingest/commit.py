"""The ingest's third step: staged files into Delta, idempotently (each wiki's timelines,
then the quarantine, the watermarks and the file records last), and the verdict on the
rejects, judged on stored state so a rerun gives the same verdict. A file whose basis
changed since its extraction is not committed but returned, to be extracted again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.extract import basis
from emerge_lib.ingest.files import IngestError
from emerge_lib.ingest.plan import DELETED, FILE_ERROR, IngestPlan
from emerge_lib.ingest.staging import FileSummary, missing_outputs, read_staged, remove_staging

log = logging.getLogger(__name__)


# -- commit --------------------------------------------------------------------------------
def commit(catalog: Catalog, plan: IngestPlan,
           summaries: Sequence[FileSummary]) -> list[FileSummary]:
    """Commit the staged outputs of ``summaries``; returns those not committed because the
    state their extraction read has changed since (extract them again)."""
    ranges = {f.name: f.ref.page_range for f in plan.files}
    fresh: list[FileSummary] = []
    stale: list[FileSummary] = []
    for s in summaries:
        same = s.basis == basis(catalog, plan.kind, plan.wiki, ranges.get(s.dump_file))
        (fresh if same else stale).append(s)
    for s in stale:
        log.warning("%s: another writer committed pages of this file since it was read; "
                    "it is read again", s.dump_file)
        remove_staging(s.staging)
    if not fresh:
        return stale
    lost = missing_outputs(fresh)
    if lost:
        raise IngestError(f"{len(lost)} staged file(s) vanished before the commit, e.g. "
                          f"{lost[0]}; nothing was committed: extract again", retryable=True)
    spark = catalog.session()
    if plan.kind == "wikidata":
        from emerge_lib.ingest.wikidata.commit import commit_staged

        commit_staged(catalog, fresh)
    else:
        from emerge_lib.ingest.wikipedia.commit import commit_staged as commit_wikipedia

        commit_wikipedia(catalog, fresh, plan.wiki,
                         {f.name: f.ranges for f in plan.files})
    _commit_rejects(catalog, fresh, plan.wiki)
    marks = read_staged(spark, fresh, "page_watermarks")
    if marks is not None:
        catalog.merge("page_watermarks", marks)
    ids = read_staged(spark, fresh, "dump_pages")  # every <page> of the file (ingest.absent)
    if ids is not None:
        catalog.merge("dump_pages", ids)
    catalog.merge("ingested_files", catalog.frame("ingested_files",
                                                  _file_rows(catalog, plan.wiki, fresh)))
    for s in fresh:
        remove_staging(s.staging)
    return stale


REJECT_KEY = ("wiki", "dump_file", "page_id", "rev_id", "reason")


def _commit_rejects(catalog: Catalog, summaries: Sequence[FileSummary], wiki: str) -> None:
    """Quarantine rows accumulate (MERGE on what was rejected), so an incremental rerun
    that does not decode old revisions again keeps their rows; a file that now reads to
    its end loses its earlier ``file_error`` row."""
    spark = catalog.session()
    rejects = read_staged(spark, summaries, "ingest_rejects")
    if rejects is not None:  # a replayed page can reject the same revision twice
        catalog.merge("ingest_rejects", rejects.dropDuplicates(list(REJECT_KEY)))
    recovered = [s.dump_file for s in summaries if not s.error]
    if recovered:
        catalog.delete_matching("ingest_rejects", catalog.frame("ingest_rejects", [
            {"wiki": wiki, "dump_file": f, "reason": FILE_ERROR} for f in recovered
        ]), on=["wiki", "dump_file", "reason"])


def _file_rows(catalog: Catalog, wiki: str,
               summaries: Sequence[FileSummary]) -> list[dict[str, Any]]:
    """ingested_files rows; reject counts come from the stored quarantine, not from this
    read (an incremental read decodes only new revisions)."""
    names = [s.dump_file for s in summaries]
    rejects = catalog.read_arrow(
        "ingest_rejects", filters=[("wiki", "=", wiki), ("dump_file", "in", names)],
        columns=["dump_file", "page_id", "rev_id", "reason"]).to_pylist()
    per_file = {n: {"rows": 0, "deleted": 0, "pages": 0} for n in names}
    for r in rejects:
        stats = per_file[r["dump_file"]]
        stats["rows"] += 1
        if r["reason"] == DELETED:
            stats["deleted"] += 1
        elif r["reason"] != FILE_ERROR and r["rev_id"] is None:  # the page itself
            stats["pages"] += 1
    now = datetime.now(UTC)
    return [{
        "wiki": wiki, "dump_date": s.dump_date, "dump_file": s.dump_file, "sha1": s.sha1,
        "pages": s.pages, "revisions": s.revisions, "rejects": per_file[s.dump_file]["rows"],
        "rejected_pages": per_file[s.dump_file]["pages"],
        "deleted_revisions": per_file[s.dump_file]["deleted"], "bytes": s.bytes,
        "seconds": s.seconds, "ingested_at": now, "error": s.error,
    } for s in summaries]


# -- the verdict ---------------------------------------------------------------------------
def check_rejects(catalog: Catalog, plan: IngestPlan, max_reject_ratio: float) -> dict[str, int]:
    """Fail loudly (after everything readable was committed) when a file of the plan failed,
    or rejected revisions or pages exceed ``max_reject_ratio``. Judged on the stored rows of
    every file of the plan, done ones included, so a rerun gives the same verdict. Deleted
    or suppressed revisions are counted, not held against the ratio. Returns the totals."""
    names = {f.name for f in plan.files}
    rows = [r for r in catalog.read_arrow("ingested_files",
                                          filters=[("wiki", "=", plan.wiki)]).to_pylist()
            if r["dump_file"] in names]
    totals = {k: sum(r[k] or 0 for r in rows)
              for k in ("pages", "revisions", "rejects", "rejected_pages", "deleted_revisions")}
    failed = [r for r in rows if r["error"]]
    if failed:
        listed = "; ".join(r["error"] if r["dump_file"] in r["error"] else
                           f"{r['dump_file']}: {r['error']}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        rest = "; the other files are committed" if len(failed) < len(names) else ""
        raise IngestError(f"{len(failed)} of {len(names)} {plan.wiki} files failed: "
                          f"{listed}{more}{rest}")
    bad_revisions = totals["rejects"] - totals["deleted_revisions"]
    checks = [("revisions", bad_revisions, totals["revisions"]),
              ("pages", totals["rejected_pages"], totals["pages"])]
    for what, bad, of in checks:
        if of and bad / of > max_reject_ratio:
            raise IngestError(
                f"{plan.wiki}: {bad} of {of} {what} rejected ({bad / of:.2%} > "
                f"dumps.max_reject_ratio {max_reject_ratio:.2%}; {totals['deleted_revisions']} "
                f"deleted revisions not counted){_most_rejected(catalog, plan.wiki, names)}; "
                "see the ingest_rejects table")
    return totals


def _most_rejected(catalog: Catalog, wiki: str, names: set[str]) -> str:
    """``; most: N reason, …`` of the files' rejects, a content model of the other wiki
    named as such (a dump passed as the wrong wiki's)."""
    counts: dict[str, int] = {}
    models: set[str] = set()
    for r in catalog.read_arrow("ingest_rejects", filters=[("wiki", "=", wiki)],
                                columns=["dump_file", "reason", "detail"]).to_pylist():
        if r["dump_file"] in names and r["reason"] != "text_deleted":
            counts[r["reason"]] = counts.get(r["reason"], 0) + 1
            if r["reason"] == "unknown_content_model":
                models.add(str(r["detail"])[:40])
    if not counts:
        return ""
    top = ", ".join(f"{n} {reason}" for reason, n in
                    sorted(counts.items(), key=lambda kv: -kv[1])[:3])
    hint = ""
    if max(counts, key=lambda k: counts[k]) == "unknown_content_model":
        other = "Wikidata" if any(m.startswith("wikibase") for m in models) else "Wikipedia"
        hint = (f" (content model {', '.join(sorted(models))[:60]}: a {other} dump? pass it "
                f"with --{other.lower()})")
    return f"; most: {top}{hint}"
