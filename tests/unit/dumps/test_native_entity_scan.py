"""The C entity scanner (``emerge_lib.dumps._native.EntityScanner``) against its specification,
``EntityParser.parse(unescape(escaped))``.

The scanner reads entity JSON straight from the XML-escaped revision text and takes over
every member (and claims group) byte-identical to the previous text's. Whatever it
accepts must give exactly the state the Python parser gives on the unescaped text; what
it is not sure of it declines (None). Checked on every real sample, on generated dumps,
on random mutations (single texts and chains of texts, so the take-over paths run on
near-identical neighbours) and on the field shapes msgspec treats specially.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import random
import tempfile
from pathlib import Path

import pytest
from ingestkit import same_rows_both_ways

from emerge_lib.dumps import wikidata
from emerge_lib.dumps import xml as xmlstream
from emerge_lib.dumps.wikidata import EntityParseError, EntityParser
from emerge_lib.dumps.xml import Dump, iter_dump, unescape

native = pytest.mark.skipif(not xmlstream.NATIVE, reason="C extension not built")
pytestmark = native


def escape(text: bytes, raw_quotes: bool = False) -> bytes:
    """XML text escaping as MediaWiki writes it (or with quotes left raw, also valid XML)."""
    out = text.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;")
    return out if raw_quotes else out.replace(b'"', b"&quot;")


def expected(text: bytes):
    try:
        return EntityParser(reuse_statements=False).parse(text)
    except EntityParseError as exc:
        return ("reject", exc.reason)


def check_chain(texts: list[bytes], raw_quotes: bool = False) -> list[bool]:
    """Scan texts in order with one scanner; every accepted one must equal the spec.
    Returns which were accepted."""
    scanner = wikidata.entity_scanner()
    parser = EntityParser()
    accepted = []
    for text in texts:
        scan = scanner.scan(escape(text, raw_quotes))
        accepted.append(scan is not None)
        if scan is None:
            continue
        assert unescape(scan.escaped) == text
        want = expected(text)
        assert not isinstance(want, tuple), (text[:200], want)
        assert parser.parse_scan(scan) == want, text[:300]
    return accepted


# ----------------------------------------------------------------------------- corpora
def _api_entities(path: Path) -> list[dict]:
    d = json.loads(path.read_bytes())
    return list(d["entities"].values()) if "entities" in d else [d]


def real_entity_texts(realdata: Path) -> list[bytes]:
    docs: list[dict] = []
    for pattern in ("wikibase-sdk/*.json", "wdtk/wb*.json", "wdtk/item.json",
                    "wdtk/property.json", "qwikidata/*.json", "pywikibot/*.wd"):
        for p in sorted(realdata.glob(pattern)):
            docs += _api_entities(p)
    with gzip.open(realdata / "wdtk/sample-dump-20150815.json.gz") as fh:
        docs += [json.loads(line.strip().rstrip(b","))
                 for line in fh if line.strip().startswith(b"{")]
    texts = [json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode() for d in docs]
    texts += [json.dumps(d).encode() for d in docs]  # spaces, \\u escapes, surrogate pairs
    for rel in ("wdtk/sample-daily-dump-20140220.xml", "sansa-ml/data.xml",
                "wdtk/mock-dump-for-testing.xml"):
        with iter_dump(realdata / rel) as dump:
            texts += [r.text.encode() for _, r in dump.revisions()
                      if r.model and r.model.startswith("wikibase") and r.text]
    return texts


@functools.cache
def generated_texts() -> list[list[bytes]]:
    """Revision chains of a generated world's pages (the shape of real item histories)."""
    from emerge_lib.sample import SampleSpec, generate_world

    with tempfile.TemporaryDirectory() as tmp:
        generate_world(Path(tmp), SampleSpec(seed=3, items=60, articles=5, revisions=6))
        chains = []
        for f in sorted(Path(tmp).glob("mirror/wikidatawiki/*/*pages-meta-history*")):
            with Dump.from_file(f, text_bytes=True) as dump:
                chains += [[r.text for r in page if r.text] for page in dump]
    return chains


# ----------------------------------------------------------------------------- mutations
_JSON_ATOMS = [b'"', b"\\", b"\\u", b"\\ud800", b"\\u00e9", b"\\n", b"\\q", b"{", b"}", b"[",
               b"]", b",", b":", b"\r", b"\t", b" ", b"\n", b"null", b"true", b"01", b"-",
               b"1e5", b"1.", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"\x00", b"\x7f", b"en",
               b'"en"', b'"value"', b'"claims"', b'"labels"', b"5"]
