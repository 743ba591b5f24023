"""Entity JSON -> EntityState on real current and legacy Wikidata JSON (facts read off the files)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from emerge_lib.dumps import wikidata as W
from emerge_lib.dumps.wikidata import (
    EntityParseError,
    EntityParser,
    EntityState,
    Qualifier,
    Statement,
    parse_entity,
    time_to_instant,
)
from emerge_lib.dumps.xml import iter_dump


def _entity_json(path: Path, qid: str | None = None) -> bytes:
    """The entity object of a file that holds either the entity or a wbgetentities wrapper."""
    d = json.loads(path.read_bytes())
    if "entities" in d:
        d = d["entities"][qid] if qid else next(iter(d["entities"].values()))
    return json.dumps(d).encode()


def _wikibase_texts(realdata: Path, rel: str) -> list[tuple[int, bytes]]:
    with iter_dump(realdata / rel) as dump:
        return [
            (r.rev_id, r.text)
            for _, r in dump.revisions()
            if r.model and r.model.startswith("wikibase") and r.text is not None
        ]


def _by_id(state: EntityState) -> dict[str | None, Statement]:
    return {s.statement_id: s for s in state.statements}


@pytest.mark.realdata
def test_q42_current_format(realdata: Path) -> None:
    st = parse_entity(_entity_json(realdata / "qwikidata/wd_Q42.json"))
    assert (st.qid, st.kind, st.legacy, st.redirect_to) == ("Q42", "item", False, None)
    assert st.enwiki_title == "Douglas Adams"
    assert st.label_en == "Douglas Adams" and st.description_en == "author and humorist"
    by_id = _by_id(st)
    p31 = by_id["Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"]
    assert (p31.pid, p31.value_qid, p31.snaktype, p31.rank, p31.qualifiers) == (
        "P31",
        "Q5",
        "value",
        "normal",
        (),
    )
    dep = by_id["Q42$E88EA363-419C-4FEA-BC63-F32669255382"]
    assert (dep.pid, dep.value_qid, dep.rank) == ("P551", "Q159288", "deprecated")
    assert dep.qualifiers == (Qualifier("P582", "time", "+2001-05-11T00:00:00Z", 11, None),)
    pref = by_id["Q42$1d7d0ea9-412f-8b5b-ba8d-405ab9ecf026"]
    assert (pref.pid, pref.value_qid, pref.rank) == ("P735", "Q463035", "preferred")
    assert [q.pid for q in pref.qualifiers] == ["P1545"]
    # PROVENANCE: 138 statements, ranks normal 135 / preferred 2 / deprecated 1
    assert len(st.statements) == 138
    assert Counter(s.rank for s in st.statements) == {
        "normal": 135,
        "preferred": 2,
        "deprecated": 1,
    }
    # a string-valued statement has no item value
    p998 = next(s for s in st.statements if s.pid == "P998")
    assert p998.value_qid is None and p998.snaktype == "value"


@pytest.mark.realdata
def test_q2112_deprecations_and_qualifier_counts(realdata: Path) -> None:
    st = parse_entity(_entity_json(realdata / "wikibase-sdk/Q2112.json"))
    dep = {s.statement_id: s for s in st.statements if s.rank == "deprecated"}
    assert set(dep) == {
        "Q2112$2dd0e8df-425a-6940-e4b0-a46ae4960a48",
        "Q2112$6FE32B17-DE69-4797-9B65-0D1A67757B9D",
    }
    d1 = dep["Q2112$2dd0e8df-425a-6940-e4b0-a46ae4960a48"]
    assert d1.pid == "P31" and d1.value_qid == "Q1964689"
    assert Qualifier("P2241", "item", qid="Q128758") in d1.qualifiers
    assert Qualifier("P3680", "item", qid="Q703899") in d1.qualifiers
    d2 = dep["Q2112$6FE32B17-DE69-4797-9B65-0D1A67757B9D"]
    assert d2.value_qid is None  # P2924 is an external id
    quals = Counter(q.pid for s in st.statements for q in s.qualifiers)
    assert (quals["P580"], quals["P582"], quals["P2241"]) == (18, 6, 2)
    assert len(st.statements) == 186
    assert Counter(s.rank for s in st.statements) == {
        "normal": 178,
        "preferred": 6,
        "deprecated": 2,
    }


@pytest.mark.realdata
def test_q60_and_property(realdata: Path) -> None:
    q60 = parse_entity(_entity_json(realdata / "pywikibot/Q60.wd"))
    quals = Counter(q.pid for s in q60.statements for q in s.qualifiers)
    assert (quals["P580"], quals["P582"]) == (23, 21)
    assert len(q60.statements) == 66
    assert all(
        q.time and q.precision is not None
        for s in q60.statements
        for q in s.qualifiers
        if q.pid == "P580"
    )
    p279 = parse_entity(_entity_json(realdata / "qwikidata/wd_P279.json"))
    assert (p279.qid, p279.kind, p279.datatype, p279.label_en) == (
        "P279",
        "property",
        "wikibase-item",
        "subclass of",
    )
    assert len(p279.statements) == 29 and p279.enwiki_title is None
    empty = parse_entity((realdata / "pywikibot/Q60_only_sitelinks.wd").read_bytes())
    assert empty.statements == ()


@pytest.mark.realdata
def test_legacy_revisions_from_history_xml(realdata: Path) -> None:
    texts = _wikibase_texts(realdata, "wdtk/sample-daily-dump-20140220.xml")
    states = [parse_entity(t) for _, t in texts]
    first = states[0]
    assert (first.qid, first.kind, first.legacy) == ("Q1", "item", True)
    assert first.enwiki_title == "Universe"  # links: {"enwiki": {"name": "Universe", ...}}
    assert first.label_en == "universe"
    # the vandalism revisions change the English label, the revert restores it
    assert [s.label_en for s in states] == [
        "universe",
        "el mundo de teeabithia",
        "el mundo de teeabithia",
        "el mundo de teeabithia",
        "universe",
    ]
    by_id = _by_id(first)
    # {"m":["value",793,"wikibase-entityid",{"entity-type":"item","numeric-id":323}],"q":[],
    #  "g":"Q1$e70e289c-471e-36b8-50ff-25612cf24e70","rank":1,...}
    assert by_id["Q1$e70e289c-471e-36b8-50ff-25612cf24e70"] == Statement(
        "Q1$e70e289c-471e-36b8-50ff-25612cf24e70", "P793", "Q323", "value", "normal", ()
    )
    # rank 0 with an item qualifier P31 -> Q41719
    assert by_id["q1$21f31f42-4f4d-79b0-0380-92039776e884"] == Statement(
        "q1$21f31f42-4f4d-79b0-0380-92039776e884",
        "P361",
        "Q3327819",
        "value",
        "deprecated",
        (Qualifier("P31", "item", qid="Q41719"),),
    )
    # a time main snak (P580, -13.8 billion years) has no item value; qualifiers P459 x2, P805
    p580 = by_id["Q1$789eef0c-4108-cdda-1a63-505cdd324564"]
    assert p580.pid == "P580" and p580.value_qid is None
    assert [q.pid for q in p580.qualifiers] == ["P459", "P459", "P805"]
    assert p580.qualifiers[2].qid == "Q500699"
    string_valued = by_id["Q1$E0551ECA-8ADE-46E0-AAE7-2C4685C91E89"]
    assert (string_valued.pid, string_valued.value_qid) == ("P349", None)
    assert len(first.statements) == 12


@pytest.mark.realdata
def test_legacy_string_entity_and_plain_links(realdata: Path) -> None:
    states = {rid: parse_entity(t) for rid, t in _wikibase_texts(realdata, "sansa-ml/data.xml")}
    q17 = states[58]  # "entity":"q17", "links":{"enwiki":"Japan",...}
    assert (q17.qid, q17.kind, q17.enwiki_title, q17.label_en, q17.legacy) == (
        "Q17",
        "item",
        "Japan",
        "Japan",
        True,
    )
    q15 = states[16]  # "links": [] (PHP empty map)
    assert (q15.qid, q15.enwiki_title, q15.statements) == ("Q15", None, ())
    before, after = states[66319365], states[66322455]  # a claim removal, then "Undid revision"
    assert after.qid == before.qid == "Q18"
    restored = set(after.statements) - set(before.statements)
    # {"m":["value",107,"wikibase-entityid",{"entity-type":"item","numeric-id":618123}],
    #  "g":"q18$7170853D-9A27-4664-957D-1818842930E5","rank":1}
    assert restored == {
        Statement(
            "q18$7170853D-9A27-4664-957D-1818842930E5", "P107", "Q618123", "value", "normal", ()
        )
    }
    assert set(before.statements) <= set(after.statements)
    assert ("P31", "Q5107") in {(s.pid, s.value_qid) for s in before.statements}


@pytest.mark.realdata
def test_dbpedia_minidump_rank_totals(realdata: Path) -> None:
    states = [
        parse_entity(t)
        for _, t in _wikibase_texts(realdata, "dbpedia-minidump-wikidata/wiki.xml.bz2")
    ]
    assert len(states) == 47
    assert Counter(s.kind for s in states) == {"lexeme": 29, "property": 5, "item": 13}
    # PROVENANCE: statement ranks normal 289 / preferred 3 / deprecated 3
    ranks = Counter(st.rank for s in states for st in s.statements)
    assert ranks == {"normal": 289, "preferred": 3, "deprecated": 3}
    props = {s.qid for s in states if s.kind == "property"}
    assert props == {"P7531", "P7532", "P7555", "P7556", "P7558"}
    assert all(s.datatype for s in states if s.kind == "property")


@pytest.mark.realdata
def test_typed_path_equals_generic_walker_on_all_samples(realdata: Path) -> None:
    texts: list[bytes] = []
    for p in sorted(realdata.glob("wikibase-sdk/*.json")) + sorted(realdata.glob("wdtk/wb*.json")):
        d = json.loads(p.read_bytes())
        texts += [
            json.dumps(e).encode() for e in (d["entities"].values() if "entities" in d else [d])
        ]
    for rel in (
        "wdtk/sample-daily-dump-20140220.xml",
        "sansa-ml/data.xml",
        "wdtk/mock-dump-for-testing.xml",
    ):
        texts += [t for _, t in _wikibase_texts(realdata, rel)]
    with gzip.open(realdata / "wdtk/sample-dump-20150815.json.gz") as fh:
        texts += [line.strip().rstrip(b",") for line in fh if line.strip().startswith(b"{")]
    assert len(texts) > 130
    parser = EntityParser(reuse_statements=False)
    for t in texts:
        assert parser.parse(t) == W._parse_generic(t)
    assert parser.fallbacks == 0  # the typed schema covers every real sample


def test_redirect_and_empty_php_maps() -> None:
    red = parse_entity(b'{"entity":"Q32063953","redirect":"Q1040"}')
    assert (red.qid, red.kind, red.redirect_to, red.statements) == (
        "Q32063953",
        "item",
        "Q1040",
        (),
    )
    empty = parse_entity(
        b'{"type":"item","id":"Q5","labels":[],"descriptions":[],"aliases":[],"claims":[],"sitelinks":[]}'
    )
    assert (empty.qid, empty.label_en, empty.enwiki_title, empty.statements, empty.legacy) == (
        "Q5",
        None,
        None,
        (),
        False,
    )
    legacy_empty = parse_entity(
        b'{"label":[],"description":[],"aliases":[],"links":[],"entity":"q7","claims":[]}'
    )
    assert (legacy_empty.qid, legacy_empty.legacy, legacy_empty.statements) == ("Q7", True, ())
    prop = parse_entity(
        b'{"entity":["property",31],"label":{"en":"instance of"},"datatype":"wikibase-item"}'
    )
    assert (prop.qid, prop.kind, prop.label_en, prop.datatype) == (
        "P31",
        "property",
        "instance of",
        "wikibase-item",
    )


def test_somevalue_novalue_and_old_entity_values() -> None:
    doc = {
        "id": "Q1",
        "type": "item",
        "claims": {
            "P26": [
                {
                    "mainsnak": {"snaktype": "somevalue", "property": "P26"},
                    "rank": "normal",
                    "id": "Q1$a",
                }
            ],
            "P40": [
                {
                    "mainsnak": {
                        "snaktype": "value",
                        "property": "P40",
                        # 2014-era current JSON: numeric-id without "id"
                        "datavalue": {
                            "value": {"entity-type": "item", "numeric-id": 42},
                            "type": "wikibase-entityid",
                        },
                    },
                    "rank": "preferred",
                    "id": "Q1$b",
                    "qualifiers": {"P582": [{"snaktype": "novalue", "property": "P582"}]},
                }
            ],
        },
    }
    st = parse_entity(json.dumps(doc).encode())
    assert st.statements == (
        Statement("Q1$a", "P26", None, "somevalue", "normal", ()),
        Statement("Q1$b", "P40", "Q42", "value", "preferred", (Qualifier("P582", "novalue"),)),
    )
    legacy = parse_entity(
        b'{"entity":"q1","claims":[{"m":["somevalue",26],"q":[["novalue",582]],"g":"q1$c","rank":2}]}'
    )
    assert legacy.statements == (
        Statement("q1$c", "P26", None, "somevalue", "preferred", (Qualifier("P582", "novalue"),)),
    )


def test_unexpected_value_shape_falls_back_to_generic() -> None:
    doc = (
        b'{"id":"Q1","type":"item","claims":{"P31":[{"mainsnak":{"snaktype":"value","property":"P31",'
        b'"datavalue":{"value":true,"type":"boolean"}},"rank":"normal","id":"Q1$x"}]}}'
    )
    parser = EntityParser()
    st = parser.parse(doc)
    assert parser.fallbacks == 1
    assert st.statements == (Statement("Q1$x", "P31", None, "value", "normal", ()),)


def test_invalid_json_reasons() -> None:
    for data, reason in (
        (b'{"id": "Q1", "claims": {', "invalid_json"),
        (b"", "invalid_json"),
        (b"[1, 2]", "not_an_object"),
        (b'{"foo": 1}', "unknown_shape"),
        # not UTF-8 in a string msgspec decodes (a label; a claim): a reject, not a crash
        (b'{"id": "Q1", "labels": {"en": {"value": "\xff"}}}', "invalid_json"),
        (b'{"id": "Q1", "claims": {"P1": [{"mainsnak": {"snaktype": "\xff", '
         b'"property": "P1"}}]}}', "invalid_json"),
        (b'{"id": "Q1", "claims": {"\xff": []}}', "invalid_json"),
    ):
        with pytest.raises(EntityParseError) as info:
            parse_entity(data)
        assert info.value.reason == reason
        with pytest.raises(EntityParseError):  # with reuse too
            EntityParser().parse(data)


@pytest.mark.realdata
def test_statement_reuse_when_claims_bytes_are_identical(realdata: Path) -> None:
    texts = [t for _, t in _wikibase_texts(realdata, "wdtk/sample-daily-dump-20140220.xml")]
    claims = [json.dumps(json.loads(t)["claims"], sort_keys=True) for t in texts]
    parser = EntityParser()
    states = [parser.parse(t) for t in texts]
    plain = [parse_entity(t) for t in texts]
    assert states == plain
    identical_neighbours = sum(a == b for a, b in zip(claims, claims[1:], strict=False))
    assert identical_neighbours >= 1
    assert parser.reused == identical_neighbours
    assert states[1].statements is states[0].statements or claims[0] != claims[1]


def _item(claims: object, label: str = "x") -> bytes:
    return json.dumps({"type": "item", "id": "Q1", "labels": {"en": {"language": "en",
                       "value": label}}, "claims": claims}).encode()


def _stmt(pid: str, qid: str, sid: str, rank: str = "normal") -> dict:
    return {"mainsnak": {"snaktype": "value", "property": pid, "datavalue": {
        "value": {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid},
        "type": "wikibase-entityid"}}, "type": "statement", "id": sid, "rank": rank}


def test_unchanged_properties_are_reused_across_revisions() -> None:
    p31 = [_stmt("P31", "Q5", "Q1$a")]
    p17 = [_stmt("P17", "Q30", "Q1$b"), _stmt("P17", "Q31", "Q1$c")]
    p26 = [_stmt("P26", "Q7", "Q1$d")]
    revisions = [
        _item({"P31": p31, "P17": p17, "P26": p26}),
        _item({"P31": p31, "P17": [*p17[:1], _stmt("P17", "Q32", "Q1$c")], "P26": p26}),
        _item({"P31": p31, "P17": [*p17[:1], _stmt("P17", "Q32", "Q1$c")], "P26": p26}, "y"),
        _item({"P31": p31, "P17": p17}),  # P26 removed, P17 reverted
        _item({"P26": p26, "P31": p31}),  # reordered
        _item([]),  # PHP's empty map
        _item({"P31": [_stmt("P31", "Q5", "Q1$a", "preferred")]}),
    ]
    parser = EntityParser()
    states = [parser.parse(t) for t in revisions]
    assert states == [parse_entity(t) for t in revisions]  # reuse never changes a result
    by_sid = [{st.statement_id: st for st in s.statements} for s in states]
    assert by_sid[1]["Q1$a"] is by_sid[0]["Q1$a"]  # P31 untouched: the same objects
    assert by_sid[1]["Q1$d"] is by_sid[0]["Q1$d"]
    assert by_sid[1]["Q1$c"] is not by_sid[0]["Q1$c"] and by_sid[1]["Q1$c"].value_qid == "Q32"
    assert states[2].statements is states[1].statements  # only the label changed
    assert by_sid[4]["Q1$d"] == by_sid[0]["Q1$d"]  # back after a revision without it
    assert [st.statement_id for st in states[4].statements] == ["Q1$d", "Q1$a"]
    assert states[5].statements == ()
    assert by_sid[6]["Q1$a"].rank == "preferred"
    odd = parser.parse(_item([1]))  # a non-empty list is no claims map: generic path
    assert odd.statements == () and odd.skipped_statements == 1 and parser.fallbacks == 1


def test_time_to_instant() -> None:
    utc = UTC
    assert time_to_instant("+2001-00-00T00:00:00Z", 9) == datetime(2001, 1, 1, tzinfo=utc)
    assert time_to_instant("+2001-05-00T00:00:00Z", 10) == datetime(2001, 5, 1, tzinfo=utc)
    assert time_to_instant("+2001-05-17T00:00:00Z", 11) == datetime(2001, 5, 17, tzinfo=utc)
    assert time_to_instant("+2001-05-17T13:14:15Z", 11) == datetime(2001, 5, 17, tzinfo=utc)
    assert time_to_instant("+2001-05-17T13:14:15Z", 14) == datetime(
        2001, 5, 17, 13, 14, 15, tzinfo=utc
    )
    assert time_to_instant("+2001-05-17T13:14:15Z", 12) == datetime(2001, 5, 17, 13, tzinfo=utc)
    assert time_to_instant("+2015-00-00T00:00:00Z", 8) == datetime(2010, 1, 1, tzinfo=utc)  # 2010s
    assert time_to_instant("+00000002001-01-01T00:00:00Z", 11) == datetime(
        2001, 1, 1, tzinfo=utc
    )  # legacy
    assert time_to_instant("+2001-05-11T00:00:00Z", None) == datetime(2001, 5, 11, tzinfo=utc)
    assert time_to_instant("-0500-00-00T00:00:00Z", 9) is None  # BCE
    assert time_to_instant("-13800000000-00-00T00:00:00Z", 3) is None
    assert time_to_instant("+2001-02-30T00:00:00Z", 11) is None  # no such day
    assert time_to_instant("yesterday", 11) is None
    assert time_to_instant(None, 11) is None
