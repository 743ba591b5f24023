"""Wikidata: revisions → statement, item and property intervals (``extract``, per file)
and their commit with the watermarks (``commit``)."""
