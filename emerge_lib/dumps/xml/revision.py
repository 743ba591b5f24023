"""One ``<revision>`` element to a :class:`Revision` record: the general parser
(``_parse_revision``, the specification: any schema, any order, values judged) and the
canonical-layout fast path (``_parse_canonical_revision``, which declines anything it is
not sure of; the C build batches it, ``emerge_lib.dumps._native``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import msgspec

from emerge_lib.dumps.xml.escape import _ustr, unescape_text
from emerge_lib.dumps.xml.scanner import (
    _STRUCTURAL,
    MalformedXMLError,
    _attrs,
    _PageBroken,
    _split_tag,
)

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


class Slot(msgspec.Struct, frozen=True, gc=False):
    """A non-main content slot of a multi-content revision (schema 0.11 ``<content>``)."""

    role: str | None
    model: str | None
    format: str | None
    text: str | None
    text_deleted: bool
    sha1: str | None


class Revision(msgspec.Struct, gc=False):
    """One ``<revision>``. ``text`` is the main slot's unescaped text as str (wikitext
    or entity JSON), or as UTF-8 bytes when the dump was opened with ``text_bytes=True``
    (msgspec and orjson decode bytes directly).

    ``text`` is ``None`` when deleted or absent, ``""`` for an empty text. ``timestamp`` is
    Unix seconds UTC. ``sha1`` is the revision's ``<sha1>``; ``text_sha1`` the schema-0.11
    ``sha1`` attribute of ``<text>``; ``text_size`` its ``bytes`` attribute.

    ``entity``: with ``Dump(entity_scanner=...)`` (the C build), an entity JSON text the
    scanner read straight from the escaped XML: a :class:`wikidata.EntityScan` whose
    ``escaped`` holds the text as it stands in the dump (:func:`unescape` gives ``text``),
    and ``text`` is then ``None`` (``text_deleted`` stays False). Else ``None``.
    """

    page_id: int
    rev_id: int
    parent_id: int | None
    timestamp: int
    contributor_id: int | None
    contributor_name: str | None
    contributor_deleted: bool
    minor: bool
    comment: str | None
    comment_deleted: bool
    model: str | None
    format: str | None
    text: str | bytes | None  # bytes when the Dump was opened with text_bytes=True
    text_deleted: bool
    text_size: int | None
    text_sha1: str | None
    sha1: str | None
    slots: tuple[Slot, ...] = ()
    entity: Any = None  # wikidata.EntityScan (kept untyped: the XML layer knows no JSON)


_TextOf = Callable[[bytes, int, int], str | bytes]  # unescape or unescape_text on a range


_day_cache: dict[bytes, int] = {}


def parse_timestamp(ts: bytes) -> int:
    """``2014-02-19T23:34:14Z`` -> Unix seconds (UTC); day numbers are memoized."""
    ts = ts.strip()
    day = _day_cache.get(ts[:10])
    if day is None:
        try:
            day = date(int(ts[0:4]), int(ts[5:7]), int(ts[8:10])).toordinal() - _EPOCH_ORDINAL
        except ValueError as exc:
            raise MalformedXMLError(f"bad timestamp {ts!r}") from exc
        if len(_day_cache) < 100_000:
            _day_cache[ts[:10]] = day
    if len(ts) < 19 or ts[4:5] != b"-" or ts[10:11] not in (b"T", b" "):
        raise MalformedXMLError(f"bad timestamp {ts!r}")
    return day * 86400 + int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + int(ts[17:19])


def _int_or_none(value: bytes) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


_LEAF_ID, _LEAF_PARENT, _LEAF_TS, _LEAF_USER, _LEAF_COMMENT = 1, 2, 3, 4, 5
_LEAF_MODEL, _LEAF_FORMAT, _LEAF_TEXT, _LEAF_SHA1, _LEAF_IGNORED = 6, 7, 8, 9, 10
_LEAVES: dict[bytes, int] = {
    b"id": _LEAF_ID,
    b"parentid": _LEAF_PARENT,
    b"timestamp": _LEAF_TS,
    b"username": _LEAF_USER,
    b"ip": _LEAF_USER,
    b"comment": _LEAF_COMMENT,
    b"model": _LEAF_MODEL,
    b"format": _LEAF_FORMAT,
    b"text": _LEAF_TEXT,
    b"sha1": _LEAF_SHA1,
    b"origin": _LEAF_IGNORED,
    b"role": _LEAF_IGNORED,
}


@dataclass(slots=True)
class _Fields:
    """What the general loop of :func:`_parse_revision` has read of one revision."""

    rev_id: int | None = None
    parent_id: int | None = None
    timestamp: int | None = None
    c_id: int | None = None
    c_name: str | None = None
    c_deleted: bool = False
    minor: bool = False
    comment: str | None = None
    comment_deleted: bool = False
    model: str | None = None
    fmt: str | None = None
    text: str | bytes | None = None
    text_deleted: bool = False
    text_size: int | None = None
    text_sha1: str | None = None
    sha1: str | None = None
    slots: list[Slot] = field(default_factory=list)

    def text_attrs(self, a: dict[bytes, bytes]) -> None:
        """The ``bytes`` and ``sha1`` attributes of <text>."""
        tb = a.get(b"bytes")
        self.text_size = int(tb) if tb else None
        ts = a.get(b"sha1")
        self.text_sha1 = ts.decode() if ts else None

    def revision(self, page_id: int) -> Revision:
        if self.rev_id is None or self.timestamp is None:
            raise _PageBroken("revision lacks <id> or <timestamp>", None)
        return Revision(
            page_id=page_id, rev_id=self.rev_id, parent_id=self.parent_id,
            timestamp=self.timestamp, contributor_id=self.c_id,
            contributor_name=self.c_name, contributor_deleted=self.c_deleted,
            minor=self.minor, comment=self.comment, comment_deleted=self.comment_deleted,
            model=self.model, format=self.fmt, text=self.text,
            text_deleted=self.text_deleted, text_size=self.text_size,
            text_sha1=self.text_sha1, sha1=self.sha1, slots=tuple(self.slots))


def _empty_element(f: _Fields, slot: dict[bytes, object], ctx: bytes, name: bytes,
                   leaf: int | None, attrs: bytes, lt: int, unknown: Counter[str]) -> None:
    """An empty element (``<text deleted="deleted" />``, ``<minor/>``) inside <revision>."""
    deleted = b"deleted" in attrs
    if leaf == _LEAF_TEXT:
        a = _attrs(attrs) if attrs else {}
        if ctx == b"content":
            slot[b"deleted"] = deleted
            slot[b"text"] = None if deleted else ""
            slot[b"sha1"] = a.get(b"sha1")
        else:
            f.text_deleted = deleted
            f.text = None if deleted else ""
            f.text_attrs(a)
    elif leaf == _LEAF_COMMENT:
        f.comment_deleted = deleted
    elif name == b"minor":
        f.minor = True
    elif name == b"contributor":
        f.c_deleted = deleted
    elif leaf is None:
        if name in _STRUCTURAL:
            raise _PageBroken(f"<{name.decode()}> inside <revision> (truncated revision?)", lt)
        unknown[name.decode("utf-8", "replace")] += 1
    # other empty leaves (<sha1/>, <comment/>...) carry nothing


def _leaf_value(f: _Fields, ctx: bytes, name: bytes, leaf: int, attrs: bytes, value: bytes,
                unknown: Counter[str]) -> None:
    """A leaf's character data (not <text>, not inside <content>)."""
    if ctx == b"contributor":
        if leaf == _LEAF_ID:
            f.c_id = int(value) if value.strip() else None
        elif leaf == _LEAF_USER:
            f.c_name = _ustr(value)
        else:
            unknown[name.decode("utf-8", "replace")] += 1
    elif leaf == _LEAF_ID:
        f.rev_id = int(value)
    elif leaf == _LEAF_TS:
        f.timestamp = parse_timestamp(value)
    elif leaf == _LEAF_PARENT:
        f.parent_id = int(value)
    elif leaf == _LEAF_SHA1:
        f.sha1 = value.decode() or None
    elif leaf == _LEAF_MODEL:
        f.model = value.decode()
    elif leaf == _LEAF_FORMAT:
        f.fmt = value.decode()
    elif leaf == _LEAF_COMMENT:
        f.comment_deleted = b"deleted" in attrs
        f.comment = None if f.comment_deleted else _ustr(value)
    elif leaf == _LEAF_USER:
        unknown[name.decode("utf-8", "replace")] += 1  # <username> outside <contributor>