_XML_ATOMS = [b"&#34;", b"&amp;quot;", b'"', b"&unknown;", b"\r", b"&#x22;", b"&", b"&apos;",
              b"&gt;", b"&lt;"]


def mutate(text: bytes, rng: random.Random) -> bytes:
    out = bytearray(text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out) + 1)
        op = rng.random()
        if op < 0.4:
            out[i:i] = rng.choice(_JSON_ATOMS)
        elif op < 0.7 and len(out) > 1:
            del out[i:i + rng.randint(1, 4)]
        elif len(out) > 1:
            out[i:i + 1] = rng.choice(_JSON_ATOMS)
    return bytes(out)


def shape_variants(doc: dict) -> list[bytes]:
    """The field shapes msgspec reads differently: lists, nulls, wrong types, duplicates,
    legacy keys, escaped keys."""
    def dump(d: dict) -> bytes:
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()

    base = dump(doc)
    out = []
    for field in ("labels", "descriptions", "sitelinks", "claims", "id", "type", "datatype",
                  "aliases"):
        for value in ([], [1], None, 5, "x", {}, {"en": None}, {"en": []},
                      {"en": {"value": 5}}, {"en": {"value": None}}, {"enwiki": {"title": 7}},
                      {"enwiki": None}, {"P1": []}, {"P1": [1]}, {"P1": {}}, {"P1": None}):
            out.append(dump({**doc, field: value}))
    for key in ("entity", "redirect", "label", "links", "description", "statements"):
        out.append(dump({**doc, key: "Q1"}))
    out.append(base[:-1] + b',"labels":{"en":{"value":"dup"}}}')  # a duplicate field
    out.append(base.replace(b'"en":{', b'"en":{"value":"a","value":"b",', 1))
    out.append(base.replace(b'"labels":{', b'"labels":{"en":{"value":"first"},', 1))
    out.append(base.replace(b'"claims":{', b'"claims":{"P31":[],', 1))
    out.append(base.replace(b'"labels"', b'"lab\\u0065ls"', 1))
    out.append(base.replace(b'"id"', b'"\\u0069d"', 1))
    out.append(base.replace(b'"P', b'"\\u0050', 1))
    out.append(b"  " + base + b" \n")
    out.append(base + b"x")
    out.append(b"[" + base + b"]")
    out.append(base.replace(b'"value":"', b'"value":"\\"\\/\\n\\u00e9&<>', 1))
    out.append(base.replace(b'"value":"', b'"value":"\xff', 1))  # not UTF-8: msgspec raises
    out.append(base.replace(b'"title":"', b'"title":"\\ud83d\\ude00', 1))
    return out


# ----------------------------------------------------------------------------- tests
@pytest.mark.realdata
def test_scanner_equals_parser_on_real_samples(realdata: Path) -> None:
    texts = real_entity_texts(realdata)
    assert len(texts) > 250
    assert sum(check_chain(texts)) > 150  # the current-format samples are read
    check_chain(texts, raw_quotes=True)
    for text in texts:  # each alone: no previous text to take members from
        check_chain([text])


def test_scanner_equals_parser_on_generated_chains() -> None:
    chains = generated_texts()
    assert sum(map(len, chains)) > 200
    scanner = wikidata.entity_scanner()
    parser = EntityParser()
    for chain in chains:
        for text in chain:
            scan = scanner.scan(escape(text))
            if scan is None:  # only legacy texts and redirects are left to Python
                want = expected(text)
                assert want.legacy or want.redirect_to, text[:200]
                continue
            assert parser.parse_scan(scan) == expected(text)
    assert scanner.reused > scanner.scanned  # neighbours share most members


def test_scanner_equals_parser_on_mutations() -> None:
    rng = random.Random(11)
    chains = generated_texts()
    mutants_read = 0
    for round_ in range(3000):
        chain = rng.choice(chains)
        base = rng.choice(chain)
        texts = [base, mutate(base, rng), base, mutate(mutate(base, rng), rng)]
        accepted = check_chain(texts, raw_quotes=round_ % 5 == 0)
        mutants_read += accepted[1] + accepted[3]
    assert mutants_read > 300  # many mutations keep the JSON valid: those are compared


def test_scanner_equals_parser_on_field_shapes() -> None:
    doc = json.loads(next(t for chain in generated_texts() for t in chain
                          if b'"labels"' in t and b'"claims":{' in t))
    variants = shape_variants(doc)
    for v in variants:
        check_chain([v])
        check_chain([json.dumps(doc, separators=(",", ":")).encode(), v])  # after a neighbour


