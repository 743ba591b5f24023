/* XML text unescaping in C: the hottest step of reading a dump.
 *
 * Wikidata revision texts are JSON with a `&quot;` every dozen bytes; CPython's
 * bytes.replace spends ~25 ns per match, which made unescaping a third of the Wikidata
 * ingest's CPU time. This single pass copies runs between `&`s with memcpy.
 *
 * Semantics are exactly those of the pure-Python `xmlstream._unescape_py` (which is used
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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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


/* ------------------------------------------------------------------------------------
 * The canonical <revision> layout (xmlstream._REV_HEAD / _REV_TAIL_END) in C.
 *
 * canonical_revisions(buf, pos, page_id, text_bytes, Revision) -> (revisions, pos)
 *
 * A pure accelerator of xmlstream._parse_canonical_revision(buf, pos, -1, ...): for each
 * revision it builds the identical Revision, or stops whenever anything differs from the strict
 * canonical form (a value it would have to judge, an unusual attribute, a timestamp not
 * of the form YYYY-MM-DDTHH:MM:SSZ, non-UTF-8 names, ids over 18 digits, the buffer
 * ending early): what it stops at is left to the Python function, the specification.
 */
#define IS_WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r' || (c) == '\f' || (c) == '\v')

typedef struct {
    const char *a;
    const char *b;
} span;

static const char *
skip_ws(const char *p, const char *e)
{
    while (p < e && IS_WS(*p))
        p++;
    return p;
}

static int
lit(const char **pp, const char *e, const char *s, size_t n)
{
    if ((size_t)(e - *pp) >= n && memcmp(*pp, s, n) == 0) {
        *pp += n;
        return 1;
    }
    return 0;
}
#define LIT(pp, e, s) lit((pp), (e), (s), sizeof(s) - 1)

/* <name>([^<]*)</name> starting at *pp (which must point at '<name>'). */
static int
leaf(const char **pp, const char *e, const char *open, size_t on, const char *close, size_t cn,
     span *out)
{
    const char *p = *pp;
    if (!lit(&p, e, open, on))
        return 0;
    const char *lt = memchr(p, '<', (size_t)(e - p));
    if (lt == NULL)
        return 0;
    out->a = p;
    out->b = lt;
    p = lt;
    if (!lit(&p, e, close, cn))
        return 0;
    *pp = p;
    return 1;
}
#define LEAF(pp, e, name, out) \
    leaf((pp), (e), "<" name ">", sizeof(name) + 1, "</" name ">", sizeof(name) + 2, (out))

static int
all_digits(span s)
{
    for (const char *p = s.a; p < s.b; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* digits -> Python int (ids); NULL without an exception when it is not for us */
static PyObject *
digits_to_int(span s)
{
    if (s.b == s.a || s.b - s.a > 18 || !all_digits(s))
        return NULL;
    long long v = 0;
    for (const char *p = s.a; p < s.b; p++)
        v = v * 10 + (*p - '0');
    return PyLong_FromLongLong(v);
}

static int
two(const char *p, int *v)
{
    if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
        return 0;
    *v = (p[0] - '0') * 10 + (p[1] - '0');
    return 1;
}

/* YYYY-MM-DDTHH:MM:SSZ -> Unix seconds, as parse_timestamp computes it (a valid date,
 * the time fields unchecked); 0 when not exactly that form or not a valid date. */
static int
strict_timestamp(span s, long long *out)
{
    const char *t = s.a;
    int y1, y2, mo, d, h, mi, se;
    if (s.b - s.a != 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' ||
        t[16] != ':' || t[19] != 'Z')
        return 0;
    if (!two(t, &y1) || !two(t + 2, &y2) || !two(t + 5, &mo) || !two(t + 8, &d) ||
        !two(t + 11, &h) || !two(t + 14, &mi) || !two(t + 17, &se))
        return 0;
    int y = y1 * 100 + y2;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || mo < 1 || mo > 12 || d < 1)
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return 0;
    /* days from 1970-01-01 (H. Hinnant's days_from_civil) */
    long long yy = y - (mo <= 2);
    long long era = (yy >= 0 ? yy : yy - 399) / 400;
    long long yoe = yy - era * 400;
    long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = era * 146097 + doe - 719468;
    *out = days * 86400 + h * 3600 + mi * 60 + se;
    return 1;
}

/* unescape(span) -> bytes; NULL (exception cleared) when the Python side must decide */
static PyObject *
unescape_span(span s)
{
    Py_ssize_t n = s.b - s.a;
    PyObject *res = PyBytes_FromStringAndSize(NULL, n);
    if (res == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(res), *out0 = out;
    const char *src = s.a, *end = s.b;
    if (memchr(src, '\r', (size_t)n) != NULL) {
        Py_DECREF(res);
        return NULL; /* rare: let Python do end-of-line normalization */
    }
    out = unescape_into(src, end, out);
    if (out == NULL) {
        PyErr_Clear();
        Py_DECREF(res);
        return NULL;
    }
    if (_PyBytes_Resize(&res, out - out0) < 0)
        return NULL;
    return res;
}

static PyObject *
unescape_str(span s)
{
    PyObject *b = unescape_span(s);
    if (b == NULL)
        return NULL;
    PyObject *u = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), "replace");
    Py_DECREF(b);
    return u;
}