def _parse_revision(
    buf: bytes,
    pos: int,
    end: int,
    page_id: int,
    unknown: Counter[str],
    text_of: _TextOf = unescape_text,
) -> Revision:
    """Parse the body of one <revision> (buf[pos:end]); raises _PageBroken on bad structure.

    Hot loop: one pass over the tags with bytes.find; only leaf values are sliced. The
    canonical layout (what current dumps write for nearly every revision) is first tried
    with two regexes, which builds the same Revision in a fraction of the time.
    """
    hit = _parse_canonical_revision(buf, pos, end, page_id, text_of)
    if hit is not None:
        return hit[0]
    f = _Fields()
    ctx = b""  # b"contributor" or b"content" while inside those containers
    slot: dict[bytes, object] = {}
    find = buf.find
    leaves = _LEAVES
    while True:
        lt = find(b"<", pos, end)
        if lt < 0:
            break
        gt = find(b">", lt, end)
        if gt < 0:
            raise _PageBroken("unterminated tag in <revision>", None)
        inner = buf[lt + 1 : gt]
        if inner[:1] == b"/":
            name = inner[1:].strip()
            if name == ctx:
                if ctx == b"content":
                    f.slots.append(_make_slot(slot))
                    slot = {}
                ctx = b""
                pos = gt + 1
                continue
            raise _PageBroken(
                f"unexpected </{name.decode('utf-8', 'replace')}> in <revision>",
                lt if name == b"page" else None,
            )
        leaf = leaves.get(inner)  # the common case: a leaf without attributes
        if leaf is not None:
            name, attrs, closed = inner, b"", False
        else:
            name, attrs, closed = _split_tag(inner)
            leaf = leaves.get(name)
        if closed:
            pos = gt + 1
            _empty_element(f, slot, ctx, name, leaf, attrs, lt, unknown)
            continue
        if leaf is None:
            if name in (b"contributor", b"content"):
                ctx = name
                if name == b"contributor":
                    f.c_deleted = b"deleted" in attrs
                else:
                    slot = {}
                pos = gt + 1
                continue
            if name in _STRUCTURAL:
                raise _PageBroken(f"<{name.decode()}> inside <revision> (truncated revision?)", lt)
            # Unknown element: skip it whole (no nesting of the same name in the schema).
            close = find(b"</" + name + b">", gt + 1, end)
            if close < 0:
                raise _PageBroken(
                    f"unterminated <{name.decode('utf-8', 'replace')}> in <revision>", None
                )
            unknown[name.decode("utf-8", "replace")] += 1
            pos = close + len(name) + 3
            continue
        # leaf element with character data up to its closing tag
        nxt = find(b"<", gt + 1, end)
        if nxt < 0 or not buf.startswith(b"</" + name + b">", nxt):
            raise _PageBroken(
                f"<{name.decode()}> not closed in <revision>", None if nxt < 0 else nxt
            )
        pos = nxt + len(name) + 3
        if ctx == b"content":
            if leaf == _LEAF_TEXT:
                deleted = b"deleted" in attrs
                slot[b"deleted"] = deleted
                slot[b"text"] = None if deleted else unescape_text(buf[gt + 1 : nxt])
                slot[b"sha1"] = _attrs(attrs).get(b"sha1")
            else:
                slot[name] = buf[gt + 1 : nxt]
        elif leaf == _LEAF_TEXT:
            f.text_deleted = b"deleted" in attrs
            f.text = None if f.text_deleted else text_of(buf, gt + 1, nxt)
            if attrs:
                f.text_attrs(_attrs(attrs))
        else:
            _leaf_value(f, ctx, name, leaf, attrs, buf[gt + 1 : nxt], unknown)
    if ctx:
        raise _PageBroken(f"<{ctx.decode()}> not closed in <revision>", None)
    return f.revision(page_id)


