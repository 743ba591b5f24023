"""Wikidata revision JSON -> the entity facts EMERGE needs (:class:`EntityState`).

Why typed msgspec Structs: an item's JSON is mostly labels, descriptions, aliases,
sitelinks and references in hundreds of languages that we never look at. Structs that
declare only ``en`` / ``enwiki`` / the snak fields make msgspec skip everything else
without allocating a Python object for it (and keep the GC out of it). A generic
orjson/json walker handles anything the typed schema rejects (odd historic values), so
the fast path never costs correctness.

Both serializations found in history dumps are read (docs/semantics.md §1.1):

* current: ``id``/``type``/``labels``/``descriptions``/``sitelinks``/``claims`` (a map
  pid -> statements with ``mainsnak``, ``rank``, ``qualifiers``, ``id``);
* legacy (2012-2014 internal format): ``entity`` (``"q42"`` or ``["item", 42]``),
  ``label``/``description`` (language -> string), ``links`` (site -> title or
  ``{"name": ...}``), ``claims`` as a list of ``{"m": snak, "q": [snak...], "g": id,
  "rank": 0|1|2}`` with snaks like ``["value", 31, "wikibase-entityid", {...}]``.

They are told apart by their keys, not by the JSON type of ``claims``: PHP serializes an
empty map as ``[]`` in both. Entity redirects are ``{"entity": "Q1", "redirect": "Q2"}``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import msgspec

try:  # the C build (setup.py; optional)
    from emerge_lib.dumps._native import EntityScanner as _EntityScanner
except ImportError:  # pragma: no cover - exercised where no compiler exists
    _EntityScanner = None

try:  # orjson is faster; the stdlib keeps this module importable without it
    import orjson

    _loads = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover
    import json

    _loads = json.loads
    _JSONError = (ValueError,)

__all__ = [
    "EntityParseError",
    "EntityParser",
    "EntityScan",
    "EntityState",
    "Qualifier",
    "Statement",
    "entity_scanner",
    "parse_entity",
    "time_to_instant",
]

_RANKS_LEGACY = {0: "deprecated", 1: "normal", 2: "preferred"}
_ENTITY_PREFIX = {"item": "Q", "property": "P", "lexeme": "L", "form": "L", "sense": "L"}
_KIND_BY_PREFIX = {"Q": "item", "P": "property", "L": "lexeme", "M": "mediainfo"}


# --------------------------------------------------------------------------- output records
class Qualifier(msgspec.Struct, frozen=True, gc=False):
    """A qualifier snak. ``kind``: ``item``/``property``/... for entity values, else the
    datavalue type (``time``, ``string``, ``quantity``...) or ``somevalue``/``novalue``."""

    pid: str
    kind: str
    time: str | None = None
    precision: int | None = None
    qid: str | None = None


class Statement(msgspec.Struct, frozen=True, gc=False):
    """A statement; ``value_qid`` is set only when the main snak's value is an item."""

    statement_id: str | None
    pid: str
    value_qid: str | None
    snaktype: str
    rank: str
    qualifiers: tuple[Qualifier, ...] = ()


class EntityState(msgspec.Struct, frozen=True, gc=False):
    """What one revision says about one entity. A redirect has only ``qid``/``redirect_to``."""

    qid: str | None
    kind: str | None
    redirect_to: str | None = None
    enwiki_title: str | None = None
    label_en: str | None = None
    description_en: str | None = None
    datatype: str | None = None
    statements: tuple[Statement, ...] = ()
    legacy: bool = False
    skipped_statements: int = 0