static PyObject *
strict_str(span s)
{
    PyObject *u = PyUnicode_DecodeUTF8(s.a, s.b - s.a, NULL);
    if (u == NULL)
        PyErr_Clear();
    return u;
}

/* <text> attributes: the two common layouts of _TEXT_ATTRS; 0 for anything else */
static int
text_attrs(span attrs, span *bytes_v, span *sha1_v, int *has_bytes, int *has_sha1)
{
    const char *p = attrs.a, *e = attrs.b;
    span names[3], values[3];
    int n = 0;
    *has_bytes = *has_sha1 = 0;
    while (p < e) {
        const char *q = skip_ws(p, e);
        if (q == p || n == 3)
            return 0;
        const char *name = q;
        while (q < e && *q != '=')
            q++;
        if (q >= e || q + 1 >= e || q[1] != '"')
            return 0;
        names[n].a = name;
        names[n].b = q;
        q += 2;
        const char *quote = memchr(q, '"', (size_t)(e - q));
        if (quote == NULL)
            return 0;
        values[n].a = q;
        values[n].b = quote;
        n++;
        p = quote + 1;
    }
#define NAME_IS(i, s) (names[i].b - names[i].a == sizeof(s) - 1 && memcmp(names[i].a, s, sizeof(s) - 1) == 0)
#define PRESERVE(i) (NAME_IS(i, "xml:space") && values[i].b - values[i].a == 8 && memcmp(values[i].a, "preserve", 8) == 0)
    int bytes_at = -1, sha1_at = -1;
    if (n == 2 && NAME_IS(0, "bytes") && PRESERVE(1))
        bytes_at = 0;
    else if (n == 3 && NAME_IS(0, "bytes") && NAME_IS(1, "sha1") && PRESERVE(2))
        bytes_at = 0, sha1_at = 1;
    else if (n == 1 && PRESERVE(0))
        ;
    else if (n == 2 && PRESERVE(0) && NAME_IS(1, "bytes"))
        bytes_at = 1;
    else
        return 0;
#undef NAME_IS
#undef PRESERVE
    if (bytes_at >= 0) {
        if (!all_digits(values[bytes_at]))
            return 0;
        *bytes_v = values[bytes_at];
        *has_bytes = 1;
    }
    if (sha1_at >= 0) {
        for (const char *c = values[sha1_at].a; c < values[sha1_at].b; c++)
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z')))
                return 0;
        *sha1_v = values[sha1_at];
        *has_sha1 = 1;
    }
    return 1;
}

/* One canonical revision body at buf + pos (just after "<revision>"): a new Revision and
 * *end_out = the offset of its "</revision>"; NULL without an exception to decline, NULL
 * with one (MemoryError) on failure. */