# The canonical revision layout up to the opening <text> tag. Only values the general
# loop reads the same way are captured (digits, text without markup); any variation
# (deleted fields, slots, unknown elements, attributes elsewhere) misses and falls back.
_REV_HEAD = re.compile(
    rb"\s*<id>(\d+)</id>"
    rb"\s*(?:<parentid>(\d+)</parentid>\s*)?"
    rb"<timestamp>([^<]*)</timestamp>"
    rb"\s*<contributor>\s*(?:<username>([^<]*)</username>\s*(?:<id>(\d+)</id>\s*)?"
    rb"|<ip>([^<]*)</ip>\s*)</contributor>"
    rb"\s*(<minor\s*/>\s*)?"
    rb"(?:<comment>([^<]*)</comment>\s*)?"
    rb"(?:<origin>\d+</origin>\s*)?"
    rb"<model>([^<]*)</model>"
    rb"\s*<format>([^<]*)</format>"
    rb'\s*<text((?:\s+[\w:.-]+="[^"<&]*")*)\s*>'
)


_REV_TAIL = re.compile(rb"\s*(?:<sha1>([^<]*)</sha1>|<sha1\s*/>)?\s*")


_REV_TAIL_END = re.compile(rb"\s*(?:<sha1>([^<]*)</sha1>|<sha1\s*/>)?\s*</revision>")


