"""The Great Expectations gate: suites over a snapshot's tables and over the release files.

- ``gate``: runs suites (a name, a Spark Connect DataFrame, a list of checks) through an
  ephemeral GX context, one checkpoint per suite (no Data Docs); returns plain
  results (JSON-able) and tells a failed check (bad data) from a check that could not run
  on this engine (a gate error: GX reports those as ``success=False`` with
  ``exception_info``, without raising).
- ``page``: the checks as one HTML page that opens offline (the release's
  ``validation/index.html``, a warehouse snapshot's ``_validation/snapshot_D/index.html``).
- ``suites``: what must hold for a snapshot (``validation.validate``, the validate stage) and for the release
  JSONL (``validation.validate.validate_release``, from the release stage).

Great Expectations is imported only when a gate runs (it takes seconds and hundreds of
MB), so importing this package, or a DAG file, stays cheap.
"""
