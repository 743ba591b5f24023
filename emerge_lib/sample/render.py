"""Rendering: Wikibase internal JSON (current and legacy) and MediaWiki export-0.11 XML.

Why string templates: the generator must write tens of MB/s on one core, so JSON is
assembled from pre-rendered fragments (a language's label entry is rendered once per
entity, not once per revision) and XML from f-strings; only the revision text is
escaped and hashed per revision. The output imitates what Wikimedia writes: PHP
``json_encode`` style (``\\/`` and ``\\uXXXX`` escapes, empty maps as ``[]``), text
escaped with ``&quot;``, base-36 sha1s padded to 31 characters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from emerge_lib.sample.model import ItemState, Qualifier, Statement

GREGORIAN = "http:\\/\\/www.wikidata.org\\/entity\\/Q1985727"
EARTH = "http:\\/\\/www.wikidata.org\\/entity\\/Q2"
XML_NS = "http://www.mediawiki.org/xml/export-0.11/"

QidOf = Callable[[str], str]


def jstr(text: str) -> str:
    """A JSON string literal the way PHP's json_encode writes it."""
    return json.dumps(text).replace("/", "\\/")


def xml_escape(text: str) -> str:
    """Escape text content the way MediaWiki's XML dumper does (``"`` as ``&quot;``)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    return text.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def xml_attr(text: str) -> str:
    return xml_escape(text)


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def sha1_base36(data: bytes) -> str:
    """MediaWiki's revision sha1: base 36, lower case, zero-padded to 31 characters."""
    n = int.from_bytes(hashlib.sha1(data).digest(), "big")
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(_B36[r])
    return "".join(reversed(out)).rjust(31, "0")


def fake_hash(*parts: object) -> str:
    """A stable 40-hex snak/reference hash (real ones are sha1s of the snak too)."""
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()


def statement_guid(subject_qid: str, *parts: object) -> str:
    h = hashlib.md5("|".join(map(str, parts)).encode()).hexdigest().upper()
    return f"{subject_qid}${h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def numeric(qid: str) -> int:
    return int(qid[1:])


# --------------------------------------------------------------------------- time values


def wikibase_time(year: int, month: int = 0, day: int = 0) -> str:
    """Current serialization: ``+2024-01-00T00:00:00Z`` (00 = unknown at that precision)."""
    return f"+{year:04d}-{month:02d}-{day:02d}T00:00:00Z"


def legacy_time(value: str) -> str:
    """Legacy serialization: 11-digit year, ``01`` for unknown month/day."""
    sign, rest = value[0], value[1:]
    year, month, tail = rest.split("-", 2)
    day = tail[:2]
    month = month if month != "00" else "01"
    day = day if day != "00" else "01"
    return f"{sign}{int(year):011d}-{month}-{day}{tail[2:]}"


def time_datavalue(value: str, precision: int) -> str:
    return (
        f'{{"value":{{"time":"{value}","timezone":0,"before":0,"after":0,'
        f'"precision":{precision},"calendarmodel":"{GREGORIAN}"}},"type":"time"}}'
    )


def item_datavalue(qid: str) -> str:
    return (
        f'{{"value":{{"entity-type":"item","numeric-id":{numeric(qid)},"id":"{qid}"}},'
        f'"type":"wikibase-entityid"}}'
    )


def snak(pid: str, datavalue: str) -> str:
    return (
        f'{{"snaktype":"value","property":"{pid}","hash":"{fake_hash(pid, datavalue)}",'
        f'"datavalue":{datavalue}}}'
    )


def literal_datavalue(kind: str, value: str) -> str:
    if kind == "time":
        text, _, prec = value.partition("/")
        return time_datavalue(text, int(prec or 11))
    if kind == "quantity":
        return f'{{"value":{{"amount":"+{value}","unit":"1"}},"type":"quantity"}}'
    if kind == "globe":
        lat, lon = value.split(",")
        return (
            f'{{"value":{{"latitude":{lat},"longitude":{lon},"altitude":null,'
            f'"precision":0.0001,"globe":"{EARTH}"}},"type":"globecoordinate"}}'
        )
    if kind == "monolingualtext":
        return f'{{"value":{{"text":{jstr(value)},"language":"en"}},"type":"monolingualtext"}}'
    return f'{{"value":{jstr(value)},"type":"string"}}'