#define DECLINE return NULL
static PyObject *
parse_one(const char *buf, const char *e, Py_ssize_t pos, PyObject *page_id, int text_bytes,
          PyObject *rev_type, Py_ssize_t *end_out)
{
    const char *p = buf + pos;

    span id, parent = {0}, ts, user = {0}, uid = {0}, ip = {0}, comment = {0}, model, fmt;
    span attrs, text, sha1 = {0};
    int has_parent = 0, has_user = 0, has_uid = 0, has_comment = 0, minor = 0, has_sha1 = 0;

    p = skip_ws(p, e);
    if (!LEAF(&p, e, "id", &id) || !all_digits(id) || id.a == id.b)
        DECLINE;
    p = skip_ws(p, e);
    if (e - p >= 10 && memcmp(p, "<parentid>", 10) == 0) {
        if (!LEAF(&p, e, "parentid", &parent) || !all_digits(parent) || parent.a == parent.b)
            DECLINE;
        has_parent = 1;
        p = skip_ws(p, e);
    }
    if (!LEAF(&p, e, "timestamp", &ts))
        DECLINE;
    p = skip_ws(p, e);
    if (!LIT(&p, e, "<contributor>"))
        DECLINE;
    p = skip_ws(p, e);
    if (e - p >= 10 && memcmp(p, "<username>", 10) == 0) {
        if (!LEAF(&p, e, "username", &user))
            DECLINE;
        has_user = 1;
        p = skip_ws(p, e);
        if (e - p >= 4 && memcmp(p, "<id>", 4) == 0) {
            if (!LEAF(&p, e, "id", &uid) || !all_digits(uid) || uid.a == uid.b)
                DECLINE;
            has_uid = 1;
            p = skip_ws(p, e);
        }
    }
    else {
        if (!LEAF(&p, e, "ip", &ip))
            DECLINE;
        p = skip_ws(p, e);
    }
    if (!LIT(&p, e, "</contributor>"))
        DECLINE;
    p = skip_ws(p, e);
    if (e - p >= 6 && memcmp(p, "<minor", 6) == 0) {
        const char *q = skip_ws(p + 6, e);
        if (!LIT(&q, e, "/>"))
            DECLINE;
        minor = 1;
        p = skip_ws(q, e);
    }
    if (e - p >= 9 && memcmp(p, "<comment>", 9) == 0) {
        if (!LEAF(&p, e, "comment", &comment))
            DECLINE;
        has_comment = 1;
        p = skip_ws(p, e);
    }
    if (e - p >= 8 && memcmp(p, "<origin>", 8) == 0) {
        span origin;
        if (!LEAF(&p, e, "origin", &origin) || !all_digits(origin) || origin.a == origin.b)
            DECLINE;
        p = skip_ws(p, e);
    }
    if (!LEAF(&p, e, "model", &model))
        DECLINE;
    p = skip_ws(p, e);
    if (!LEAF(&p, e, "format", &fmt))
        DECLINE;
    p = skip_ws(p, e);
    if (!LIT(&p, e, "<text"))
        DECLINE;
    /* attributes: (\s+[\w:.-]+="[^"<&]*")* then \s*> */
    attrs.a = p;
    for (;;) {
        const char *q = skip_ws(p, e);
        if (q == p)
            break;
        const char *name = q;
        while (q < e && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                         (*q >= '0' && *q <= '9') || *q == '_' || *q == ':' || *q == '.' ||
                         *q == '-'))
            q++;
        if (q == name || e - q < 2 || q[0] != '=' || q[1] != '"')
            break;
        q += 2;
        while (q < e && *q != '"' && *q != '<' && *q != '&')
            q++;
        if (q >= e || *q != '"')
            break;
        p = q + 1;
    }
    attrs.b = p;
    p = skip_ws(p, e);
    if (!LIT(&p, e, ">"))
        DECLINE;
    text.a = p;
    text.b = memchr(p, '<', (size_t)(e - p));
    if (text.b == NULL)
        DECLINE;
    p = text.b;
    if (!LIT(&p, e, "</text>"))
        DECLINE;
    p = skip_ws(p, e);
    if (e - p >= 6 && memcmp(p, "<sha1>", 6) == 0) {
        if (!LEAF(&p, e, "sha1", &sha1))
            DECLINE;
        has_sha1 = 1;
    }
    else if (e - p >= 5 && memcmp(p, "<sha1", 5) == 0) {
        const char *q = skip_ws(p + 5, e);
        if (LIT(&q, e, "/>"))
            p = q;
    }
    p = skip_ws(p, e);
    if (e - p < 11 || memcmp(p, "</revision>", 11) != 0)
        DECLINE;
    Py_ssize_t end = p - buf;

    /* attributes: "deleted" anywhere, or an unusual layout -> Python */
    span tb = {0}, tsha = {0};
    int has_tb = 0, has_tsha = 0;
    for (const char *c = attrs.a; c + 7 <= attrs.b; c++)
        if (memcmp(c, "deleted", 7) == 0)
            DECLINE;
    if (attrs.b > attrs.a && !text_attrs(attrs, &tb, &tsha, &has_tb, &has_tsha))
        DECLINE;
    if (has_tb && (tb.b - tb.a > 18))
        DECLINE;
    long long timestamp;
    if (!strict_timestamp(ts, &timestamp))
        DECLINE;

    PyObject *vals[17] = {NULL};
    PyObject *result = NULL;
    Py_INCREF(page_id);
    vals[0] = page_id;
    if ((vals[1] = digits_to_int(id)) == NULL)
        goto fallback;
    if (has_parent) {
        if ((vals[2] = digits_to_int(parent)) == NULL)
            goto fallback;
    }
    else
        vals[2] = Py_NewRef(Py_None);
    if ((vals[3] = PyLong_FromLongLong(timestamp)) == NULL)
        goto fallback;
    if (has_uid) {
        if ((vals[4] = digits_to_int(uid)) == NULL)
            goto fallback;
    }
    else
        vals[4] = Py_NewRef(Py_None);
    if ((vals[5] = unescape_str(has_user ? user : ip)) == NULL)
        goto fallback;
    vals[6] = Py_NewRef(Py_False);
    vals[7] = Py_NewRef(minor ? Py_True : Py_False);
    if (has_comment) {
        if ((vals[8] = unescape_str(comment)) == NULL)
            goto fallback;
    }
    else
        vals[8] = Py_NewRef(Py_None);
    vals[9] = Py_NewRef(Py_False);
    if ((vals[10] = strict_str(model)) == NULL || (vals[11] = strict_str(fmt)) == NULL)
        goto fallback;
    if (text_bytes)
        vals[12] = unescape_span(text);
    else
        vals[12] = unescape_str(text);
    if (vals[12] == NULL)
        goto fallback;
    vals[13] = Py_NewRef(Py_False);
    if (has_tb && tb.b > tb.a) {
        if ((vals[14] = digits_to_int(tb)) == NULL)
            goto fallback;
    }
    else
        vals[14] = Py_NewRef(Py_None);
    if (has_tsha && tsha.b > tsha.a) {
        if ((vals[15] = strict_str(tsha)) == NULL)
            goto fallback;
    }
    else
        vals[15] = Py_NewRef(Py_None);
    if (has_sha1 && sha1.b > sha1.a) {
        if ((vals[16] = strict_str(sha1)) == NULL)
            goto fallback;
    }
    else
        vals[16] = Py_NewRef(Py_None);
    result = PyObject_Vectorcall(rev_type, vals, 17, NULL);
    for (int i = 0; i < 17; i++)
        Py_XDECREF(vals[i]);
    *end_out = end;
    return result;

