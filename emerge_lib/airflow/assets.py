"""The Assets that link emerge's DAGs, declared once: an Asset's name and URI are unique
among active assets, so two DAG files declaring the same URI under different names would
deactivate one of them. Import these; never declare them again."""

from __future__ import annotations

from airflow.sdk import Asset

#: a history dump of both wikis done on the mirror (the emerge_dumps DAG's output, which
#: schedules emerge_ingest); an event's ``extra`` holds ``dump_date`` (YYYYMMDD)
DUMPS = Asset(name="emerge_dumps", uri="emerge://mirror/history-dumps", group="emerge")

#: the ingest DAG's output: the timelines and stable statements of the warehouse; an
#: event's ``extra`` says which dump dates and files were committed
TIMELINES = Asset(name="emerge_timelines", uri="emerge://warehouse/timelines", group="emerge")

#: a built release (the snapshot DAG's release task: one event per release, published or
#: not; it schedules emerge_evaluate); an event's ``extra`` holds ``snapshot`` (ISO t),
#: ``release_dir`` (the local folder), ``version`` (the manifest's), ``files`` and
#: ``validation`` (the gate's verdict in words)
RELEASE = Asset(name="emerge_release", uri="emerge://releases", group="emerge")

#: a release published to S3 (the publish task); ``extra``: ``snapshot``, ``release_dir``,
#: ``version``, ``uri`` (s3://… of the version) and ``manifest`` (its manifest.json)
PUBLISHED = Asset(name="emerge_published", uri="emerge://releases/published", group="emerge")