# --------------------------------------------------------------------------- current JSON


def label_entry(lang: str, value: str) -> str:
    return f'"{lang}":{{"language":"{lang}","value":{jstr(value)}}}'


def alias_entry(lang: str, values: tuple[str, ...]) -> str:
    inner = ",".join(f'{{"language":"{lang}","value":{jstr(v)}}}' for v in values)
    return f'"{lang}":[{inner}]'


def sitelink_entry(site: str, title: str) -> str:
    return f'"{site}":{{"site":"{site}","title":{jstr(title)},"badges":[]}}'


def block(entries: list[str]) -> str:
    """A JSON object from rendered entries; PHP writes an empty one as ``[]``."""
    return "{" + ",".join(entries) + "}" if entries else "[]"


def qualifier_snak(q: Qualifier) -> str:
    return snak(q.pid, time_datavalue(q.time, q.precision))


def statement_json(subject: str, st: Statement, qid_of: QidOf, ref_qid: str) -> str:
    """One statement in the current internal serialization."""
    value = item_datavalue(qid_of(st.target)) if st.kind == "item" else literal_datavalue(
        st.kind, st.target
    )
    parts = [f'{{"mainsnak":{snak(st.pid, value)},"type":"statement"']
    quals: dict[str, list[str]] = {}
    for q in st.qualifiers:
        quals.setdefault(q.pid, []).append(qualifier_snak(q))
    if st.reason_deprecated:
        quals.setdefault("P2241", []).append(
            snak("P2241", item_datavalue(qid_of(st.reason_deprecated)))
        )
    if quals:
        body = ",".join(f'"{p}":[{",".join(v)}]' for p, v in quals.items())
        order = ",".join(f'"{p}"' for p in quals)
        parts.append(f',"qualifiers":{{{body}}},"qualifiers-order":[{order}]')
    guid = st.guid or statement_guid(subject, st.pid, st.target)
    parts.append(f',"id":"{guid}","rank":"{st.rank}"')
    if st.references:
        refs = []
        for n in range(st.references):
            s1 = snak("P248", item_datavalue(ref_qid))
            s2 = snak("P813", time_datavalue(wikibase_time(2023, 5 + n % 6, 1 + n), 11))
            refs.append(
                f'{{"hash":"{fake_hash(subject, st.pid, n)}","snaks":{{"P248":[{s1}],'
                f'"P813":[{s2}]}},"snaks-order":["P248","P813"]}}'
            )
        parts.append(f',"references":[{",".join(refs)}]')
    parts.append("}")
    return "".join(parts)


def claims_block(rendered: list[tuple[str, str]]) -> str:
    """(pid, statement json) pairs -> the ``claims`` map grouped by property, in order."""
    if not rendered:
        return "[]"
    groups: dict[str, list[str]] = {}
    for pid, text in rendered:
        groups.setdefault(pid, []).append(text)
    return "{" + ",".join(f'"{p}":[{",".join(v)}]' for p, v in groups.items()) + "}"


def render_current(qid: str, state: ItemState, qid_of: QidOf, ref_qid: str) -> str:
    """The current internal JSON of an item or property state (or an entity redirect)."""
    if state.redirect is not None:
        return f'{{"entity":"{qid}","redirect":"{qid_of(state.redirect)}"}}'
    labels = block([label_entry(lang, v) for lang, v in state.labels])
    descs = block([label_entry(lang, v) for lang, v in state.descriptions])
    aliases = block([alias_entry(lang, v) for lang, v in state.aliases])
    claims = claims_block([(s.pid, statement_json(qid, s, qid_of, ref_qid)) for s in state.statements])
    if state.datatype is not None:
        return (
            f'{{"type":"property","datatype":"{state.datatype}","id":"{qid}","labels":{labels},'
            f'"descriptions":{descs},"aliases":{aliases},"claims":{claims}}}'
        )
    sitelinks = block([sitelink_entry(s, t) for s, t in state.sitelinks])
    return (
        f'{{"type":"item","id":"{qid}","labels":{labels},"descriptions":{descs},'
        f'"aliases":{aliases},"claims":{claims},"sitelinks":{sitelinks}}}'
    )


# --------------------------------------------------------------------------- legacy JSON

_LEGACY_RANK = {"deprecated": 0, "normal": 1, "preferred": 2}