fallback:
    for (int i = 0; i < 17; i++)
        Py_XDECREF(vals[i]);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear();
    return NULL;
}
#undef DECLINE

/* canonical_revisions(buf, pos, page_id, text_bytes, Revision) -> (revisions, pos)
 * Every consecutive canonical <revision> from pos (whitespace between them allowed):
 * the list (maybe empty) and the offset after the last one's </revision>. Saves the
 * per-revision round trip through Python on pages with many revisions. */
static PyObject *
canonical_revisions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "canonical_revisions(buf, pos, page_id, text_bytes, Revision)");
        return NULL;
    }
    if (!PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "buf must be bytes");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    const char *buf = PyBytes_AS_STRING(args[0]);
    const char *e = buf + PyBytes_GET_SIZE(args[0]);
    int text_bytes = PyObject_IsTrue(args[3]);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    if (pos < 0 || pos > PyBytes_GET_SIZE(args[0]))
        return Py_BuildValue("(Nn)", out, pos);
    for (;;) {
        const char *p = skip_ws(buf + pos, e);
        if (e - p < 10 || memcmp(p, "<revision>", 10) != 0)
            break;
        PyObject *rev = parse_one(buf, e, p + 10 - buf, args[2], text_bytes, args[4], &end);
        if (rev == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(out);
                return NULL;
            }
            break;
        }
        int failed = PyList_Append(out, rev);
        Py_DECREF(rev);
        if (failed) {
            Py_DECREF(out);
            return NULL;
        }
        pos = end + 11;
    }
    return Py_BuildValue("(Nn)", out, pos);
}

static PyMethodDef methods[] = {
    {"unescape", (PyCFunction)(void (*)(void))unescape, METH_FASTCALL,
     "unescape(data, start=0, end=len(data)) -> bytes\n\n"
     "Undo XML escaping of data[start:end]: the five named entities, numeric references "
     "and end-of-line normalization."},
    {"canonical_revisions", (PyCFunction)(void (*)(void))canonical_revisions, METH_FASTCALL,
     "canonical_revisions(buf, pos, page_id, text_bytes, Revision) -> (list, pos)\n\n"
     "The consecutive canonical revisions from pos (xmlstream._parse_canonical_revision "
     "for each, which stays the specification) and the offset after the last."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_xmlfast", "XML text unescaping in C (see xmlstream.unescape).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__xmlfast(void)
{
    return PyModule_Create(&module);
}
