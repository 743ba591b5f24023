/* XML text unescaping: the hottest step of reading a dump.
 *
 * Wikidata revision texts are JSON with a `&quot;` every dozen bytes; CPython's
 * bytes.replace spends ~25 ns per match, which made unescaping a third of the Wikidata
 * ingest's CPU time. This single pass copies runs between `&`s with memcpy.
 *
 * Semantics are exactly those of the pure-Python `dumps.xml.escape._unescape_py` (which is used
 * when this module is not built, and which the tests compare against):
 *   - the five predefined entities (&quot; &amp; &lt; &gt; &apos;);
 *   - numeric references &#DDD; and &#xHHH; (lowercase x), any code point below
 *     0x110000 encoded as UTF-8 (surrogates as Python's "surrogatepass" would);
 *     a larger one raises ValueError;
 *   - anything else starting with '&' is kept verbatim;
 *   - XML end-of-line normalization: "\r\n" and a lone "\r" become "\n" (only literal
 *     carriage returns; "&#13;" stays a carriage return, as in XML).
 * The output is never longer than the input.
 */

static Py_ssize_t
encode_utf8(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* An entity at src[0] == '&', src < end. Writes its replacement to *out and returns the
 * number of input bytes consumed; 0 when it is no entity (the '&' is kept verbatim);
 * -1 with ValueError set for a numeric reference beyond U+10FFFF. */
static Py_ssize_t
entity(const char *src, const char *end, char **out)
{
    Py_ssize_t left = end - src;
    if (left >= 6 && memcmp(src, "&quot;", 6) == 0) {
        *(*out)++ = '"';
        return 6;
    }
    if (left >= 5 && memcmp(src, "&amp;", 5) == 0) {
        *(*out)++ = '&';
        return 5;
    }
    if (left >= 4 && memcmp(src, "&lt;", 4) == 0) {
        *(*out)++ = '<';
        return 4;
    }
    if (left >= 4 && memcmp(src, "&gt;", 4) == 0) {
        *(*out)++ = '>';
        return 4;
    }
    if (left >= 6 && memcmp(src, "&apos;", 6) == 0) {
        *(*out)++ = '\'';
        return 6;
    }
    if (left >= 4 && src[1] == '#') {
        const char *p = src + 2;
        int hex = (*p == 'x');
        int big = 0;
        unsigned long cp = 0;
        const char *digits;
        if (hex)
            p++;
        digits = p;
        while (p < end) {
            int d;
            char c = *p;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (hex && c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (hex && c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                break;
            if (!big) {
                cp = cp * (hex ? 16 : 10) + (unsigned long)d;
                if (cp > 0x10FFFF)
                    big = 1;
            }
            p++;
        }
        if (p == digits || p >= end || *p != ';')
            return 0;
        if (big) {
            PyErr_SetString(PyExc_ValueError, "chr() arg not in range(0x110000)");
            return -1;
        }
        *out += encode_utf8(cp, *out);
        return p + 1 - src;
    }
    return 0;
}

/* The '&' at src: its entity's replacement, or the '&' itself when it starts none;
 * returns the input bytes consumed, -1 with ValueError set. */
static inline Py_ssize_t
ampersand(const char *src, const char *end, char **out)
{
    Py_ssize_t used = entity(src, end, out);
    if (used == 0) {
        *(*out)++ = '&';
        used = 1;
    }
    return used;
}

/* Unescape src[0:end) (no carriage returns in it) into out, which has room for
 * end - src bytes; returns the end of the output, or NULL with ValueError set.
 * Eight bytes at a time: entity-dense JSON has a '&' every ~12 bytes, too often for
 * memchr + memcpy per run to pay off. */
static char *
unescape_into(const char *src, const char *end, char *out)
{
    while (end - src >= 8) {
        uint64_t v, x, m;
        memcpy(&v, src, 8);
        x = v ^ 0x2626262626262626ULL; /* '&' bytes become zero */
        m = (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
        memcpy(out, &v, 8); /* out <= src - shrink, so 8 bytes always fit */
        if (m == 0) {
            out += 8;
            src += 8;
            continue;
        }
        int k = __builtin_ctzll(m) >> 3; /* the first '&' (little endian) */
        out += k;
        src += k;
        Py_ssize_t used = ampersand(src, end, &out);
        if (used < 0)
            return NULL;
        src += used;
    }
    while (src < end) {
        if (*src == '&') {
            Py_ssize_t used = ampersand(src, end, &out);
            if (used < 0)
                return NULL;
            src += used;
        }
        else
            *out++ = *src++;
    }
    return out;
}

static PyObject *
unescape(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t start = 0, stop = -1;
    PyObject *result = NULL;

    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "unescape(data, start=0, end=len(data))");
        return NULL;
    }
    if (nargs >= 2 && (start = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs == 3 && (stop = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (stop < 0 || stop > view.len)
        stop = view.len;
    if (start < 0)
        start = 0;
    if (start > stop)
        start = stop;

    const char *src = (const char *)view.buf + start;
    const char *end = (const char *)view.buf + stop;
    Py_ssize_t n = stop - start;
    int has_cr = memchr(src, '\r', (size_t)n) != NULL;
    const char *amp = memchr(src, '&', (size_t)n);

    if (amp == NULL && !has_cr) {
        result = PyBytes_FromStringAndSize(src, n);
        PyBuffer_Release(&view);
        return result;
    }
    result = PyBytes_FromStringAndSize(NULL, n);
    if (result == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(result);
    char *out0 = out;

    if (!has_cr) {
        out = unescape_into(src, end, out);
        if (out == NULL)
            goto error;
    }
    else {
        while (src < end) {
            char c = *src;
            if (c == '&') {
                Py_ssize_t used = ampersand(src, end, &out);
                if (used < 0)
                    goto error;
                src += used;
            }
            else if (c == '\r') {
                *out++ = '\n';
                src += (src + 1 < end && src[1] == '\n') ? 2 : 1;
            }
            else {
                *out++ = c;
                src++;
            }
        }
    }
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&result, out - out0) < 0)
        return NULL;
    return result;

error:
    PyBuffer_Release(&view);
    Py_DECREF(result);
    return NULL;
}