def legacy_snak(pid: str, kind: str, value: str, qid_of: QidOf) -> str:
    num = int(pid[1:])
    if kind == "item":
        return f'["value",{num},"wikibase-entityid",{{"entity-type":"item","numeric-id":{numeric(value)}}}]'
    if kind == "time":
        text, _, prec = value.partition("/")
        return (
            f'["value",{num},"time",{{"time":"{legacy_time(text)}","timezone":0,"before":0,'
            f'"after":0,"precision":{int(prec or 11)},"calendarmodel":"{GREGORIAN}"}}]'
        )
    return f'["value",{num},"string",{jstr(value)}]'


def legacy_statement(qid: str, st: Statement, qid_of: QidOf, ref_qid: str) -> str:
    main = legacy_snak(
        st.pid, st.kind, qid_of(st.target) if st.kind == "item" else st.target, qid_of
    )
    quals = [
        legacy_snak(q.pid, "time", f"{q.time}/{q.precision}", qid_of) for q in st.qualifiers
    ]
    refs = (
        f'[[{legacy_snak("P143", "item", ref_qid, qid_of)}]]' if st.references else "[]"
    )
    guid = st.guid or statement_guid(qid.lower(), st.pid, st.target)
    return (
        f'{{"m":{main},"q":[{",".join(quals)}],"g":"{guid}",'
        f'"rank":{_LEGACY_RANK[st.rank]},"refs":{refs}}}'
    )


def render_legacy(
    qid: str, state: ItemState, qid_of: QidOf, ref_qid: str, *, badges: bool = True
) -> str:
    """The pre-2014 serialization (``label``/``description``/``links``, claims as a list).

    ``badges=False`` writes links as plain titles (the 2012-13 form).
    """
    label = block([f'"{lang}":{jstr(v)}' for lang, v in state.labels])
    desc = block([f'"{lang}":{jstr(v)}' for lang, v in state.descriptions])
    aliases = block(
        [f'"{lang}":[{",".join(jstr(a) for a in vs)}]' for lang, vs in state.aliases]
    )
    entity = qid.lower()
    if state.datatype is not None:
        return (
            f'{{"label":{label},"description":{desc},"aliases":{aliases},'
            f'"entity":"{entity}","datatype":"{state.datatype}"}}'
        )
    if badges:
        links = block([f'"{s}":{{"name":{jstr(t)},"badges":[]}}' for s, t in state.sitelinks])
    else:
        links = block([f'"{s}":{jstr(t)}' for s, t in state.sitelinks])
    out = (
        f'{{"label":{label},"description":{desc},"aliases":{aliases},"links":{links},'
        f'"entity":"{entity}"'
    )
    if state.statements:
        claims = ",".join(legacy_statement(qid, s, qid_of, ref_qid) for s in state.statements)
        out += f',"claims":[{claims}]'
    return out + "}"


# --------------------------------------------------------------------------- XML


def siteinfo(dbname: str) -> str:
    """The ``<mediawiki>`` opening and ``<siteinfo>`` of a real-looking dump."""
    if dbname == "wikidatawiki":
        sitename, base = "Wikidata", "https://www.wikidata.org/wiki/Wikidata:Main_Page"
        names = WIKIDATA_NAMESPACES
    else:
        sitename, base = "Wikipedia", "https://en.wikipedia.org/wiki/Main_Page"
        names = ENWIKI_NAMESPACES
    ns_lines = []
    for key, name in names:
        if name:
            ns_lines.append(f'      <namespace key="{key}" case="first-letter">{name}</namespace>')
        else:
            ns_lines.append(f'      <namespace key="{key}" case="first-letter" />')
    ns_text = "\n".join(ns_lines)
    return (
        f'<mediawiki xmlns="{XML_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{XML_NS} http://www.mediawiki.org/xml/export-0.11.xsd" '
        f'version="0.11" xml:lang="en">\n'
        f"  <siteinfo>\n"
        f"    <sitename>{sitename}</sitename>\n"
        f"    <dbname>{dbname}</dbname>\n"
        f"    <base>{base}</base>\n"
        f"    <generator>MediaWiki 1.42.0-wmf.12</generator>\n"
        f"    <case>first-letter</case>\n"
        f"    <namespaces>\n{ns_text}\n    </namespaces>\n"
        f"  </siteinfo>\n"
    )


FOOTER = "</mediawiki>\n"

