"""The release writer: the catalog's released tables, at pinned Delta versions → an EMERGE
release folder (the formats of ``emerge_lib.formats``), validated, then swapped into place.

- ``writer``: ``write_release``, the whole release in order;
- ``windows``: one window's corpus and evaluation-set JSONL with their Parquet twins;
- ``tables``: the KG snapshots (Parquet, the authors' TSV) and the tables released whole;
- ``describe``: what states the version (croissant.json, the card) and the manifest, the one
  sequence of a build and of a re-description (``emerge annotate import``);
- ``foreign``: the earlier release's files, stale or carried over;
- ``_atomic``: files renamed into place, the folder swapped into place;
- ``stage``: the release stage of the registry.
"""