# <text> attributes as current (bytes, sha1, xml:space) and older (xml:space, bytes) dumps
# write them; values that _attrs would return unchanged
_TEXT_ATTRS = re.compile(
    rb'\s+bytes="(\d*)"(?:\s+sha1="([0-9a-z]*)")?\s+xml:space="preserve"\s*'
    rb'|\s+xml:space="preserve"(?:\s+bytes="(\d*)")?\s*'
)


def _parse_canonical_revision(
    buf: bytes,
    pos: int,
    end: int,
    page_id: int,
    text_of: _TextOf = unescape_text,
) -> tuple[Revision, int] | None:
    """The canonical layout via regexes: (revision, end of its body), or None when the
    general loop must decide. ``end < 0``: the body ends at the first ``</revision>``,
    found here (no value in the canonical layout can contain a ``<``), which saves
    searching the whole revision text for it."""
    if end < 0:
        m = _REV_HEAD.match(buf, pos)
        if m is None:
            return None
        start = m.end()
        nxt = buf.find(b"<", start)
        if nxt < 0 or not buf.startswith(b"</text>", nxt):
            return None
        tail = _REV_TAIL_END.match(buf, nxt + 7)
        if tail is None:
            return None
        end = tail.end() - len(b"</revision>")
    else:
        m = _REV_HEAD.match(buf, pos, end)
        if m is None:
            return None
        start = m.end()
        nxt = buf.find(b"<", start, end)
        if nxt < 0 or not buf.startswith(b"</text>", nxt):
            return None
        tail = _REV_TAIL.fullmatch(buf, nxt + 7, end)
        if tail is None:
            return None
    rev_id, parent, ts, user, uid, ip, minor, comment, model, fmt, attrs = m.groups()
    if b"deleted" in attrs:
        return None  # the general loop's test for a deleted text
    sha1 = tail.group(1)
    # values in document order, so a bad one raises what the general loop would raise
    rev_num = int(rev_id)
    parent_id = None if parent is None else int(parent)
    timestamp = parse_timestamp(ts)
    contributor_id = None if uid is None else int(uid)
    contributor_name = _ustr(user if ip is None else ip)
    comment_text = None if comment is None else _ustr(comment)
    model_name = model.decode()
    format_name = fmt.decode()
    text_size = text_sha1 = None
    if attrs:
        common = _TEXT_ATTRS.fullmatch(attrs)
        if common is not None:
            tb, tsha, tb_old = common.groups()
            tb = tb if tb_old is None else tb_old
        else:
            a = _attrs(attrs)
            tb, tsha = a.get(b"bytes"), a.get(b"sha1")
        text_size = int(tb) if tb else None
        text_sha1 = tsha.decode() if tsha else None
    rev = Revision(
        page_id=page_id,
        rev_id=rev_num,
        parent_id=parent_id,
        timestamp=timestamp,
        contributor_id=contributor_id,
        contributor_name=contributor_name,
        contributor_deleted=False,
        minor=minor is not None,
        comment=comment_text,
        comment_deleted=False,
        model=model_name,
        format=format_name,
        text=text_of(buf, start, nxt),
        text_deleted=False,
        text_size=text_size,
        text_sha1=text_sha1,
        sha1=(sha1.decode() or None) if sha1 is not None else None,
    )
    return rev, end


def _make_slot(d: dict[bytes, object]) -> Slot:
    def s(key: bytes) -> str | None:
        v = d.get(key)
        return _ustr(v) if isinstance(v, bytes) else None

    text = d.get(b"text")
    return Slot(
        role=s(b"role"),
        model=s(b"model"),
        format=s(b"format"),
        text=text if isinstance(text, str) else None,
        text_deleted=bool(d.get(b"deleted", False)),
        sha1=s(b"sha1"),
    )