_COMMON_NS = [
    (-2, "Media"), (-1, "Special"), (0, ""), (1, "Talk"), (2, "User"), (3, "User talk"),
]
WIKIDATA_NAMESPACES = _COMMON_NS + [
    (4, "Wikidata"), (5, "Wikidata talk"), (6, "File"), (7, "File talk"), (8, "MediaWiki"),
    (9, "MediaWiki talk"), (10, "Template"), (11, "Template talk"), (12, "Help"),
    (13, "Help talk"), (14, "Category"), (15, "Category talk"), (120, "Property"),
    (121, "Property talk"), (122, "Query"), (123, "Query talk"), (146, "Lexeme"),
    (147, "Lexeme talk"), (640, "EntitySchema"), (641, "EntitySchema talk"), (828, "Module"),
    (829, "Module talk"), (1198, "Translations"), (1199, "Translations talk"),
    (2300, "Gadget"), (2301, "Gadget talk"), (2302, "Gadget definition"),
    (2303, "Gadget definition talk"), (2600, "Topic"),
]
ENWIKI_NAMESPACES = _COMMON_NS + [
    (4, "Wikipedia"), (5, "Wikipedia talk"), (6, "File"), (7, "File talk"), (8, "MediaWiki"),
    (9, "MediaWiki talk"), (10, "Template"), (11, "Template talk"), (12, "Help"),
    (13, "Help talk"), (14, "Category"), (15, "Category talk"), (100, "Portal"),
    (101, "Portal talk"), (118, "Draft"), (119, "Draft talk"), (710, "TimedText"),
    (711, "TimedText talk"), (828, "Module"), (829, "Module talk"), (2300, "Gadget"),
    (2301, "Gadget talk"), (2302, "Gadget definition"), (2303, "Gadget definition talk"),
]


def page_open(title: str, ns: int, page_id: int, redirect: str | None = None) -> str:
    red = f'    <redirect title="{xml_attr(redirect)}" />\n' if redirect is not None else ""
    return (
        f"  <page>\n    <title>{xml_escape(title)}</title>\n    <ns>{ns}</ns>\n"
        f"    <id>{page_id}</id>\n{red}"
    )


PAGE_CLOSE = "  </page>\n"


def user_id(name: str) -> int:
    """A stable user id for a user name."""
    return 1000 + int(hashlib.md5(name.encode()).hexdigest()[:7], 16) % 40_000_000


def contributor(user: str | None, ip: str, hidden: bool) -> str:
    if hidden:
        return '      <contributor deleted="deleted" />\n'
    if user is None:
        return f"      <contributor>\n        <ip>{ip}</ip>\n      </contributor>\n"
    return (
        f"      <contributor>\n        <username>{xml_escape(user)}</username>\n"
        f"        <id>{user_id(user)}</id>\n      </contributor>\n"
    )


def revision(
    rev_id: int,
    parent_id: int | None,
    timestamp: str,
    contributor_xml: str,
    comment: str | None,
    model: str,
    fmt: str,
    text: str | None,
    *,
    minor: bool = False,
) -> str:
    """One ``<revision>``; ``text`` None writes a revision-deleted text, ``comment`` None a
    suppressed comment, ``""`` no comment at all."""
    parent = f"      <parentid>{parent_id}</parentid>\n" if parent_id else ""
    minor_xml = "      <minor />\n" if minor else ""
    if comment is None:
        comment_xml = '      <comment deleted="deleted" />\n'
    elif comment:
        comment_xml = f"      <comment>{xml_escape(comment)}</comment>\n"
    else:
        comment_xml = ""
    if text is None:
        text_xml = '      <text bytes="-1" deleted="deleted" />\n      <sha1 />\n'
    else:
        data = text.encode("utf-8")
        sha = sha1_base36(data)
        text_xml = (
            f'      <text bytes="{len(data)}" sha1="{sha}" xml:space="preserve">'
            f"{xml_escape(text)}</text>\n      <sha1>{sha}</sha1>\n"
        )
    return (
        f"    <revision>\n      <id>{rev_id}</id>\n{parent}"
        f"      <timestamp>{timestamp}</timestamp>\n{contributor_xml}{minor_xml}{comment_xml}"
        f"      <origin>{rev_id}</origin>\n      <model>{model}</model>\n"
        f"      <format>{fmt}</format>\n{text_xml}    </revision>\n"
    )
