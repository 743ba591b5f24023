"""The C accelerators (emerge_lib/dumps/native/) against their Python specifications.

The Python functions stay the specification: C must return exactly what they return, or
decline (None) and let them decide. Checked on the real samples, on generated dumps, on
random mutations of canonical revisions and on random entity soup.
"""

from __future__ import annotations

import io
import random
import shutil
import sysconfig
from pathlib import Path

import pytest
from dumpbuilder import PageSpec, Rev, render

from emerge_lib.dumps import xml as xmlstream
from emerge_lib.dumps.compressed import open_dump
from emerge_lib.dumps.xml import Dump, Revision, escape, page
from emerge_lib.dumps.xml.escape import _unescape_py
from emerge_lib.dumps.xml.revision import _parse_canonical_revision

native = pytest.mark.skipif(not xmlstream.NATIVE, reason="C extension not built")


def test_native_is_built_where_a_compiler_exists() -> None:
    """`pip install -e .` builds the extension when it can; losing it silently would cost
    a third of the Wikidata ingest's speed, so where a compiler exists it must be there."""
    has_compiler = shutil.which(sysconfig.get_config_var("CC").split()[0] or "cc")
    if not has_compiler:
        pytest.skip("no C compiler here: the pure-Python path is used")
    assert xmlstream.NATIVE


def _soup(rng: random.Random) -> bytes:
    atoms = [b"&quot;", b"&amp;", b"&lt;", b"&gt;", b"&apos;", b"&", b"#", b";", b"x", b"X",
             b"&#", b"&#x", b"1", b"9", b"f", b"F", b"\r", b"\n", b"\r\n", b"a", b" ",
             "\u00e9".encode(), "\U0001f600".encode(), b"&#38;", b"&#x26;amp;", b"&#13;",
             b"&#x10FFFF;", b"&#x110000;", b"&#99999999999999999999;", b"&nbsp;", b"&quot"]
    return b"".join(rng.choice(atoms) for _ in range(rng.randint(0, 40)))


def _outcome(fn, *args):
    try:
        return fn(*args)
    except ValueError as exc:
        return ("ValueError", str(exc))


@native
def test_unescape_native_equals_python() -> None:
    from emerge_lib.dumps._native import unescape as unescape_c

    rng = random.Random(7)
    cases = [_soup(rng) for _ in range(5000)]
    cases += [b"", b"&", b"&&", b"&#;", b"&#x;", b"&#38;amp;", b"a\r\nb\rc\r", b"&#1;",
              b"x" * 100 + b"&quot;" * 50 + b"y" * 7]
    for data in cases:
        assert _outcome(unescape_c, data) == _outcome(_unescape_py, data), data
        # ranges: what the scanner passes instead of slicing
        a = rng.randint(0, len(data))
        b = rng.randint(a, len(data))
        assert _outcome(unescape_c, data, a, b) == _outcome(_unescape_py, data[a:b]), (data, a, b)
    # both refuse a code point beyond Unicode the same way
    assert _outcome(unescape_c, b"&#x110000;") == ("ValueError", "chr() arg not in range(0x110000)")


def _revision_offsets(data: bytes) -> list[int]:
    out, i = [], data.find(b"<revision>")
    while i >= 0:
        out.append(i + len(b"<revision>"))
        i = data.find(b"<revision>", i + 1)
    return out


def _compare_at(data: bytes, pos: int) -> tuple[bool, bool]:
    """The revision whose body starts at ``pos``, alone: C equals the Python canonical
    parser or declines. Returns (Python parsed it as canonical, C handled it)."""
    from emerge_lib.dumps._native import canonical_revisions

    stop = data.find(b"</revision>", pos)
    one = b"<revision>" + (data[pos:] if stop < 0 else data[pos : stop + len(b"</revision>")])
    python_parsed = handled = False
    for text_bytes in (False, True):
        text_of = xmlstream.unescape if text_bytes else xmlstream.unescape_text
        py = _outcome(_parse_canonical_revision, one, 10, -1, 7, text_of)
        python_parsed = isinstance(py, tuple) and isinstance(py[0], Revision)
        revs, after = canonical_revisions(one, 0, 7, text_bytes, Revision)
        if not revs:
            assert after == 0
            continue
        handled = True
        assert len(revs) == 1
        assert (revs[0], after - len(b"</revision>")) == py, (one[:300], revs, py)
        assert isinstance(revs[0].text, bytes if text_bytes else str)
    return python_parsed, handled


@native
def test_canonical_revisions_parses_a_run_and_stops_where_python_must_decide() -> None:
    from emerge_lib.dumps._native import canonical_revisions

    data = _generated_dump()
    first = data.find(b"<revision>")
    revs, after = canonical_revisions(data, first, 7, True, Revision)
    assert [r.rev_id for r in revs] == [10, 11, 12, 13, 14]  # the whole first page
    assert data[after:].lstrip().startswith(b"</page>")
    odd = data.replace(b"<minor />", b"").replace(b"<comment>", b"<comment extra='1'>", 1)
    revs, after = canonical_revisions(odd, odd.find(b"<revision>"), 7, True, Revision)
    assert [r.rev_id for r in revs] == [10]  # the second has an attribute C leaves alone
    assert odd[after:].lstrip().startswith(b"<revision>")


def _generated_dump() -> bytes:
    texts = ['{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"a & b <c> \u00e9"}}}',
             "", "plain", "x\ny", '{"q":"\\"quoted\\""}']
    pages = [
        PageSpec(i, f"Q{i}", [
            Rev(10 * i + k, f"2024-0{1 + k % 9}-1{k % 10}T0{k % 10}:3{k}:0{k}Z",
                texts[(i + k) % len(texts)], comment=[None, "c &amp; d", "\u00fc", ""][k % 4])
            for k in range(5)])
        for i in range(1, 30)
    ]
    return render(pages).encode()


