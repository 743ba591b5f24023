"""Streaming reader for MediaWiki XML export dumps (schemas 0.3 - 0.11).

Why not mwxml: it builds an element tree per revision through expat and pure-Python
iterators (about 65 MB/s); history dumps are terabytes. This is a byte-level scanner that
slices and unescapes only the few leaf values we need, layered like mwxml, a module a
layer: ``escape`` (character data), ``scanner`` (the buffer, tags, errors), ``revision``
(one ``<revision>`` to a record) and ``page`` (``Dump`` → ``Page`` → ``Revision``, lazily).
The names below are the reader's face; import them from here.
"""

from __future__ import annotations

from emerge_lib.dumps.xml.escape import NATIVE, unescape, unescape_text
from emerge_lib.dumps.xml.page import Dump, Page, PageReject, SiteInfo, iter_dump
from emerge_lib.dumps.xml.revision import Revision, Slot, parse_timestamp
from emerge_lib.dumps.xml.scanner import MalformedXMLError, TruncatedXMLError

__all__ = ["NATIVE", "Dump", "MalformedXMLError", "Page", "PageReject", "Revision",
           "SiteInfo", "Slot", "TruncatedXMLError", "iter_dump", "parse_timestamp",
           "unescape", "unescape_text"]
