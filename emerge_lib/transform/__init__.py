"""The relational stages, pure functions of catalog tables: ``stability`` (the 168 h
rule), ``snapshot`` (G_t), ``deltas`` (every window's cumulative delta), ``passages`` (new
paragraphs, links resolved by ``titles``), ``align`` (passages × deltas → instances) and
``select`` (near-duplicates out, the test split); their registry entries in ``stage``.

Imports ``core``, ``catalog``, ``ingest.wikipedia.coverage`` (what the Wikipedia ingest
holds) and ``formats`` (the released ids).
"""