def test_declines_what_it_must_not_judge() -> None:
    scanner = wikidata.entity_scanner()
    for text in (
        b'{"entity":"Q1","redirect":"Q2"}',  # redirects and legacy keys: Python
        b'{"label":{"en":"x"},"entity":["item",1]}',
        b'{"id":"Q1","id":"Q2"}',  # duplicates: msgspec keeps the last
        b'{"id":"Q1","x":"\\ud800"}',  # a lone surrogate
        b'{"aliases":{}}',  # no current-format key: the generic path judges
        b'{"id":"Q1","x":1} x',
        b'{"id":"Q1","claims":{"P1":[],"P1":[]}}',
        b'{"id":"Q1","claims":[1]}',
        b'{"id":"Q1","claims":null}',
        b'{"id":"Q1","x":01}',
        b'{"id":"Q1","x":[' * 100 + b"]" * 100 + b"}",
    ):
        assert scanner.scan(escape(text)) is None, text
    assert scanner.scan(b'{&quot;id&quot;:&quot;Q1&quot;,&quot;x&quot;:&quot;&#34;&quot;}') is None
    assert scanner.scan(b'{&quot;id&quot;:&quot;Q1&quot;}\r') is None
    assert scanner.scanned == 0


def test_unchanged_claims_keep_their_statement_objects() -> None:
    def item(label: str, p31: str, p17: str) -> bytes:
        claims = {pid: [{"mainsnak": {"snaktype": "value", "property": pid, "datavalue": {
            "value": {"entity-type": "item", "numeric-id": int(q[1:]), "id": q},
            "type": "wikibase-entityid"}}, "type": "statement", "id": f"Q1${pid}",
            "rank": "normal"}] for pid, q in (("P31", p31), ("P17", p17))}
        return json.dumps({"type": "item", "id": "Q1", "labels": {"en": {
            "language": "en", "value": label}}, "claims": claims}).encode()

    scanner = wikidata.entity_scanner()
    a = scanner.scan(escape(item("a", "Q5", "Q30")))
    b = scanner.scan(escape(item("b", "Q5", "Q30")))  # only the label changed
    c = scanner.scan(escape(item("b", "Q5", "Q31")))  # one group changed
    assert (a.label_en, b.label_en) == ("a", "b")
    assert b.statements is a.statements  # the claims member was taken over whole
    assert c.statements[0] is a.statements[0]  # P31's group was taken over
    assert c.statements[1] is not a.statements[1] and c.statements[1].value_qid == "Q31"
    assert scanner.reused >= 4


def test_a_group_the_decoder_rejects_declines_and_other_errors_propagate() -> None:
    from emerge_lib.dumps._native import EntityScanner

    def rejecting(pid: str, raw: bytes) -> tuple:
        raise ValueError("not a claim list")

    text = escape(b'{"id":"Q1","claims":{"P31":[{"x":1}]}}')
    assert EntityScanner(wikidata.EntityScan, rejecting).scan(text) is None

    def broken(pid: str, raw: bytes) -> tuple:
        raise KeyError(pid)

    with pytest.raises(KeyError):
        EntityScanner(wikidata.EntityScan, broken).scan(text)
    with pytest.raises(TypeError):
        EntityScanner(wikidata.EntityScan, lambda pid, raw: [1]).scan(text)
    # and the real decoder: a claim list msgspec rejects goes to the Python path
    assert wikidata.entity_scanner().scan(text) is None
    assert EntityParser().parse(unescape(text)).qid == "Q1"


def test_dump_hands_scans_to_revisions_and_text_to_the_rest() -> None:
    from dumpbuilder import PageSpec, Rev, render

    text = next(t for chain in generated_texts() for t in chain if b'"labels"' in t).decode()
    pages = [PageSpec(1, "Q1", [Rev(10, "2020-01-01T00:00:00Z", text),
                                Rev(11, "2020-01-02T00:00:00Z", "not json", model="wikitext"),
                                Rev(12, "2020-01-03T00:00:00Z", None)])]
    with Dump(io.BytesIO(render(pages).encode()), text_bytes=True,
              entity_scanner=wikidata.entity_scanner()) as dump:
        revs = [r for page in dump for r in page]
    assert revs[0].text is None and revs[0].entity is not None
    assert unescape(revs[0].entity.escaped) == text.encode()
    assert revs[1].entity is None and revs[1].text == b"not json"
    assert revs[2].entity is None and revs[2].text is None and revs[2].text_deleted