class EntityParseError(ValueError):
    """The revision text is not usable entity JSON; ``reason`` is a short code for reject rows
    (``invalid_json``, ``not_an_object``, ``unknown_shape``)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


# --------------------------------------------------------------------------- typed input schema
class _Term(msgspec.Struct):
    value: str | None = None


class _TermsEn(msgspec.Struct):
    en: _Term | None = None


class _Sitelink(msgspec.Struct):
    title: str | None = None


class _Sitelinks(msgspec.Struct):
    enwiki: _Sitelink | None = None


class _LegacyTermsEn(msgspec.Struct):
    en: str | None = None


class _LegacyLink(msgspec.Struct):
    name: str | None = None


class _LegacyLinks(msgspec.Struct):
    enwiki: str | _LegacyLink | None = None


class _Val(msgspec.Struct):
    """The fields we read from any object-valued datavalue (entity id or time)."""

    id: str | None = None
    numeric_id: int | None = msgspec.field(default=None, name="numeric-id")
    entity_type: str | None = msgspec.field(default=None, name="entity-type")
    time: str | None = None
    precision: int | float | None = None  # globecoordinate precision is a float


_Value = str | _Val | int | float | list[Any] | None


class _DataValue(msgspec.Struct):
    value: _Value = None
    type: str | None = None


class _Snak(msgspec.Struct):
    snaktype: str
    property: str
    datavalue: _DataValue | None = None


class _Claim(msgspec.Struct):
    mainsnak: _Snak
    rank: str = "normal"
    id: str | None = None
    qualifiers: dict[str, list[_Snak]] | list[Any] | None = None


_Claims = dict[str, list[_Claim]] | list[Any]


class _LegacySnak(msgspec.Struct, array_like=True):
    snaktype: str
    pid: int
    vtype: str | None = None
    value: _Value = None


class _LegacyClaim(msgspec.Struct):
    m: _LegacySnak
    q: list[_LegacySnak] = []
    g: str | None = None
    rank: int = 1


class _Entity(msgspec.Struct):
    # current serialization
    id: str | None = None
    type: str | None = None
    labels: _TermsEn | list[Any] | None = None
    descriptions: _TermsEn | list[Any] | None = None
    sitelinks: _Sitelinks | list[Any] | None = None
    datatype: str | None = None
    claims: msgspec.Raw = msgspec.Raw()  # Raw cannot be Optional; empty means absent
    statements: msgspec.Raw = msgspec.Raw()  # mediainfo uses "statements"
    # legacy serialization
    entity: str | list[Any] | None = None
    label: _LegacyTermsEn | list[Any] | None = None
    description: _LegacyTermsEn | list[Any] | None = None
    links: _LegacyLinks | list[Any] | None = None
    # entity redirect
    redirect: str | None = None


_entity_decoder = msgspec.json.Decoder(_Entity)
_claims_decoder = msgspec.json.Decoder(_Claims)
# claims split by property without decoding the statements: an edit usually touches one
# property, so the others are reused from the previous revision when their bytes match
_claim_groups_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw] | list[Any])
_claim_group_decoder = msgspec.json.Decoder(list[_Claim])
_legacy_claims_decoder = msgspec.json.Decoder(list[_LegacyClaim] | dict[str, Any])


# --------------------------------------------------------------------------- helpers
def _legacy_entity_id(entity: object) -> tuple[str | None, str | None]:
    """``"q42"`` / ``["item", 42]`` / ``"Q42"`` -> (``"Q42"``, kind)."""
    if isinstance(entity, str) and entity:
        qid = entity[0].upper() + entity[1:]
        return qid, _KIND_BY_PREFIX.get(qid[0])
    if isinstance(entity, list) and len(entity) == 2 and isinstance(entity[0], str):
        kind = entity[0]
        prefix = _ENTITY_PREFIX.get(kind)
        if prefix is not None and isinstance(entity[1], int | str):
            return f"{prefix}{entity[1]}", kind
    return None, None


def _entity_value_id(val: Any) -> tuple[str | None, str | None]:
    """An entity-id datavalue (typed or dict) -> (id, entity type)."""
    if isinstance(val, _Val):
        eid, num, etype = val.id, val.numeric_id, val.entity_type
    elif isinstance(val, dict):
        eid, num, etype = val.get("id"), val.get("numeric-id"), val.get("entity-type")
    else:
        return None, None
    if eid is None and num is not None and etype in _ENTITY_PREFIX:
        eid = f"{_ENTITY_PREFIX[etype]}{num}"
    if etype is None and isinstance(eid, str) and eid:
        etype = _KIND_BY_PREFIX.get(eid[0])
    return (eid if isinstance(eid, str) else None), etype


def _qualifier(pid: str, snaktype: str, vtype: str | None, value: Any) -> Qualifier:
    if snaktype != "value":
        return Qualifier(pid, snaktype)
    if vtype == "wikibase-entityid":
        eid, etype = _entity_value_id(value)
        kind = etype or "entity"
        return Qualifier(pid, kind, qid=eid if kind == "item" else None)
    if vtype == "time":
        if isinstance(value, _Val):
            p = value.precision
            return Qualifier(
                pid, "time", time=value.time, precision=p if isinstance(p, int) else None
            )
        if isinstance(value, dict):
            t, p = value.get("time"), value.get("precision")
            return Qualifier(
                pid,
                "time",
                time=t if isinstance(t, str) else None,
                precision=p if isinstance(p, int) else None,
            )
    return Qualifier(pid, vtype or "unknown")


def _main_value_qid(snaktype: str, vtype: str | None, value: Any) -> str | None:
    if snaktype != "value" or vtype != "wikibase-entityid":
        return None
    eid, etype = _entity_value_id(value)
    return eid if etype == "item" else None


def _pid(p: object) -> str:
    return f"P{p}" if isinstance(p, int) else str(p).upper()


# --------------------------------------------------------------------------- statements (typed)
def _statements_current(claims: dict[str, list[_Claim]] | list[Any]) -> tuple[Statement, ...]:
    if isinstance(claims, list):  # PHP's empty map
        if claims:
            raise msgspec.ValidationError("claims as a non-empty list")
        return ()
    out: list[Statement] = []
    for group in claims.values():
        out.extend(_statements_of_group(group))
    return tuple(out)


def _statements_of_group(group: list[_Claim]) -> list[Statement]:
    """One property's statements (a value of the current format's ``claims`` map)."""
    out: list[Statement] = []
    for c in group:
        ms = c.mainsnak
        dv = ms.datavalue
        vtype, value = (dv.type, dv.value) if dv is not None else (None, None)
        quals: tuple[Qualifier, ...] = ()
        if c.qualifiers:
            if isinstance(c.qualifiers, list):
                raise msgspec.ValidationError("qualifiers as non-empty list")
            ql: list[Qualifier] = []
            for qpid, snaks in c.qualifiers.items():
                for s in snaks:
                    qdv = s.datavalue
                    if qdv is None:
                        ql.append(_qualifier(s.property or qpid, s.snaktype, None, None))
                    else:
                        ql.append(
                            _qualifier(s.property or qpid, s.snaktype, qdv.type, qdv.value)
                        )
            quals = tuple(ql)
        out.append(
            Statement(
                c.id,
                ms.property,
                _main_value_qid(ms.snaktype, vtype, value),
                ms.snaktype,
                c.rank,
                quals,
            )
        )
    return out


def _statements_legacy(claims: list[_LegacyClaim] | dict[str, Any]) -> tuple[Statement, ...]:
    if isinstance(claims, dict):
        if claims:
            raise msgspec.ValidationError("legacy claims as a non-empty object")
        return ()
    out: list[Statement] = []
    for c in claims:
        m = c.m
        rank = _RANKS_LEGACY.get(c.rank)
        if rank is None:
            raise msgspec.ValidationError(f"legacy rank {c.rank!r}")
        quals = tuple(_qualifier(_pid(q.pid), q.snaktype, q.vtype, q.value) for q in c.q)
        out.append(
            Statement(
                c.g,
                _pid(m.pid),
                _main_value_qid(m.snaktype, m.vtype, m.value),
                m.snaktype,
                rank,
                quals,
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- generic fallback
def _generic_statements(obj: dict[str, Any], legacy: bool) -> tuple[tuple[Statement, ...], int]:
    """Dict-walking twin of the typed path: tolerant, skips (and counts) broken statements."""
    claims = obj.get("claims", obj.get("statements"))
    out: list[Statement] = []
    skipped = 0
    if not claims:
        return (), 0
    if legacy:
        if not isinstance(claims, list):
            return (), 1
        for c in claims:
            try:
                m = c["m"]
                rank = _RANKS_LEGACY[c.get("rank", 1)]
                quals = []
                for q in c.get("q") or ():
                    quals.append(
                        _qualifier(
                            _pid(q[1]),
                            q[0],
                            q[2] if len(q) > 2 else None,
                            q[3] if len(q) > 3 else None,
                        )
                    )
                out.append(
                    Statement(
                        c.get("g"),
                        _pid(m[1]),
                        _main_value_qid(
                            m[0], m[2] if len(m) > 2 else None, m[3] if len(m) > 3 else None
                        ),
                        m[0],
                        rank,
                        tuple(quals),
                    )
                )
            except (KeyError, IndexError, TypeError, AttributeError):
                skipped += 1
        return tuple(out), skipped
    if not isinstance(claims, dict):
        return (), 1
    for group in claims.values():
        if not isinstance(group, list):
            skipped += 1
            continue
        for c in group:
            try:
                ms = c["mainsnak"]
                dv = ms.get("datavalue") or {}
                quals = []
                q = c.get("qualifiers") or {}
                for qpid, snaks in q.items():
                    for s in snaks:
                        qdv = s.get("datavalue") or {}
                        quals.append(
                            _qualifier(
                                s.get("property") or qpid,
                                s["snaktype"],
                                qdv.get("type"),
                                qdv.get("value"),
                            )
                        )
                out.append(
                    Statement(
                        c.get("id"),
                        ms["property"],
                        _main_value_qid(ms["snaktype"], dv.get("type"), dv.get("value")),
                        ms["snaktype"],
                        c.get("rank", "normal"),
                        tuple(quals),
                    )
                )
            except (KeyError, TypeError, AttributeError):
                skipped += 1
    return tuple(out), skipped


def _generic_term(terms: Any, legacy: bool) -> str | None:
    if not isinstance(terms, dict):
        return None
    en = terms.get("en")
    if legacy:
        return en if isinstance(en, str) else None
    return en.get("value") if isinstance(en, dict) else None


def _parse_generic(data: bytes | str) -> EntityState:
    try:
        obj = _loads(data)
    except _JSONError as exc:
        raise EntityParseError("invalid_json", str(exc)[:200]) from exc
    if not isinstance(obj, dict):
        raise EntityParseError("not_an_object", type(obj).__name__)
    if "redirect" in obj:
        qid, kind = _legacy_entity_id(obj.get("entity"))
        red = obj.get("redirect")
        return EntityState(qid, kind, redirect_to=red if isinstance(red, str) else None)
    legacy = _is_legacy(obj.keys())
    if legacy is None:
        raise EntityParseError("unknown_shape", ",".join(sorted(obj)[:10]))
    statements, skipped = _generic_statements(obj, legacy)
    if legacy:
        qid, kind = _legacy_entity_id(obj.get("entity"))
        links = obj.get("links")
        link = links.get("enwiki") if isinstance(links, dict) else None
        if isinstance(link, dict):
            link = link.get("name")
        return EntityState(
            qid,
            kind,
            enwiki_title=link if isinstance(link, str) else None,
            label_en=_generic_term(obj.get("label"), True),
            description_en=_generic_term(obj.get("description"), True),
            datatype=obj.get("datatype"),
            statements=statements,
            legacy=True,
            skipped_statements=skipped,
        )
    sitelinks = obj.get("sitelinks")
    sl = sitelinks.get("enwiki") if isinstance(sitelinks, dict) else None
    qid = obj.get("id")
    return EntityState(
        qid,
        obj.get("type") or (_KIND_BY_PREFIX.get(qid[0]) if isinstance(qid, str) and qid else None),
        enwiki_title=sl.get("title") if isinstance(sl, dict) else None,
        label_en=_generic_term(obj.get("labels"), False),
        description_en=_generic_term(obj.get("descriptions"), False),
        datatype=obj.get("datatype"),
        statements=statements,
        legacy=False,
        skipped_statements=skipped,
    )


_CURRENT_KEYS = frozenset(("id", "type", "labels", "descriptions", "sitelinks"))
_LEGACY_KEYS = frozenset(("entity", "label", "description", "links"))


def _is_legacy(keys: Any) -> bool | None:
    ks = set(keys)
    if ks & _CURRENT_KEYS:
        return False
    if ks & _LEGACY_KEYS:
        return True
    return None


# --------------------------------------------------------------------------- public parser
class EntityParser:
    """Parses revision texts, reusing what the previous revision decoded: the statements
    when the raw ``claims`` bytes are identical (many edits touch only labels or
    sitelinks), else each property's statements whose raw bytes are identical (an edit
    usually touches one property). Reused :class:`Statement` objects are the same objects,
    so consumers can cache on identity. Call it on a page's revisions in order. One parser
    per worker; not thread-safe."""

    def __init__(self, reuse_statements: bool = True) -> None:
        self.reuse_statements = reuse_statements
        self._last_raw: bytes | None = None
        self._last_legacy = False
        self._last_statements: tuple[Statement, ...] = ()
        # the previous revision's claims by property: pid -> (raw bytes, statements)
        self._last_groups: dict[str, tuple[bytes, list[Statement]]] = {}
        self.reused = 0
        self.fallbacks = 0

    def parse(self, data: bytes | str) -> EntityState:
        """Revision text (JSON bytes or str) -> :class:`EntityState`; raises EntityParseError,
        also for JSON nested deeper than a decoder recurses (one revision whose objects
        nested 100,000 deep failed its whole file with a RecursionError)."""
        try:
            return self._parse(data)
        except RecursionError:
            raise EntityParseError("too_deep", "JSON nested too deep to read") from None

    def _parse(self, data: bytes | str) -> EntityState:
        try:
            ent = _entity_decoder.decode(data)
        except msgspec.ValidationError:
            self.fallbacks += 1
            return _parse_generic(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # a decoded str not UTF-8
            raise EntityParseError("invalid_json", str(exc)[:200]) from exc
        if ent.redirect is not None:
            qid, kind = _legacy_entity_id(ent.entity)
            return EntityState(qid, kind, redirect_to=ent.redirect)
        if (  # same precedence as _is_legacy: any current-format key wins
            ent.id is not None
            or ent.type is not None
            or ent.labels is not None
            or ent.descriptions is not None
            or ent.sitelinks is not None
        ):
            legacy = False
        elif (
            ent.entity is not None
            or ent.label is not None
            or ent.links is not None
            or ent.description is not None
        ):
            legacy = True
        else:
            # Only keys we do not decode (e.g. only "aliases"): let the generic path judge.
            return _parse_generic(data)
        raw = ent.claims if len(ent.claims) else ent.statements
        try:
            statements = self._statements(raw, legacy)
        except (msgspec.ValidationError, UnicodeDecodeError):  # the generic path judges
            self.fallbacks += 1
            return _parse_generic(data)
        if legacy:
            qid, kind = _legacy_entity_id(ent.entity)
            links = ent.links
            link = links.enwiki if isinstance(links, _LegacyLinks) else None
            if isinstance(link, _LegacyLink):
                link = link.name
            label = ent.label.en if isinstance(ent.label, _LegacyTermsEn) else None
            desc = ent.description.en if isinstance(ent.description, _LegacyTermsEn) else None
            return EntityState(
                qid,
                kind,
                enwiki_title=link,
                label_en=label,
                description_en=desc,
                datatype=ent.datatype,
                statements=statements,
                legacy=True,
            )
        sl = ent.sitelinks.enwiki if isinstance(ent.sitelinks, _Sitelinks) else None
        lab = ent.labels.en if isinstance(ent.labels, _TermsEn) else None
        des = ent.descriptions.en if isinstance(ent.descriptions, _TermsEn) else None
        qid = ent.id
        return EntityState(
            qid,
            ent.type or (_KIND_BY_PREFIX.get(qid[0]) if qid else None),
            enwiki_title=sl.title if sl is not None else None,
            label_en=lab.value if lab is not None else None,
            description_en=des.value if des is not None else None,
            datatype=ent.datatype,
            statements=statements,
            legacy=False,
        )

    def _statements(self, raw: msgspec.Raw, legacy: bool) -> tuple[Statement, ...]:
        if not len(raw):
            return ()
        raw_bytes = bytes(raw)
        if self.reuse_statements and raw_bytes == self._last_raw and legacy == self._last_legacy:
            self.reused += 1
            return self._last_statements
        if legacy:
            statements = _statements_legacy(_legacy_claims_decoder.decode(raw_bytes))
        elif self.reuse_statements:
            statements = self._statements_by_group(raw_bytes)
        else:
            statements = _statements_current(_claims_decoder.decode(raw_bytes))
        if self.reuse_statements:
            self._last_raw, self._last_legacy, self._last_statements = raw_bytes, legacy, statements
        return statements

    def _statements_by_group(self, raw: bytes) -> tuple[Statement, ...]:
        """:func:`_statements_current`, decoding only the properties whose bytes changed."""
        groups = _claim_groups_decoder.decode(raw)
        if isinstance(groups, list):  # PHP's empty map
            if groups:
                raise msgspec.ValidationError("claims as a non-empty list")
            self._last_groups = {}
            return ()
        last = self._last_groups
        current: dict[str, tuple[bytes, list[Statement]]] = {}
        out: list[Statement] = []
        for pid, group_raw in groups.items():
            group_bytes = bytes(group_raw)
            hit = last.get(pid)
            if hit is not None and hit[0] == group_bytes:
                statements = hit[1]
            else:
                statements = _statements_of_group(_claim_group_decoder.decode(group_bytes))
            current[pid] = (group_bytes, statements)
            out.extend(statements)
        self._last_groups = current
        return tuple(out)

    # -- texts the C scanner read (Revision.entity) -------------------------------------
    def parse_scan(self, scan: EntityScan) -> EntityState:
        """:meth:`parse` of ``unescape(scan.escaped)``, from what :func:`entity_scanner` read
        (it accepts only current-format texts it reads exactly as msgspec does)."""
        qid = scan.id
        return EntityState(
            qid,
            scan.type or (_KIND_BY_PREFIX.get(qid[0]) if qid else None),
            enwiki_title=scan.enwiki_title,
            label_en=scan.label_en,
            description_en=scan.description_en,
            datatype=scan.datatype,
            statements=scan.statements,
            legacy=False,
        )


class EntityScan(msgspec.Struct, frozen=True, gc=False):
    """What the C entity scanner read from one escaped revision text (``Revision.entity``):
    the fields of a current-format entity and its statements. A claims group byte-identical
    to the previous text's keeps its Statement objects, and unchanged claims keep the very
    tuple: consumers may compare by identity."""

    redirect_to = None  # a class attribute, not a field: redirects are the Python path's

    escaped: bytes  # the text as it stands in the XML (dumps.xml.unescape gives the JSON)
    id: str | None
    type: str | None
    datatype: str | None
    label_en: str | None
    description_en: str | None
    enwiki_title: str | None
    statements: tuple[Statement, ...]


def _scanned_group(pid: str, group: bytes) -> tuple[Statement, ...]:
    """One changed claims group (its JSON) for the scanner; its errors (ValueErrors) make
    the scanner decline the text, which then takes :meth:`EntityParser.parse` (a group
    nested too deep as well: its RecursionError failed the whole file)."""
    try:
        return tuple(_statements_of_group(_claim_group_decoder.decode(group)))
    except RecursionError:
        raise ValueError("claims nested too deep") from None


def entity_scanner() -> Any:
    """A new C scanner for ``Dump(entity_scanner=...)`` (one per stream: it compares each
    text with the previous), or None without the C build."""
    if _EntityScanner is None:
        return None
    # Statement and Qualifier: the common claims groups are read in C too; the others, and
    # any the C side is not sure of, go to _scanned_group
    return _EntityScanner(EntityScan, _scanned_group, Statement, Qualifier)


def parse_entity(data: bytes | str) -> EntityState:
    """Parse one revision text without statement reuse (see :class:`EntityParser`)."""
    return EntityParser(reuse_statements=False).parse(data)


# --------------------------------------------------------------------------- time values
_TIME_RE = re.compile(r"^([+-]?)(\d+)-(\d{1,2})-(\d{1,2})(?:T(\d{1,2}):(\d{1,2}):(\d{1,2}))?Z?$")


def time_to_instant(time: str | None, precision: int | None) -> datetime | None:
    """A Wikibase time value -> the first instant of the period it denotes (UTC).

    ``+2001-00-00T00:00:00Z`` at precision 9 (year) is 2001-01-01T00:00Z; precision 10
    (month) starts the month; zero month/day become 1. Precisions coarser than a year
    (8 decade, 7 century, ...) floor the year to the period (``+2015`` decade -> 2010).
    Returns ``None`` for years outside 1..9999, BCE dates and malformed values. The
    calendar model is ignored (Julian dates are read as proleptic Gregorian).
    """
    if not time:
        return None
    m = _TIME_RE.match(time.strip())
    if m is None or m.group(1) == "-":
        return None
    year, month, day = int(m.group(2)), int(m.group(3)), int(m.group(4))
    hour = int(m.group(5) or 0)
    minute = int(m.group(6) or 0)
    second = int(m.group(7) or 0)
    p = 11 if precision is None else precision
    if p <= 9:
        step = 10 ** (9 - p)
        year = year // step * step
        month = day = 1
    elif p == 10:
        day = 1
    month = month or 1
    day = day or 1
    if p < 12:
        hour = minute = second = 0
    elif p == 12:
        minute = second = 0
    elif p == 13:
        second = 0
    if not 1 <= year <= 9999:
        return None
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
