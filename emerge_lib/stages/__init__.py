"""The stages: pure functions from catalog tables to catalog tables, each run through
``emerge_lib.pipeline`` (the registry says what each reads and writes).

Ingest (dump files → timelines): ``ingest`` (plan → extract → commit, both wikis) with
``ingest_wikidata`` / ``ingest_wikipedia`` (each wiki's commit and state) and the per-file
workers ``wikidata_extract`` / ``wikipedia_extract`` (``staging``: their output buffers;
``ingest_common``: the worker pool). Then ``stability``, ``snapshot``, ``deltas``,
``passages`` (with ``titles``: title → QID as of τ), ``align`` and ``release``; ``_sql``
is the SQL vocabulary they share.
"""
