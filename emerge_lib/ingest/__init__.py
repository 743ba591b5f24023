"""Dump files → timelines, for both wikis: ``plan`` (which files, which are done),
``extract`` (one file, in any process or machine, staged as Parquet: ``staging``),
``commit`` (staged files into Delta, idempotently), ``run`` (the three in one process,
with the worker ``pool``); each wiki's own extractor and commit in ``wikidata/`` and
``wikipedia/``; the registry's ingest stages in ``stage``.

Imports ``core``, ``catalog``, ``dumps`` and ``text``.
"""