@native
def test_canonical_revision_native_equals_python_on_generated_dumps() -> None:
    data = _generated_dump()
    offsets = _revision_offsets(data)
    assert all(_compare_at(data, pos) == (True, True) for pos in offsets)  # never declined


@native
@pytest.mark.realdata
def test_canonical_revision_native_equals_python_on_real_samples(realdata: Path) -> None:
    canonical = handled = 0
    for path in sorted(realdata.rglob("*")):
        if not path.is_file() or not any(s in path.name for s in (".xml", ".bz2")):
            continue
        try:
            data = open_dump(path).read()
        except Exception:  # noqa: BLE001 - not a dump (or a deliberately corrupt one)
            continue
        for pos in _revision_offsets(data):
            py, c = _compare_at(data, pos)
            canonical += py
            handled += c
    assert canonical > 300
    assert handled / canonical > 0.95  # a CRLF file is left to Python


_MUTATIONS = [
    lambda s, i: s[:i] + s[i + 1 :],  # drop a byte
    lambda s, i: s[:i] + b" " + s[i:],  # extra whitespace
    lambda s, i: s[:i] + b"<" + s[i:],
    lambda s, i: s[:i] + b"&#x110000;" + s[i:],
    lambda s, i: s[:i] + b"\r\n" + s[i:],
    lambda s, i: s[:i] + bytes([s[i] ^ 0x20]) + s[i + 1 :],  # case flip / digit -> other
    lambda s, i: s[:i] + b"\xff" + s[i:],  # not UTF-8
    lambda s, i: s[:i] + b'" deleted="deleted' + s[i:],
    lambda s, i: s[:i] + b"9" * 25 + s[i:],  # an id too long for C
]


@native
def test_canonical_revision_native_equals_python_on_mutations() -> None:
    rng = random.Random(11)
    data = _generated_dump()
    offsets = _revision_offsets(data)
    compared = 0
    for _ in range(4000):
        pos = rng.choice(offsets)
        end = data.find(b"</revision>", pos) + len(b"</revision>")
        body = data[pos:end]
        i = rng.randrange(len(body))
        mutated = b"<revision>" + rng.choice(_MUTATIONS)(body, i) + b"\n</page>"
        compared += _compare_at(mutated, len(b"<revision>"))[1]
    assert compared > 500  # plenty of mutations keep the layout and are compared in full


def _records(path_or_bytes, text_bytes: bool = False) -> tuple[list, list]:
    if isinstance(path_or_bytes, bytes):
        dump = Dump(io.BytesIO(path_or_bytes), text_bytes=text_bytes)
    else:
        dump = Dump.from_file(path_or_bytes, text_bytes=text_bytes)
    with dump:
        pages = [(p.page_id, p.title, p.ns, p.redirect_title, list(p)) for p in dump]
    return pages, dump.rejects


@pytest.fixture
def pure_python(monkeypatch: pytest.MonkeyPatch):
    """Run the scanner without the C build."""

    def use() -> None:
        monkeypatch.setattr(page, "_canonical_batch_c", None)
        monkeypatch.setattr(escape, "_unescape_c", None)

    return use


@native
@pytest.mark.realdata
def test_scanner_without_c_gives_identical_records(realdata: Path, pure_python) -> None:
    paths = [p for p in sorted(realdata.rglob("*.xml*")) if p.is_file()]
    paths += [p for p in sorted(realdata.rglob("*.bz2")) if p.is_file()]
    fast = {}
    for p in paths:
        try:
            fast[p] = (_records(p), _records(p, text_bytes=True))
        except Exception as exc:  # noqa: BLE001 - compared below: same error without C
            fast[p] = type(exc)
    fast["generated"] = (_records(_generated_dump()), _records(_generated_dump(), True))
    pure_python()
    for p, expected in fast.items():
        try:
            if p == "generated":
                got = (_records(_generated_dump()), _records(_generated_dump(), True))
            else:
                got = (_records(p), _records(p, text_bytes=True))
        except Exception as exc:  # noqa: BLE001
            got = type(exc)
        assert got == expected, p


@pytest.mark.parametrize("use_c", [True, False])
def test_bad_value_in_a_canonical_revision_drops_only_that_revision(
    use_c: bool, pure_python
) -> None:
    if not use_c:
        pure_python()
    elif not xmlstream.NATIVE:
        pytest.skip("C extension not built")
    pages = [
        PageSpec(1, "Q1", [Rev(1, "2024-01-01T00:00:00Z", "{}"),
                           Rev(2, "2024-13-45T00:00:00Z", "{}"),  # no such date
                           Rev(3, "2024-01-02T00:00:00Z", "{BAD}"),
                           Rev(4, "2024-01-03T00:00:00Z", "{}")]),
        PageSpec(2, "Q2", [Rev(5, "2024-01-01T00:00:00Z", "{}")]),
    ]
    xml = render(pages).encode().replace(b"BAD", b"&#x110000;")  # no such character
    got, rejects = _records(xml)
    assert [(pid, [r.rev_id for r in revs]) for pid, _, _, _, revs in got] == [
        (1, [1, 4]), (2, [5])]
    assert [(r.page_id, r.partial) for r in rejects] == [(1, True), (1, True)]
    assert "timestamp" in rejects[0].reason and "range" in rejects[1].reason
