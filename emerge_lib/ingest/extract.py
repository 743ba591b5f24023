"""The ingest's second step: one file, in any process or on any machine. The worker reads
its own share of the stored state (the watermarks of its page-id range, and for Wikipedia
the coverage) from the catalog, stages Parquet under its staging folder, and returns a
picklable ``FileSummary`` with a digest of the state it read (``basis``), so the commit can
tell whether another writer changed that state since.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.plan import IngestPlan, Kind, PlannedFile, Range
from emerge_lib.ingest.staging import FileSummary
from emerge_lib.ingest.wikidata.commit import page_filters


# -- extract -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExtractJob:
    """Everything one extraction needs, picklable (a pool, a Spark task, an Airflow task)."""

    kind: Kind
    wiki: str
    file: PlannedFile
    staging: str  # this job's own staging folder (a path or a filesystem URI)
    warehouse: str
    storage_options: dict[str, str] = field(default_factory=dict)
    rewrite: bool = False  # every page written anew, unless the warehouse holds a newer state

    @property
    def bytes(self) -> int:  # run_workers starts the largest files first
        return self.file.bytes


def job_for(plan: IngestPlan, f: PlannedFile, staging_root: str, catalog: Catalog) -> ExtractJob:
    folder = f"{staging_root.rstrip('/')}/{plan.wiki}/{f.ref.dump_date or 'undated'}/" \
             f"{f.name}-{uuid.uuid4().hex[:12]}"
    return ExtractJob(plan.kind, plan.wiki, f, folder, catalog.warehouse,
                      dict(catalog.storage_options), plan.rewrite)


def basis(catalog: Catalog, kind: Kind, wiki: str, page_range: Range | None) -> str:
    """A digest of the stored state an extraction of ``page_range`` depends on: its pages'
    watermarks and, for Wikipedia, the coverage of the dump files those pages were last
    read from (what says which pages may be skipped). Only that: files of disjoint page
    ranges, committed one after the other, leave each other's basis as it was."""
    digest = hashlib.blake2b(digest_size=12)
    marks = catalog.read_arrow(
        "page_watermarks", filters=page_filters(wiki, page_range),
        columns=["page_id", "last_rev_id", "last_timestamp", "max_rev_id", "revisions",
                 "dump_file"])
    parts = [marks.sort_by("page_id")]
    read_from = sorted(set(marks.column("dump_file").to_pylist()) - {None})
    if kind == "wikipedia" and read_from:
        cov = catalog.read_arrow(
            "paragraph_coverage", filters=[("wiki", "=", wiki), ("dump_file", "in", read_from)],
            columns=["dump_file", "range_from", "range_to"])
        parts.append(cov.sort_by([("dump_file", "ascending"), ("range_from", "ascending")]))
    for table in parts:
        for column in table.combine_chunks().columns:
            digest.update(repr(column.to_pylist()).encode())
    return digest.hexdigest()


def extract(job: ExtractJob, threads: int | None = 1) -> FileSummary:
    """Extract one file (module-level and picklable: the process-pool and Spark entry point)."""
    # a Spark executor's Python worker has none of this process's AWS_* variables: the
    # warehouse's S3 settings are those the staging's pyarrow file system reads too
    for key, value in job.storage_options.items():
        if key.startswith("AWS_"):
            os.environ.setdefault(key, value)
    catalog = Catalog(job.warehouse, storage_options=job.storage_options)
    ref = job.file.ref
    page_range = ref.page_range
    stamp = basis(catalog, job.kind, job.wiki, page_range)
    if job.kind == "wikidata":
        from emerge_lib.ingest.wikidata.commit import load_state, load_watermarks
        from emerge_lib.ingest.wikidata.extract import WikidataFileExtractor

        marks = load_watermarks(catalog, job.wiki, page_range)
        summary = WikidataFileExtractor(
            ref.path, job.staging, job.wiki, ref.name, ref.dump_date, marks, threads,
            replace_pages=job.rewrite,
            state_at=(lambda wanted: load_state(catalog, wanted)) if ref.increment else None,
        ).run()
    else:
        from emerge_lib.ingest.wikipedia.commit import load_marks, load_pages
        from emerge_lib.ingest.wikipedia.extract import WikipediaFileExtractor

        ranges = list(job.file.ranges)
        pages = load_marks(catalog, job.wiki, ranges, page_range, skippable=not job.rewrite)
        summary = WikipediaFileExtractor(
            ref.path, job.staging, ranges, job.wiki, ref.name, ref.dump_date, pages, threads,
            state_at=(lambda wanted: load_pages(catalog, job.wiki, wanted))
            if ref.increment else None,
        ).run()
    summary.basis, summary.sha1, summary.staging = stamp, ref.sha1, job.staging
    return summary