@pytest.mark.realdata
def test_extractor_rows_are_the_same_without_the_scanner_on_real_samples(
        realdata: Path, tmp_path: Path) -> None:
    same_rows_both_ways([realdata / rel for rel in (
        "wdtk/sample-daily-dump-20140220.xml", "wdtk/mock-dump-with-bugs.xml",
        "wdtk/mock-dump-incomplete-revision.xml", "wdtk/mock-dump-for-testing.xml",
        "dbpedia-minidump-wikidata/wiki.xml.bz2", "sansa-ml/data.xml")], tmp_path)


# ----------------------------------------------------------------------------- claims groups in C
def _group_outcome(group: bytes):
    try:
        return wikidata._scanned_group("P0", group)
    except ValueError:  # what makes the scanner decline: msgspec's errors, bad UTF-8
        return "error"


def _claim_variants(claim: dict) -> list[dict]:
    """The shapes msgspec reads differently in one claim: missing, null and mistyped
    fields, integers and floats of every kind, qualifiers as lists and odd dicts."""
    ms = claim.get("mainsnak", {})
    dv = ms.get("datavalue") or {}
    val = dv.get("value")
    changes = [("rank", None), ("rank", 5), ("id", None), ("id", 7), ("qualifiers", []),
               ("qualifiers", [1]), ("qualifiers", None), ("qualifiers", {}),
               ("qualifiers", {"P1": "x"}),
               ("qualifiers", {"P1": [{"snaktype": "novalue", "property": ""}]})]
    changes += [("qualifiers", {"P1": [{"snaktype": "value", "property": "P2", "datavalue": {
        "type": "time", "value": {"time": "+2001-00-00T00:00:00Z", "precision": p}}}]})
        for p in (9, 9.0, 1e-5, 10**20, None, "9")]
    out = [{**claim, key: value} for key, value in changes]
    out.append({k: v for k, v in claim.items() if k != "rank"})
    out.append({k: v for k, v in claim.items() if k != "mainsnak"})
    for snak_change in ({"snaktype": None}, {"property": None}, {"property": ""},
                        {"snaktype": "somevalue"}, {"datavalue": None}, {"datavalue": "x"}):
        out.append({**claim, "mainsnak": {**ms, **snak_change}})
    values = [None, "Q5", 5, 5.5, 1e300, [1], True, {}, {"id": None, "numeric-id": 5},
              {"numeric-id": 5, "entity-type": "item"}, {"numeric-id": 5.0, "entity-type": "item"},
              {"numeric-id": 10**19, "entity-type": "item"}, {"id": "P5"}, {"id": "X5"},
              {"id": ""}, {"id": "Q5", "entity-type": ""}, {"id": "Q5", "entity-type": 3},
              {"numeric-id": -3, "entity-type": "property"}, {"id": 5}]
    if isinstance(val, dict):
        values.append({**val, "id": None})
    for v in values:
        for vtype in ("wikibase-entityid", "time", None, ""):
            out.append({**claim, "mainsnak": {**ms, "datavalue": {**dv, "value": v,
                                                                  "type": vtype}}})
    return out


def _groups(realdata: Path | None) -> list[bytes]:
    docs = [json.loads(t) for chain in generated_texts() for t in chain if b'"claims":{' in t]
    if realdata is not None:
        docs += [json.loads(t) for t in real_entity_texts(realdata)[:200]
                 if b'"claims"' in t and b'"entity"' not in t]
    groups = []
    for d in docs:
        if isinstance(d.get("claims"), dict):
            groups += [json.dumps(g, separators=(",", ":"), ensure_ascii=False).encode()
                       for g in d["claims"].values()]
    return groups


def _check_groups(groups: list[bytes]) -> int:
    scanner = wikidata.entity_scanner()
    read = 0
    for g in groups:
        for escaped in (escape(g), escape(g, raw_quotes=True)):
            got = scanner.decode_group(escaped)
            if got is not None:
                read += 1
                assert got == _group_outcome(g), g[:300]
    return read


def test_claims_groups_in_c_equal_the_python_decoder() -> None:
    groups = _groups(None)
    assert len(groups) > 300
    assert _check_groups(groups) > 0.9 * 2 * len(groups)  # the common shapes are read in C
    rng = random.Random(5)
    variants = []
    for g in rng.sample(groups, 40):
        claims = json.loads(g)
        for v in _claim_variants(claims[0]):
            variants.append(json.dumps([v] + claims[1:], separators=(",", ":")).encode())
    assert _check_groups(variants) > 100
    _check_groups([mutate(rng.choice(groups), rng) for _ in range(3000)])


@pytest.mark.realdata
def test_claims_groups_in_c_equal_the_python_decoder_on_real_samples(realdata: Path) -> None:
    groups = _groups(realdata)
    assert len(groups) > 1000
    assert _check_groups(groups) > 0.8 * 2 * len(groups)
