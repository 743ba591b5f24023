"""XML character data back to text: the five predefined entities, numeric references and
end-of-line normalization, exactly as expat would (the hottest step of reading a dump:
Wikidata revision texts are JSON with a ``&quot;`` every dozen bytes). The C build
(``emerge_lib.dumps._native``) is used when present; ``_unescape_py`` stays the
specification the tests hold it against.
"""

from __future__ import annotations

import re
import xml.parsers.expat as expat

_AMP_OR_NUMREF = re.compile(rb"&(?:#(x[0-9a-fA-F]+|[0-9]+)|amp);")


def _unescape_py(data: bytes) -> bytes:
    """Pure-Python twin of the C ``emerge_lib.dumps._native.unescape`` (used when it is not built).

    One pass in effect: ``&quot;`` / ``&lt;`` / ``&gt;`` / ``&apos;`` can be replaced in
    any order (none of their outputs contains ``&``), then numeric references and
    ``&amp;`` together, so ``&#38;amp;`` stays ``&amp;`` as XML says.
    """
    if b"\r" in data:  # XML end-of-line normalization, as expat does
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"&" not in data:
        return data
    data = data.replace(b"&quot;", b'"')
    if b"&" not in data:
        return data
    data = data.replace(b"&lt;", b"<").replace(b"&gt;", b">").replace(b"&apos;", b"'")
    if b"&#" in data:
        return _AMP_OR_NUMREF.sub(_amp_or_numref, data)
    return data.replace(b"&amp;", b"&")


try:  # the C build (setup.py; optional): same results, several times faster
    from emerge_lib.dumps._native import unescape as _unescape_c
except ImportError:  # pragma: no cover - exercised where no compiler exists
    _unescape_c = None


NATIVE = _unescape_c is not None  # the C build is in use


def unescape(data: bytes, start: int = 0, end: int = -1) -> bytes:
    """Undo XML escaping (the 5 named entities, numeric references and end-of-line
    normalization) in ``data[start:end]`` (``end=-1``: to the end; a range saves a copy).

    C when built (3-5x the replace chain on entity JSON), else :func:`_unescape_py`; both
    give the same bytes and raise ValueError for a numeric reference beyond U+10FFFF.
    """
    if _unescape_c is not None:
        return _unescape_c(data, start, end)
    return _unescape_py(data[start:] if end < 0 else data[start:end])


def unescape_text(data: bytes, start: int = 0, end: int = -1) -> str:
    """Unescape and decode a text node (``data[start:end]``) to str.

    Without the C build, long wikitext goes through expat (about twice the replace
    chain's speed on text with many different entities); JSON (nearly all ``&quot;``),
    short values and anything expat refuses through :func:`_unescape_py`.
    """
    if _unescape_c is not None:
        return _unescape_c(data, start, end).decode("utf-8", "replace")
    if start or end >= 0:
        data = data[start:] if end < 0 else data[start:end]
    if b"&" not in data and b"\r" not in data:
        return data.decode("utf-8", "replace")
    if len(data) < 256 or data.startswith(b"{&quot;"):
        return _unescape_py(data).decode("utf-8", "replace")
    out: list[str] = []
    parser = expat.ParserCreate("UTF-8")
    parser.buffer_text = True
    parser.buffer_size = len(data) + 64
    parser.CharacterDataHandler = out.append
    try:
        parser.Parse(b"<t>" + data + b"</t>", True)
    except expat.ExpatError:
        return _unescape_py(data).decode("utf-8", "replace")
    return out[0] if len(out) == 1 else "".join(out)


def _amp_or_numref(m: re.Match[bytes]) -> bytes:
    ref = m.group(1)
    if ref is None:
        return b"&"
    code = int(ref[1:], 16) if ref[:1] == b"x" else int(ref)
    if code > 0x10FFFF:  # chr() would raise OverflowError for huge values
        raise ValueError("chr() arg not in range(0x110000)")
    return chr(code).encode("utf-8", "surrogatepass")


def _ustr(data: bytes) -> str:
    return unescape(data).decode("utf-8", "replace")
