/* The hot loops of reading a dump, in C: XML text unescaping (this header), the batch of
 * canonical <revision> elements, and the Wikidata entity scanner (their own sections
 * below). Each is an accelerator: the Python code stays the specification.
 *
 * XML text unescaping: the hottest step of reading a dump.
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
#include <structmember.h>

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

/* strict_str for values that repeat on every revision (<model>, <format>): the last one
 * is kept and handed out again while the bytes are the same. */
typedef struct {
    char bytes[32];
    Py_ssize_t n;
    PyObject *str;
} repeat_cache;

static PyObject *
repeated_str(span s, repeat_cache *c)
{
    Py_ssize_t n = s.b - s.a;
    if (c->str != NULL && n == c->n && memcmp(s.a, c->bytes, (size_t)n) == 0)
        return Py_NewRef(c->str);
    PyObject *u = strict_str(s);
    if (u != NULL && n <= (Py_ssize_t)sizeof(c->bytes)) {
        Py_XSETREF(c->str, Py_NewRef(u));
        memcpy(c->bytes, s.a, (size_t)n);
        c->n = n;
    }
    return u;
}

static repeat_cache model_cache, format_cache;

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

/* ------------------------------------------------------------------------------------
 * Entity JSON read straight from the escaped XML text, reusing the previous revision.
 *
 * EntityScanner(EntityScan, group_decoder).scan(escaped) -> EntityScan | None
 *
 * A pure accelerator of wikidata.EntityParser.parse(unescape(escaped)) for the current
 * serialization: it reads the fields the timelines keep (id, type, datatype, labels.en,
 * descriptions.en, sitelinks.enwiki) and the statements, all without unescaping the text
 * (a changed claims group is unescaped for group_decoder, which makes its Statements).
 * Consecutive revisions of an item share most of their bytes: each top-level member, each
 * language of labels/descriptions/aliases/sitelinks and each claims group byte-identical
 * to the previous scan's (memcmp) is taken over, what was read from it included, so an
 * edit costs about the size of what it changed. Whatever the scanner is not sure msgspec
 * accepts the same way (legacy keys, escapes in keys, duplicate fields, surrogate escapes, numeric
 * references, carriage returns, unexpected types, deep nesting, ...) is declined (None),
 * and the caller takes the Python path, which stays the specification. Skipped strings are
 * not UTF-8-checked: msgspec does not check them either; decoded ones are, strictly.
 */
enum { K_OTHER, K_ID, K_TYPE, K_DATATYPE, K_LABELS, K_DESCRIPTIONS, K_SITELINKS, K_CLAIMS,
       K_ALIASES, K_DECLINE, K_EN = 1 };
/* the objects whose members are compared with the previous text's, one table each */
enum { T_TOP, T_LABELS, T_DESCRIPTIONS, T_SITELINKS, T_ALIASES, T_CLAIMS, T_N };
#define ES_MAX_DEPTH 64
#define ES_DECLINE (-1)
#define ES_ERROR (-2) /* an exception is set (MemoryError) */

typedef struct {
    Py_ssize_t off, len; /* the member's bytes: its key's opening quote .. its value's end */
    int kind;            /* K_*: at the top level; K_EN or K_OTHER below */
    int present;         /* the value is not null */
    PyObject *value;     /* owned or NULL: str/None; a claims group: (pid, its statements);
                            "claims" itself: all statements (a tuple) */
} es_member;

typedef struct { /* double-buffered: cur is the previous text's, next the one being read */
    es_member *cur, *next;
    Py_ssize_t ncur, nnext, cap;
} es_table;

typedef struct {
    PyObject_HEAD
    PyObject *scan_type;
    PyObject *group_decoder; /* (pid, the group's JSON bytes) -> tuple of statements */
    PyObject *stmt_type, *qual_type; /* Statement, Qualifier: groups read in C; or NULL */
    PyObject *prev;          /* the previous accepted text (bytes), or NULL */
    es_table tab[T_N];
    Py_ssize_t scanned, declined, reused;
} EntityScanner;

typedef struct {
    const char *t;
    Py_ssize_t n;
    const char *prev;
    EntityScanner *s;
} es_ctx;

static inline Py_ssize_t
es_ws(const char *t, Py_ssize_t n, Py_ssize_t p)
{
    while (p < n && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n'))
        p++;
    return p;
}

/* The width of a JSON quote at p: a raw '"' or "&quot;"; 0 if there is none. */
static inline int
es_quote(const char *t, Py_ssize_t n, Py_ssize_t p)
{
    if (p >= n)
        return 0;
    if (t[p] == '"')
        return 1;
    if (t[p] == '&' && n - p >= 6 && memcmp(t + p, "&quot;", 6) == 0)
        return 6;
    return 0;
}

/* One character of the unescaped text at p (< n): its width, 0 to decline (an entity
 * other than the five named ones, a carriage return, a '<'). */
static inline int
es_char(const char *t, Py_ssize_t n, Py_ssize_t p, unsigned char *c)
{
    unsigned char b = (unsigned char)t[p];
    if (b != '&') {
        if (b == '\r' || b == '<')
            return 0;
        *c = b;
        return 1;
    }
    Py_ssize_t left = n - p;
    if (left >= 6 && memcmp(t + p, "&quot;", 6) == 0) {
        *c = '"';
        return 6;
    }
    if (left >= 5 && memcmp(t + p, "&amp;", 5) == 0) {
        *c = '&';
        return 5;
    }
    if (left >= 4 && memcmp(t + p, "&lt;", 4) == 0) {
        *c = '<';
        return 4;
    }
    if (left >= 4 && memcmp(t + p, "&gt;", 4) == 0) {
        *c = '>';
        return 4;
    }
    if (left >= 6 && memcmp(t + p, "&apos;", 6) == 0) {
        *c = '\'';
        return 6;
    }
    return 0;
}

static inline int
es_hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* p just after an opening quote: the offset after the closing quote, or ES_DECLINE.
 * *special is set when the string holds an escape or an entity other than the quote,
 * *ascii cleared when it holds a byte >= 0x80. */
static Py_ssize_t
es_string_end(const char *t, Py_ssize_t n, Py_ssize_t p, int *special, int *ascii)
{
    for (;;) {
        while (p < n) {
            unsigned char b = (unsigned char)t[p];
            if (b == '&' || b == '"' || b == '\\' || b < 0x20 || b == '<')
                break;
            if (b >= 0x80)
                *ascii = 0;
            p++;
        }
        if (p >= n)
            return ES_DECLINE;
        unsigned char b = (unsigned char)t[p], c;
        if (b == '"')
            return p + 1;
        if (b == '&') {
            int w = es_char(t, n, p, &c);
            if (w == 0)
                return ES_DECLINE;
            if (c == '"')
                return p + w;
            *special = 1;
            p += w;
            continue;
        }
        if (b != '\\')
            return ES_DECLINE; /* a control character or '<' */
        *special = 1;
        if (++p >= n)
            return ES_DECLINE;
        int w = es_char(t, n, p, &c);
        if (w == 0)
            return ES_DECLINE;
        switch (c) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p += w;
            continue;
        case 'u': {
            p += 1;
            if (n - p < 4)
                return ES_DECLINE;
            int v = 0;
            for (int i = 0; i < 4; i++) {
                int h = es_hex((unsigned char)t[p + i]);
                if (h < 0)
                    return ES_DECLINE;
                v = v * 16 + h;
            }
            if (v >= 0xD800 && v <= 0xDFFF)
                return ES_DECLINE; /* surrogates: left to msgspec */
            p += 4;
            continue;
        }
        default:
            return ES_DECLINE;
        }
    }
}

/* The str of the JSON string content t[a:b) (already validated by es_string_end), or NULL:
 * *err = 0 to decline (not UTF-8), *err = 1 on MemoryError. */
static PyObject *
es_decode_string(const char *t, Py_ssize_t a, Py_ssize_t b, int special, int *err)
{
    PyObject *s;
    *err = 0;
    if (!special)
        s = PyUnicode_DecodeUTF8(t + a, b - a, "strict");
    else {
        char *buf = PyMem_Malloc((size_t)(b - a) + 1), *o = buf;
        if (buf == NULL) {
            PyErr_NoMemory();
            *err = 1;
            return NULL;
        }
        Py_ssize_t p = a;
        while (p < b) {
            unsigned char c;
            int w = es_char(t, b, p, &c);
            p += w;
            if (c != '\\') {
                *o++ = (char)c;
                continue;
            }
            w = es_char(t, b, p, &c);
            p += w;
            switch (c) {
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                unsigned long v = 0;
                for (int i = 0; i < 4; i++)
                    v = v * 16 + (unsigned long)es_hex((unsigned char)t[p + i]);
                p += 4;
                o += encode_utf8(v, o);
                break;
            }
            default: *o++ = (char)c; /* " \ / */
            }
        }
        s = PyUnicode_DecodeUTF8(buf, o - buf, "strict");
        PyMem_Free(buf);
    }
    if (s == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            *err = 1;
        else
            PyErr_Clear();
    }
    return s;
}

static Py_ssize_t es_skip_value(const char *t, Py_ssize_t n, Py_ssize_t p, int depth);

/* After a value: whitespace, then ',' (returns the next member's start, *more = 1) or the
 * closing character (returns the offset after it, *more = 0). */
static inline Py_ssize_t
es_after_value(const char *t, Py_ssize_t n, Py_ssize_t p, char close, int *more)
{
    p = es_ws(t, n, p);
    if (p >= n)
        return ES_DECLINE;
    if (t[p] == ',') {
        *more = 1;
        return es_ws(t, n, p + 1);
    }
    if (t[p] == close) {
        *more = 0;
        return p + 1;
    }
    return ES_DECLINE;
}

/* A key at p: its content t[*a:*b), then the value's start after ':' */
static inline Py_ssize_t
es_key(const char *t, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *a, Py_ssize_t *b, int *special,
       int *ascii)
{
    int w = es_quote(t, n, p);
    if (!w)
        return ES_DECLINE;
    *a = p + w;
    *special = 0;
    *ascii = 1;
    Py_ssize_t e = es_string_end(t, n, p + w, special, ascii);
    if (e < 0)
        return ES_DECLINE;
    *b = e - (t[e - 1] == '"' ? 1 : 6);
    p = es_ws(t, n, e);
    if (p >= n || t[p] != ':')
        return ES_DECLINE;
    return es_ws(t, n, p + 1);
}

static Py_ssize_t
es_number_end(const char *t, Py_ssize_t n, Py_ssize_t p)
{
#define DIGIT(i) ((i) < n && t[i] >= '0' && t[i] <= '9')
    if (p < n && t[p] == '-')
        p++;
    if (!DIGIT(p))
        return ES_DECLINE;
    if (t[p] == '0')
        p++;
    else
        while (DIGIT(p))
            p++;
    if (p < n && t[p] == '.') {
        p++;
        if (!DIGIT(p))
            return ES_DECLINE;
        while (DIGIT(p))
            p++;
    }
    if (p < n && (t[p] == 'e' || t[p] == 'E')) {
        p++;
        if (p < n && (t[p] == '+' || t[p] == '-'))
            p++;
        if (!DIGIT(p))
            return ES_DECLINE;
        while (DIGIT(p))
            p++;
    }
    return p;
#undef DIGIT
}

/* Any JSON value at p, validated and skipped: the offset after it, or ES_DECLINE. */
static Py_ssize_t
es_skip_value(const char *t, Py_ssize_t n, Py_ssize_t p, int depth)
{
    if (p >= n)
        return ES_DECLINE;
    int w = es_quote(t, n, p);
    if (w) {
        int special = 0, ascii = 1;
        return es_string_end(t, n, p + w, &special, &ascii);
    }
    switch (t[p]) {
    case '{':
    case '[': {
        int obj = t[p] == '{', more = 1;
        char close = obj ? '}' : ']';
        if (depth >= ES_MAX_DEPTH)
            return ES_DECLINE;
        p = es_ws(t, n, p + 1);
        if (p < n && t[p] == close)
            return p + 1;
        while (more) {
            if (obj) {
                Py_ssize_t a, b;
                int special, ascii;
                if ((p = es_key(t, n, p, &a, &b, &special, &ascii)) < 0)
                    return ES_DECLINE;
            }
            if ((p = es_skip_value(t, n, p, depth + 1)) < 0)
                return ES_DECLINE;
            if ((p = es_after_value(t, n, p, close, &more)) < 0)
                return ES_DECLINE;
        }
        return p;
    }
    case 't':
        return n - p >= 4 && memcmp(t + p, "true", 4) == 0 ? p + 4 : ES_DECLINE;
    case 'f':
        return n - p >= 5 && memcmp(t + p, "false", 5) == 0 ? p + 5 : ES_DECLINE;
    case 'n':
        return n - p >= 4 && memcmp(t + p, "null", 4) == 0 ? p + 4 : ES_DECLINE;
    default:
        return es_number_end(t, n, p);
    }
}

static inline int
es_is_null(const char *t, Py_ssize_t n, Py_ssize_t p)
{
    return n - p >= 4 && memcmp(t + p, "null", 4) == 0;
}

static inline int
es_key_is(const char *t, Py_ssize_t a, Py_ssize_t b, const char *name)
{
    size_t len = strlen(name);
    return (size_t)(b - a) == len && memcmp(t + a, name, len) == 0;
}

/* A str | null value at p: *out = str or None (new reference). */
static Py_ssize_t
es_str_or_null(const char *t, Py_ssize_t n, Py_ssize_t p, PyObject **out, int *present)
{
    int w = es_quote(t, n, p);
    if (w) {
        int special = 0, ascii = 1, err;
        Py_ssize_t e = es_string_end(t, n, p + w, &special, &ascii);
        if (e < 0)
            return ES_DECLINE;
        Py_ssize_t b = e - (t[e - 1] == '"' ? 1 : 6);
        *out = es_decode_string(t, p + w, b, special, &err);
        if (*out == NULL)
            return err ? ES_ERROR : ES_DECLINE;
        *present = 1;
        return e;
    }
    if (es_is_null(t, n, p)) {
        *out = Py_NewRef(Py_None);
        *present = 0;
        return p + 4;
    }
    return ES_DECLINE; /* msgspec: ValidationError, the generic path decides */
}

static void
es_release(es_member *m, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        Py_CLEAR(m[i].value);
}

static void
es_clear_next(es_table *tb)
{
    es_release(tb->next, tb->nnext);
    tb->nnext = 0;
}

/* Room for one more member in tb->next (both buffers keep one capacity). */
static es_member *
es_push(es_table *tb)
{
    if (tb->nnext == tb->cap) {
        Py_ssize_t cap = tb->cap ? tb->cap * 2 : 16;
        es_member *a = PyMem_Realloc(tb->next, (size_t)cap * sizeof(es_member));
        if (a == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        tb->next = a;
        es_member *b = PyMem_Realloc(tb->cur, (size_t)cap * sizeof(es_member));
        if (b == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        tb->cur = b;
        tb->cap = cap;
    }
    es_member *m = &tb->next[tb->nnext];
    m->value = NULL;
    m->present = 0;
    m->kind = K_OTHER;
    return m;
}

/* Is the member at t + p byte-identical to the previous text's [off, off + len), and
 * delimited by ',' or '}' right after (so its value ends where the old one did)? */
static inline int
es_same(const es_ctx *x, Py_ssize_t p, Py_ssize_t off, Py_ssize_t len)
{
    return x->n - p > len && memcmp(x->t + p, x->prev + off, (size_t)len) == 0 &&
           (x->t[p + len] == ',' || x->t[p + len] == '}');
}

/* A fresh member: key t[a:b) (special/ascii as es_string_end says), value at v. Fills
 * m->kind/present/value and returns the offset after the value. */
typedef Py_ssize_t (*es_fresh_fn)(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special,
                                  int ascii, Py_ssize_t v, es_member *m);

static Py_ssize_t es_object(es_ctx *x, Py_ssize_t p, int ti, es_fresh_fn fresh);

/* The members of table `sub` move along with a reused member (from prev offset `from`). */
static int
es_carry(EntityScanner *s, int sub, Py_ssize_t shift)
{
    es_table *tb = &s->tab[sub];
    es_clear_next(tb);
    for (Py_ssize_t i = 0; i < tb->ncur; i++) {
        es_member *m = es_push(tb);
        if (m == NULL)
            return -1;
        *m = tb->cur[i];
        m->off += shift;
        Py_XINCREF(m->value);
        tb->nnext++;
    }
    return 0;
}

/* labels/descriptions members: "en" -> _Term{value: str | None} | None */
static Py_ssize_t
es_fresh_term(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
              es_member *m, const char *outer, const char *inner)
{
    const char *t = x->t;
    Py_ssize_t n = x->n;
    if (special || !ascii) /* msgspec would compare the decoded key */
        return ES_DECLINE;
    if (!es_key_is(t, a, b, outer))
        return es_skip_value(t, n, v, 2);
    m->kind = K_EN;
    if (es_is_null(t, n, v)) {
        m->value = Py_NewRef(Py_None);
        return v + 4;
    }
    if (v >= n || t[v] != '{')
        return ES_DECLINE; /* msgspec: ValidationError */
    m->present = 1;
    int more = 1, seen = 0;
    Py_ssize_t p = es_ws(t, n, v + 1);
    if (p < n && t[p] == '}')
        more = 0, p++;
    while (more) {
        Py_ssize_t ka, kb;
        int ksp, kasc;
        if ((p = es_key(t, n, p, &ka, &kb, &ksp, &kasc)) < 0 || ksp || !kasc)
            return ES_DECLINE;
        if (!es_key_is(t, ka, kb, inner))
            p = es_skip_value(t, n, p, 3);
        else if (seen++)
            return ES_DECLINE; /* a duplicate: msgspec keeps the last; we do not judge */
        else {
            int inner_present;
            p = es_str_or_null(t, n, p, &m->value, &inner_present);
        }
        if (p < 0)
            return p;
        if ((p = es_after_value(t, n, p, '}', &more)) < 0)
            return ES_DECLINE;
    }
    if (m->value == NULL)
        m->value = Py_NewRef(Py_None);
    return p;
}

static Py_ssize_t
es_fresh_label(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
               es_member *m)
{
    return es_fresh_term(x, a, b, special, ascii, v, m, "en", "value");
}

static Py_ssize_t
es_fresh_sitelink(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
                  es_member *m)
{
    return es_fresh_term(x, a, b, special, ascii, v, m, "enwiki", "title");
}

/* aliases (not decoded by msgspec at all): any member */
static Py_ssize_t
es_fresh_skip(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
              es_member *m)
{
    return es_skip_value(x->t, x->n, v, 2);
}

/* ------------------------------------------------------------------------------------
 * A claims group to Statements in C: wikidata._statements_of_group(list[_Claim] decoded by
 * msgspec) for the common shapes, straight from the escaped text. Returns a tuple, or NULL
 * without an exception to decline (the Python group decoder then decides), or NULL with one.
 * Declined: duplicate keys, escaped or non-ASCII keys where msgspec matches fields, types
 * msgspec would reject or read otherwise (a list or a boolean as a value, integers over 18
 * digits, null where a str is required), a non-empty list as qualifiers.
 */
typedef struct {
    int is_val; /* the value was an object (msgspec: _Val) */
    PyObject *id, *etype, *time; /* owned, NULL for None */
    int has_num;
    long long num;
    int prec_kind; /* 0: None, 1: int, 2: float */
    long long prec;
} es_val;

typedef struct {
    PyObject *snaktype, *property, *vtype; /* owned; vtype NULL for None */
    es_val val;
} es_snak;

static void
es_val_clear(es_val *v)
{
    Py_CLEAR(v->id);
    Py_CLEAR(v->etype);
    Py_CLEAR(v->time);
}

static void
es_snak_clear(es_snak *s)
{
    Py_CLEAR(s->snaktype);
    Py_CLEAR(s->property);
    Py_CLEAR(s->vtype);
    es_val_clear(&s->val);
}

/* A JSON number at p (*end after it): 1 for an integer literal of at most 18 digits
 * (*value), 2 for a fraction or exponent (a float to msgspec), 3 for a longer integer,
 * 0 for no number. */
static int
es_number(const char *t, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *end, long long *value)
{
    Py_ssize_t e = es_number_end(t, n, p);
    if (e < 0)
        return 0;
    *end = e;
    int neg = t[p] == '-';
    for (Py_ssize_t i = p + neg; i < e; i++)
        if (t[i] < '0' || t[i] > '9')
            return 2;
    if (e - p - neg > 18)
        return 3;
    long long v = 0;
    for (Py_ssize_t i = p + neg; i < e; i++)
        v = v * 10 + (t[i] - '0');
    *value = neg ? -v : v;
    return 1;
}

/* Floats with an exponent may overflow: msgspec is left to judge them. */
static int
es_has_exponent(const char *t, Py_ssize_t a, Py_ssize_t b)
{
    return memchr(t + a, 'e', (size_t)(b - a)) != NULL || memchr(t + a, 'E', (size_t)(b - a)) != NULL;
}

/* A str | None field: *out a new str, or NULL for null. */
static Py_ssize_t
es_opt_str(const char *t, Py_ssize_t n, Py_ssize_t p, PyObject **out)
{
    int present;
    PyObject *v = NULL;
    Py_ssize_t e = es_str_or_null(t, n, p, &v, &present);
    if (e < 0)
        return e;
    if (v == Py_None)
        Py_CLEAR(v);
    Py_XSETREF(*out, v);
    return e;
}

/* Iterates the members of the object at p ('{'); for each: the key t[a:b) (keys with
 * escapes or non-ASCII bytes are declined when `plain`; sp_ tells whether it has escapes)
 * and its value's offset in v; the body sets p after the value (negative: fail). */
#define ES_MEMBERS(t, n, p, plain, a, b, v, FAIL, ...) /* ...: the body */          \
    do {                                                                             \
        int more_ = 1, sp_, asc_;                                                    \
        if (p >= n || t[p] != '{') {                                                 \
            p = ES_DECLINE;                                                          \
            FAIL;                                                                    \
        }                                                                            \
        p = es_ws(t, n, p + 1);                                                      \
        if (p < n && t[p] == '}')                                                    \
            more_ = 0, p++;                                                          \
        while (more_) {                                                              \
            if ((v = es_key(t, n, p, &a, &b, &sp_, &asc_)) < 0 ||                    \
                (plain && (sp_ || !asc_))) {                                         \
                p = ES_DECLINE;                                                      \
                FAIL;                                                                \
            }                                                                        \
            __VA_ARGS__                                                              \
            if (p < 0)                                                               \
                FAIL;                                                                \
            if ((p = es_after_value(t, n, p, '}', &more_)) < 0)                      \
                FAIL;                                                                \
        }                                                                            \
    } while (0)
#define ES_RETURN_P return p

/* The bit (1 << its index in names) of the field t[a:b) of a msgspec Struct, 0 for a key
 * it skips, -1 for a field seen before (msgspec keeps the last: not judged). */
static int
es_field(const char *t, Py_ssize_t a, Py_ssize_t b, const char *const *names, int *seen)
{
    for (int i = 0; names[i] != NULL; i++)
        if (es_key_is(t, a, b, names[i])) {
            if (*seen & (1 << i))
                return -1;
            *seen |= 1 << i;
            return 1 << i;
        }
    return 0;
}

static const char *const es_val_fields[] = {"id", "numeric-id", "entity-type", "time",
                                            "precision", NULL};
static const char *const es_snak_fields[] = {"snaktype", "property", "datavalue", NULL};
static const char *const es_datavalue_fields[] = {"value", "type", NULL};
static const char *const es_claim_fields[] = {"mainsnak", "rank", "id", "qualifiers", NULL};

/* datavalue.value (str | _Val | int | float | list[Any] | None) into *val. */
static Py_ssize_t
es_group_value(const char *t, Py_ssize_t n, Py_ssize_t p, es_val *val)
{
    long long num;
    Py_ssize_t e, a, b, v;
    if (es_quote(t, n, p)) { /* a str: decoded by msgspec, so it must be UTF-8 */
        PyObject *s = NULL;
        e = es_opt_str(t, n, p, &s);
        Py_XDECREF(s);
        return e;
    }
    if (es_is_null(t, n, p))
        return p + 4;
    if (p < n && (t[p] == '-' || (t[p] >= '0' && t[p] <= '9'))) {
        int k = es_number(t, n, p, &e, &num); /* int | float; a long int: not judged */
        return k == 1 || (k == 2 && !es_has_exponent(t, p, e)) ? e : ES_DECLINE;
    }
    if (p >= n || t[p] != '{')
        return ES_DECLINE; /* a list (decoded into Python objects) or a boolean */
    val->is_val = 1;
    int seen = 0;
    ES_MEMBERS(t, n, p, 1, a, b, v, ES_RETURN_P, {
        int bit = es_field(t, a, b, es_val_fields, &seen);
        if (bit < 0)
            return ES_DECLINE;
        if (bit == 1)
            p = es_opt_str(t, n, v, &val->id);
        else if (bit == 4)
            p = es_opt_str(t, n, v, &val->etype);
        else if (bit == 8)
            p = es_opt_str(t, n, v, &val->time);
        else if (bit == 2) {
            if (es_is_null(t, n, v))
                p = v + 4;
            else if (es_number(t, n, v, &p, &val->num) == 1)
                val->has_num = 1;
            else
                return ES_DECLINE; /* not an int, or a big one */
        }
        else if (bit == 16) {
            if (es_is_null(t, n, v))
                p = v + 4;
            else {
                int k = es_number(t, n, v, &p, &val->prec);
                if (k != 1 && (k != 2 || es_has_exponent(t, v, p)))
                    return ES_DECLINE; /* an int over 18 digits, a float with an exponent */
                val->prec_kind = k;
            }
        }
        else
            p = es_skip_value(t, n, v, 6);
    });
    return p;
}

static Py_ssize_t
es_group_snak(const char *t, Py_ssize_t n, Py_ssize_t p, es_snak *s)
{
    Py_ssize_t a, b, v;
    int seen = 0;
    ES_MEMBERS(t, n, p, 1, a, b, v, ES_RETURN_P, {
        int bit = es_field(t, a, b, es_snak_fields, &seen);
        if (bit < 0)
            return ES_DECLINE;
        if (bit == 1 || bit == 2) {
            PyObject **slot = bit == 1 ? &s->snaktype : &s->property;
            p = es_opt_str(t, n, v, slot);
            if (p >= 0 && *slot == NULL)
                return ES_DECLINE; /* a required str */
        }
        else if (bit == 4) {
            if (es_is_null(t, n, v))
                p = v + 4;
            else {
                int seen2 = 0;
                Py_ssize_t a2, b2, v2;
                p = v;
                ES_MEMBERS(t, n, p, 1, a2, b2, v2, ES_RETURN_P, {
                    int bit2 = es_field(t, a2, b2, es_datavalue_fields, &seen2);
                    if (bit2 < 0)
                        return ES_DECLINE;
                    if (bit2 == 1)
                        p = es_group_value(t, n, v2, &s->val);
                    else if (bit2 == 2)
                        p = es_opt_str(t, n, v2, &s->vtype);
                    else
                        p = es_skip_value(t, n, v2, 5);
                });
            }
        }
        else
            p = es_skip_value(t, n, v, 4);
    });
    return (seen & 3) == 3 ? p : ES_DECLINE;
}

static int
es_str_is(PyObject *s, const char *lit)
{
    return s != NULL && PyUnicode_CompareWithASCIIString(s, lit) == 0;
}

/* wikidata._entity_value_id: *eid and *etype new references or NULL (None). */
static int
es_entity_value_id(es_val *v, PyObject **eid, PyObject **etype)
{
    *eid = *etype = NULL;
    if (!v->is_val)
        return 0;
    *eid = Py_XNewRef(v->id);
    *etype = Py_XNewRef(v->etype);
    static const char *kinds[] = {"item", "property", "lexeme", "form", "sense"};
    static const char prefixes[] = {'Q', 'P', 'L', 'L', 'L'};
    if (*eid == NULL && v->has_num && *etype != NULL) {
        for (int i = 0; i < 5; i++)
            if (es_str_is(*etype, kinds[i])) {
                *eid = PyUnicode_FromFormat("%c%lld", prefixes[i], v->num);
                if (*eid == NULL)
                    return -1;
                break;
            }
    }
    if (*etype == NULL && *eid != NULL && PyUnicode_GET_LENGTH(*eid) > 0) {
        Py_UCS4 c = PyUnicode_READ_CHAR(*eid, 0);
        const char *kind = c == 'Q' ? "item" : c == 'P' ? "property" : c == 'L' ? "lexeme"
                           : c == 'M' ? "mediainfo" : NULL;
        if (kind != NULL && (*etype = PyUnicode_FromString(kind)) == NULL)
            return -1;
    }
    return 0;
}

/* wikidata._qualifier for one snak of property key qpid. */
static PyObject *
es_qualifier(PyObject *qual_type, es_snak *s, PyObject *qpid)
{
    PyObject *vals[5] = {NULL}, *r = NULL;
    vals[0] = PyUnicode_GET_LENGTH(s->property) ? s->property : qpid;
    vals[2] = vals[3] = vals[4] = Py_None;
    PyObject *eid = NULL, *etype = NULL, *kind = NULL, *prec = NULL;
    if (!es_str_is(s->snaktype, "value"))
        vals[1] = s->snaktype;
    else if (es_str_is(s->vtype, "wikibase-entityid")) {
        if (es_entity_value_id(&s->val, &eid, &etype) < 0)
            goto done;
        if (etype != NULL && PyUnicode_GET_LENGTH(etype) > 0)
            vals[1] = etype;
        else if ((vals[1] = kind = PyUnicode_FromString("entity")) == NULL)
            goto done;
        if (eid != NULL && es_str_is(vals[1], "item"))
            vals[4] = eid;
    }
    else if (es_str_is(s->vtype, "time") && s->val.is_val) {
        vals[1] = s->vtype;
        vals[2] = s->val.time != NULL ? s->val.time : Py_None;
        if (s->val.prec_kind == 1) {
            if ((prec = PyLong_FromLongLong(s->val.prec)) == NULL)
                goto done;
            vals[3] = prec;
        }
    }
    else if (s->vtype != NULL && PyUnicode_GET_LENGTH(s->vtype) > 0)
        vals[1] = s->vtype;
    else if ((vals[1] = kind = PyUnicode_FromString("unknown")) == NULL)
        goto done;
    r = PyObject_Vectorcall(qual_type, vals, 5, NULL);
done:
    Py_XDECREF(eid);
    Py_XDECREF(etype);
    Py_XDECREF(kind);
    Py_XDECREF(prec);
    return r;
}

/* The qualifiers value at p (dict[str, list[_Snak]] | list | None): appends Qualifiers to
 * the list quals. */
static Py_ssize_t
es_group_qualifiers(const char *t, Py_ssize_t n, Py_ssize_t p, PyObject *qual_type,
                    PyObject *quals)
{
    Py_ssize_t a, b, v;
    if (es_is_null(t, n, p))
        return p + 4;
    if (p < n && t[p] == '[') { /* PHP's empty map; a non-empty list: ValidationError */
        p = es_ws(t, n, p + 1);
        return p < n && t[p] == ']' ? p + 1 : ES_DECLINE;
    }
    PyObject *seen = PySet_New(NULL), *qpid = NULL;
    if (seen == NULL)
        return ES_ERROR;
    ES_MEMBERS(t, n, p, 0, a, b, v, goto out, {
        int err;
        qpid = es_decode_string(t, a, b, sp_, &err); /* a dict key: decoded strictly */
        if (qpid == NULL) {
            p = err ? ES_ERROR : ES_DECLINE;
            goto out;
        }
        int dup = PySet_Contains(seen, qpid);
        if (dup != 0 || PySet_Add(seen, qpid) < 0) { /* msgspec keeps the last: not judged */
            p = dup > 0 ? ES_DECLINE : ES_ERROR;
            goto out;
        }
        p = v;
        if (p >= n || t[p] != '[') {
            p = ES_DECLINE;
            goto out;
        }
        int more = 1;
        p = es_ws(t, n, p + 1);
        if (p < n && t[p] == ']')
            more = 0, p++;
        while (more) {
            es_snak s = {0};
            p = es_group_snak(t, n, p, &s);
            PyObject *q = p < 0 ? NULL : es_qualifier(qual_type, &s, qpid);
            es_snak_clear(&s);
            if (q == NULL) {
                if (p >= 0)
                    p = ES_ERROR;
                goto out;
            }
            int failed = PyList_Append(quals, q);
            Py_DECREF(q);
            if (failed) {
                p = ES_ERROR;
                goto out;
            }
            if ((p = es_after_value(t, n, p, ']', &more)) < 0)
                goto out;
        }
        Py_CLEAR(qpid);
    });
out:
    Py_XDECREF(qpid);
    Py_DECREF(seen);
    return p;
}

/* One claim object at p: appends its Statement to out. */
static Py_ssize_t
es_group_claim(const char *t, Py_ssize_t n, Py_ssize_t p, PyObject *stmt_type,
               PyObject *qual_type, PyObject *out)
{
    Py_ssize_t a, b, v;
    es_snak main = {0};
    PyObject *rank = NULL, *id = NULL, *quals = PyList_New(0), *eid = NULL, *etype = NULL;
    int seen = 0;
    if (quals == NULL)
        return ES_ERROR;
    ES_MEMBERS(t, n, p, 1, a, b, v, goto out, {
        int bit = es_field(t, a, b, es_claim_fields, &seen);
        if (bit < 0) {
            p = ES_DECLINE;
            goto out;
        }
        if (bit == 1)
            p = es_group_snak(t, n, v, &main);
        else if (bit == 2) {
            p = es_opt_str(t, n, v, &rank);
            if (p >= 0 && rank == NULL)
                p = ES_DECLINE; /* rank: str = "normal"; null is a ValidationError */
        }
        else if (bit == 4)
            p = es_opt_str(t, n, v, &id);
        else if (bit == 8)
            p = es_group_qualifiers(t, n, v, qual_type, quals);
        else
            p = es_skip_value(t, n, v, 3);
    });
    if (!(seen & 1)) {
        p = ES_DECLINE; /* mainsnak is required */
        goto out;
    }
    if (rank == NULL && (rank = PyUnicode_FromString("normal")) == NULL) {
        p = ES_ERROR;
        goto out;
    }
    PyObject *value_qid = Py_None;
    if (es_str_is(main.snaktype, "value") && es_str_is(main.vtype, "wikibase-entityid")) {
        if (es_entity_value_id(&main.val, &eid, &etype) < 0) {
            p = ES_ERROR;
            goto out;
        }
        if (eid != NULL && es_str_is(etype, "item"))
            value_qid = eid;
    }
    PyObject *qt = PyList_AsTuple(quals);
    if (qt == NULL) {
        p = ES_ERROR;
        goto out;
    }
    PyObject *args[6] = {id != NULL ? id : Py_None, main.property, value_qid, main.snaktype,
                         rank, qt};
    PyObject *st = PyObject_Vectorcall(stmt_type, args, 6, NULL);
    Py_DECREF(qt);
    if (st == NULL || PyList_Append(out, st) < 0)
        p = ES_ERROR;
    Py_XDECREF(st);
out:
    es_snak_clear(&main);
    Py_XDECREF(rank);
    Py_XDECREF(id);
    Py_XDECREF(quals);
    Py_XDECREF(eid);
    Py_XDECREF(etype);
    return p;
}

/* The group (list[_Claim]) at t + p, validated as it is read: a tuple of Statements and
 * *end after its ']', or NULL (declined when no exception is set). */
static PyObject *
es_group_statements(const char *t, Py_ssize_t e, Py_ssize_t p, PyObject *stmt_type,
                    PyObject *qual_type, Py_ssize_t *end)
{
    if (p >= e || t[p] != '[')
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    int more = 1;
    p = es_ws(t, e, p + 1);
    if (p < e && t[p] == ']')
        more = 0, p++;
    while (more) {
        p = es_group_claim(t, e, p, stmt_type, qual_type, out);
        if (p < 0 || (p = es_after_value(t, e, p, ']', &more)) < 0)
            break;
    }
    PyObject *r = NULL;
    if (p >= 0) {
        r = PyList_AsTuple(out);
        *end = p;
    }
    Py_DECREF(out);
    if (r == NULL && PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear(); /* anything unexpected: the Python decoder decides */
    return r;
}

/* claims members: pid -> (pid, statements), the statements from the group decoder (called
 * only for groups that changed); a ValueError from it (msgspec's errors, a bad UTF-8
 * string) declines the text: the Python path then decides on all of it. */
static Py_ssize_t
es_fresh_group(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
               es_member *m)
{
    int err;
    if (special) /* msgspec would decode the key's escapes */
        return ES_DECLINE;
    PyObject *pid = es_decode_string(x->t, a, b, 0, &err);
    if (pid == NULL)
        return err ? ES_ERROR : ES_DECLINE;
    Py_ssize_t e = ES_DECLINE;
    PyObject *st = NULL;
    if (x->s->stmt_type != NULL) { /* read and validated in one pass */
        st = es_group_statements(x->t, x->n, v, x->s->stmt_type, x->s->qual_type, &e);
        if (st == NULL && PyErr_Occurred()) {
            Py_DECREF(pid);
            return ES_ERROR;
        }
    }
    if (st != NULL)
        goto decoded;
    if ((e = es_skip_value(x->t, x->n, v, 2)) < 0) {
        Py_DECREF(pid);
        return ES_DECLINE;
    }
    span group = {x->t + v, x->t + e};
    PyObject *raw = unescape_span(group); /* the group's JSON: no numeric references here */
    if (raw == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "group not unescaped");
    if (raw != NULL) {
        PyObject *args[2] = {pid, raw};
        st = PyObject_Vectorcall(x->s->group_decoder, args, 2, NULL);
        Py_DECREF(raw);
    }
    if (st == NULL) {
        Py_DECREF(pid);
        if (PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return ES_DECLINE;
        }
        return ES_ERROR;
    }
    if (!PyTuple_CheckExact(st)) {
        Py_DECREF(pid);
        Py_DECREF(st);
        PyErr_SetString(PyExc_TypeError, "the group decoder must return a tuple");
        return ES_ERROR;
    }
decoded:
    m->value = PyTuple_Pack(2, pid, st);
    Py_DECREF(pid);
    Py_DECREF(st);
    return m->value == NULL ? ES_ERROR : e;
}

/* No two claims groups with the same property (msgspec's dict would keep the last). */
static int
es_unique_pids(es_member *g, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(g[i].value, 0);
        Py_hash_t ha = PyObject_Hash(a);
        for (Py_ssize_t j = 0; j < i; j++) {
            PyObject *b = PyTuple_GET_ITEM(g[j].value, 0);
            if (a == b || (PyObject_Hash(b) == ha && PyUnicode_Compare(a, b) == 0))
                return 0;
        }
    }
    return 1;
}

static const struct {
    const char *name;
    int kind;
} es_keys[] = {
    {"id", K_ID}, {"type", K_TYPE}, {"datatype", K_DATATYPE}, {"labels", K_LABELS},
    {"descriptions", K_DESCRIPTIONS}, {"sitelinks", K_SITELINKS}, {"claims", K_CLAIMS},
    {"aliases", K_ALIASES},
    /* the legacy serialization, redirects and mediainfo: the Python path */
    {"entity", K_DECLINE}, {"label", K_DECLINE}, {"description", K_DECLINE},
    {"links", K_DECLINE}, {"redirect", K_DECLINE}, {"statements", K_DECLINE},
};

/* A top-level key (as in _Entity): what the scanner does with its value. */
static int
es_kind(const char *t, Py_ssize_t a, Py_ssize_t b)
{
    for (size_t i = 0; i < sizeof(es_keys) / sizeof(es_keys[0]); i++)
        if (es_key_is(t, a, b, es_keys[i].name))
            return es_keys[i].kind;
    return K_OTHER;
}

/* The value of labels/descriptions/sitelinks: Struct | list | None as msgspec reads it;
 * m->value is the en (enwiki) str or None. */
static Py_ssize_t
es_terms(es_ctx *x, Py_ssize_t v, int ti, es_fresh_fn fresh, es_member *m)
{
    const char *t = x->t;
    Py_ssize_t n = x->n;
    es_table *tb = &x->s->tab[ti];
    es_clear_next(tb);
    if (v >= n)
        return ES_DECLINE;
    if (t[v] == '[') {
        m->present = 1;
        m->value = Py_NewRef(Py_None);
        return es_skip_value(t, n, v, 1);
    }
    if (es_is_null(t, n, v)) {
        m->value = Py_NewRef(Py_None);
        return v + 4;
    }
    if (t[v] != '{')
        return ES_DECLINE;
    m->present = 1;
    Py_ssize_t e = es_object(x, v, ti, fresh);
    if (e < 0)
        return e;
    PyObject *found = NULL;
    for (Py_ssize_t i = 0; i < tb->nnext; i++)
        if (tb->next[i].kind == K_EN) {
            if (found != NULL)
                return ES_DECLINE; /* a duplicate "en" */
            found = tb->next[i].value;
        }
    m->value = Py_NewRef(found != NULL ? found : Py_None);
    return e;
}

/* One fresh top-level member. */
static Py_ssize_t
es_fresh_top(es_ctx *x, Py_ssize_t a, Py_ssize_t b, int special, int ascii, Py_ssize_t v,
             es_member *m)
{
    const char *t = x->t;
    Py_ssize_t n = x->n, e;
    if (special || !ascii)
        return ES_DECLINE;
    m->kind = es_kind(t, a, b);
    switch (m->kind) {
    case K_DECLINE:
        return ES_DECLINE;
    case K_ID:
    case K_TYPE:
    case K_DATATYPE:
        return es_str_or_null(t, n, v, &m->value, &m->present);
    case K_LABELS:
        return es_terms(x, v, T_LABELS, es_fresh_label, m);
    case K_DESCRIPTIONS:
        return es_terms(x, v, T_DESCRIPTIONS, es_fresh_label, m);
    case K_SITELINKS:
        return es_terms(x, v, T_SITELINKS, es_fresh_sitelink, m);
    case K_ALIASES:
        es_clear_next(&x->s->tab[T_ALIASES]);
        if (v < n && t[v] == '{')
            return es_object(x, v, T_ALIASES, es_fresh_skip);
        return es_skip_value(t, n, v, 1);
    case K_CLAIMS: {
        es_table *tb = &x->s->tab[T_CLAIMS];
        es_clear_next(tb);
        m->present = 1;
        if (v < n && t[v] == '[') { /* PHP's empty map; a non-empty list: generic path */
            e = es_ws(t, n, v + 1);
            e = e < n && t[e] == ']' ? e + 1 : ES_DECLINE;
        }
        else if (v < n && t[v] == '{') {
            e = es_object(x, v, T_CLAIMS, es_fresh_group);
            if (e >= 0 && !es_unique_pids(tb->next, tb->nnext))
                e = ES_DECLINE;
        }
        else
            e = ES_DECLINE;
        if (e < 0)
            return e;
        Py_ssize_t total = 0, k = 0;
        for (Py_ssize_t i = 0; i < tb->nnext; i++)
            total += PyTuple_GET_SIZE(PyTuple_GET_ITEM(tb->next[i].value, 1));
        m->value = PyTuple_New(total);
        if (m->value == NULL)
            return ES_ERROR;
        for (Py_ssize_t i = 0; i < tb->nnext; i++) {
            PyObject *st = PyTuple_GET_ITEM(tb->next[i].value, 1);
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(st); j++)
                PyTuple_SET_ITEM(m->value, k++, Py_NewRef(PyTuple_GET_ITEM(st, j)));
        }
        return e;
    }
    default:
        return es_skip_value(t, n, v, 1);
    }
}

static int
es_sub_table(int kind)
{
    switch (kind) {
    case K_LABELS: return T_LABELS;
    case K_DESCRIPTIONS: return T_DESCRIPTIONS;
    case K_SITELINKS: return T_SITELINKS;
    case K_ALIASES: return T_ALIASES;
    case K_CLAIMS: return T_CLAIMS;
    }
    return -1;
}

/* The object at p ('{') into table ti's next buffer: each member byte-identical to one of
 * the previous text's (the one expected next, or the one after it) is taken over with
 * what was read from it; the others are read by `fresh`. Returns the offset after '}'. */
static Py_ssize_t
es_object(es_ctx *x, Py_ssize_t p, int ti, es_fresh_fn fresh)
{
    const char *t = x->t;
    Py_ssize_t n = x->n;
    EntityScanner *s = x->s;
    es_table *tb = &s->tab[ti];
    int more = 1;
    p = es_ws(t, n, p + 1);
    if (p < n && t[p] == '}')
        more = 0, p++;
    Py_ssize_t j = 0; /* the previous member expected next */
    while (more) {
        es_member *m = es_push(tb);
        if (m == NULL)
            return ES_ERROR;
        Py_ssize_t hit = -1;
        if (x->prev != NULL)
            for (Py_ssize_t k = j; k < j + 2 && k < tb->ncur; k++)
                if (es_same(x, p, tb->cur[k].off, tb->cur[k].len)) {
                    hit = k;
                    break;
                }
        if (hit >= 0) {
            *m = tb->cur[hit];
            m->off = p;
            Py_XINCREF(m->value);
            tb->nnext++;
            s->reused++;
            int sub = ti == T_TOP ? es_sub_table(m->kind) : -1;
            if (sub >= 0 && es_carry(s, sub, p - tb->cur[hit].off) < 0)
                return ES_ERROR;
            p += m->len;
            j = hit + 1;
        }
        else {
            Py_ssize_t a, b, v;
            int special, ascii;
            if ((v = es_key(t, n, p, &a, &b, &special, &ascii)) < 0)
                return ES_DECLINE;
            Py_ssize_t e = fresh(x, a, b, special, ascii, v, m);
            tb->nnext++; /* owned by the table from here on, even on failure */
            if (e < 0)
                return e;
            m->off = p;
            m->len = e - p;
            p = e;
            j++;
        }
        if ((p = es_after_value(t, n, p, '}', &more)) < 0)
            return ES_DECLINE;
    }
    return p;
}

static void
es_drop_next(EntityScanner *s)
{
    for (int i = 0; i < T_N; i++)
        es_clear_next(&s->tab[i]);
}

/* Scan one escaped text (bytes): a new EntityScan, or NULL: declined when no exception is
 * set. Only an accepted text becomes the one the next scan compares with. */
static PyObject *
es_scan(EntityScanner *s, PyObject *text)
{
    es_ctx x = {PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text),
                s->prev != NULL ? PyBytes_AS_STRING(s->prev) : NULL, s};
    es_drop_next(s);
    Py_ssize_t p = es_ws(x.t, x.n, 0);
    Py_ssize_t r = p < x.n && x.t[p] == '{' ? es_object(&x, p, T_TOP, es_fresh_top) : ES_DECLINE;
    if (r >= 0 && es_ws(x.t, x.n, r) != x.n)
        r = ES_DECLINE; /* trailing characters */
    es_member *by_kind[K_DECLINE] = {NULL};
    es_table *top = &s->tab[T_TOP];
    for (Py_ssize_t i = 0; r >= 0 && i < top->nnext; i++) {
        es_member *m = &top->next[i];
        if (m->kind == K_OTHER || m->kind == K_ALIASES)
            continue;
        if (by_kind[m->kind] != NULL) /* a duplicate field: msgspec keeps the last */
            r = ES_DECLINE;
        by_kind[m->kind] = m;
    }
    int current = 0;
    static const int current_kinds[] = {K_ID, K_TYPE, K_LABELS, K_DESCRIPTIONS, K_SITELINKS};
    for (int i = 0; i < 5; i++)
        if (by_kind[current_kinds[i]] != NULL && by_kind[current_kinds[i]]->present)
            current = 1;
    if (r >= 0 && !current) /* no current-format key: the generic path judges */
        r = ES_DECLINE;
    PyObject *result = NULL;
    if (r >= 0) {
        static const int order[] = {K_ID, K_TYPE, K_DATATYPE, K_LABELS, K_DESCRIPTIONS,
                                    K_SITELINKS, K_CLAIMS};
        PyObject *vals[8], *empty = PyTuple_New(0); /* no claims: no statements */
        vals[0] = text;
        for (int i = 0; i < 7; i++) {
            es_member *m = by_kind[order[i]];
            vals[i + 1] = m != NULL && m->value != NULL ? m->value
                          : order[i] == K_CLAIMS ? empty : Py_None;
        }
        if (empty != NULL)
            result = PyObject_Vectorcall(s->scan_type, vals, 8, NULL);
        Py_XDECREF(empty);
    }
    if (result == NULL) {
        es_drop_next(s);
        if (!PyErr_Occurred())
            s->declined++;
        return NULL;
    }
    /* commit: this text is the one the next scan compares with */
    for (int i = 0; i < T_N; i++) {
        es_table *tb = &s->tab[i];
        es_member *old = tb->cur;
        Py_ssize_t nold = tb->ncur;
        tb->cur = tb->next;
        tb->ncur = tb->nnext;
        tb->next = old;
        tb->nnext = nold;
        es_clear_next(tb);
    }
    Py_INCREF(text);
    Py_XSETREF(s->prev, text);
    s->scanned++;
    return result;
}

static PyObject *
EntityScanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *scan_type, *group_decoder, *stmt_type = NULL, *qual_type = NULL;
    if (!PyArg_ParseTuple(args, "OO|OO:EntityScanner", &scan_type, &group_decoder, &stmt_type,
                          &qual_type))
        return NULL;
    if ((stmt_type == NULL) != (qual_type == NULL)) {
        PyErr_SetString(PyExc_TypeError, "give both Statement and Qualifier, or neither");
        return NULL;
    }
    EntityScanner *s = (EntityScanner *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->scan_type = Py_NewRef(scan_type);
    s->group_decoder = Py_NewRef(group_decoder);
    s->stmt_type = Py_XNewRef(stmt_type);
    s->qual_type = Py_XNewRef(qual_type);
    return (PyObject *)s;
}

static void
EntityScanner_reset_state(EntityScanner *s)
{
    for (int i = 0; i < T_N; i++) {
        es_clear_next(&s->tab[i]);
        es_release(s->tab[i].cur, s->tab[i].ncur);
        s->tab[i].ncur = 0;
    }
    Py_CLEAR(s->prev);
}

static void
EntityScanner_dealloc(EntityScanner *s)
{
    EntityScanner_reset_state(s);
    for (int i = 0; i < T_N; i++) {
        PyMem_Free(s->tab[i].cur);
        PyMem_Free(s->tab[i].next);
    }
    Py_CLEAR(s->scan_type);
    Py_CLEAR(s->group_decoder);
    Py_CLEAR(s->stmt_type);
    Py_CLEAR(s->qual_type);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *
EntityScanner_scan(EntityScanner *s, PyObject *text)
{
    if (!PyBytes_CheckExact(text)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    PyObject *r = es_scan(s, text);
    if (r == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

static PyObject *
EntityScanner_reset(EntityScanner *s, PyObject *Py_UNUSED(ignored))
{
    EntityScanner_reset_state(s);
    Py_RETURN_NONE;
}

static PyObject *
EntityScanner_decode_group(EntityScanner *s, PyObject *group)
{
    if (!PyBytes_CheckExact(group) || s->stmt_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "decode_group() takes bytes (and a scanner with types)");
        return NULL;
    }
    const char *t = PyBytes_AS_STRING(group);
    Py_ssize_t n = PyBytes_GET_SIZE(group), end;
    PyObject *r = es_group_statements(t, n, 0, s->stmt_type, s->qual_type, &end);
    if (r != NULL && es_ws(t, n, end) != n)
        Py_CLEAR(r); /* trailing characters */
    if (r == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

static PyMethodDef EntityScanner_methods[] = {
    {"scan", (PyCFunction)EntityScanner_scan, METH_O,
     "scan(escaped: bytes) -> EntityScan | None (None: declined, take the Python path)"},
    {"decode_group", (PyCFunction)EntityScanner_decode_group, METH_O,
     "decode_group(escaped group bytes) -> tuple of Statements | None (None: declined)"},
    {"reset", (PyCFunction)EntityScanner_reset, METH_NOARGS,
     "forget the previous text (nothing is compared with it any more)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef EntityScanner_members[] = {
    {"scanned", T_PYSSIZET, offsetof(EntityScanner, scanned), READONLY, "texts accepted"},
    {"declined", T_PYSSIZET, offsetof(EntityScanner, declined), READONLY, "texts declined"},
    {"reused", T_PYSSIZET, offsetof(EntityScanner, reused), READONLY,
     "members and claims groups taken over from the previous text"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject EntityScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emerge_lib.dumps._xmlfast.EntityScanner",
    .tp_basicsize = sizeof(EntityScanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "EntityScanner(EntityScan, group_decoder[, Statement, Qualifier]): entity JSON "
              "read from escaped XML text (see the C source); one per stream, not "
              "thread-safe.",
    .tp_new = EntityScanner_new,
    .tp_dealloc = (destructor)EntityScanner_dealloc,
    .tp_methods = EntityScanner_methods,
    .tp_members = EntityScanner_members,
};


/* One canonical revision body at buf + pos (just after "<revision>"): a new Revision and
 * *end_out = the offset of its "</revision>"; NULL without an exception to decline, NULL
 * with one (MemoryError) on failure. */
#define DECLINE return NULL
static PyObject *
parse_one(const char *buf, const char *e, Py_ssize_t pos, PyObject *page_id, int text_bytes,
          PyObject *rev_type, EntityScanner *scanner, Py_ssize_t *end_out)
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

    PyObject *vals[19] = {NULL};
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
    if ((vals[10] = repeated_str(model, &model_cache)) == NULL ||
        (vals[11] = repeated_str(fmt, &format_cache)) == NULL)
        goto fallback;
    if (scanner != NULL && text_bytes && fmt.b - fmt.a == 16 &&
        memcmp(fmt.a, "application/json", 16) == 0) {
        PyObject *escaped = PyBytes_FromStringAndSize(text.a, text.b - text.a);
        if (escaped == NULL)
            goto fallback;
        vals[18] = es_scan(scanner, escaped);
        Py_DECREF(escaped);
        if (vals[18] == NULL && PyErr_Occurred())
            goto fallback;
    }
    if (vals[18] != NULL)
        vals[12] = Py_NewRef(Py_None); /* read by the scanner: see Revision.entity */
    else {
        vals[18] = Py_NewRef(Py_None);
        if (text_bytes)
            vals[12] = unescape_span(text);
        else
            vals[12] = unescape_str(text);
        if (vals[12] == NULL)
            goto fallback;
    }
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
    if ((vals[17] = PyTuple_New(0)) == NULL)
        goto fallback;
    result = PyObject_Vectorcall(rev_type, vals, 19, NULL);
    for (int i = 0; i < 19; i++)
        Py_XDECREF(vals[i]);
    *end_out = end;
    return result;

fallback:
    for (int i = 0; i < 19; i++)
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
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "canonical_revisions(buf, pos, page_id, text_bytes, "
                                         "Revision[, entity_scanner])");
        return NULL;
    }
    EntityScanner *scanner = NULL;
    if (nargs == 6 && args[5] != Py_None) {
        if (!PyObject_TypeCheck(args[5], &EntityScannerType)) {
            PyErr_SetString(PyExc_TypeError, "entity_scanner must be an EntityScanner or None");
            return NULL;
        }
        scanner = (EntityScanner *)args[5];
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
        PyObject *rev = parse_one(buf, e, p + 10 - buf, args[2], text_bytes, args[4], scanner,
                                  &end);
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

/* ---------------------------------------------------------------------------------------
 * crc32(data, value=0): zlib.crc32's result, with carry-less multiplication (PCLMULQDQ)
 * where the CPU has it. Why: the 7z reader checks the CRC32 of every decompressed byte;
 * zlib's table-driven crc32 costs about 0.3 ms per MB here, an eighth of LZMA decoding.
 * Folding 64 bytes per step with PCLMULQDQ after "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction" (Gopal, Ozturk et al., Intel, 2009), with the
 * bit-reflected constants of the gzip polynomial given there. The GIL is released.
 * ------------------------------------------------------------------------------------- */
static uint32_t crc_table[256];
static int crc_use_clmul = 0;

static void
crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

static uint32_t
crc_bytes(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* crc (pre-inverted) of buf[0:len], len >= 64 and a multiple of 16 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc_clmul(const unsigned char *buf, size_t len, uint32_t crc)
{
    static const uint64_t k1k2[2] __attribute__((aligned(16))) = {0x0154442bd4, 0x01c6e41596};
    static const uint64_t k3k4[2] __attribute__((aligned(16))) = {0x01751997d0, 0x00ccaa009e};
    static const uint64_t k5k0[2] __attribute__((aligned(16))) = {0x0163cd6124, 0x0000000000};
    static const uint64_t poly[2] __attribute__((aligned(16))) = {0x01db710641, 0x01f7011641};
    __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8, y5, y6, y7, y8;

    x1 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
    x2 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
    x3 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
    x4 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    x0 = _mm_load_si128((const __m128i *)k1k2);
    buf += 64;
    len -= 64;
    while (len >= 64) { /* fold four 128-bit lanes in parallel */
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
        x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
        x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
        x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
        y5 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
        y6 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
        y7 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
        y8 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), y5);
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), y6);
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), y7);
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), y8);
        buf += 64;
        len -= 64;
    }
    x0 = _mm_load_si128((const __m128i *)k3k4); /* fold the four lanes into one */
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    while (len >= 16) { /* then 16 bytes at a time */
        x2 = _mm_loadu_si128((const __m128i *)buf);
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        buf += 16;
        len -= 16;
    }
    x2 = _mm_clmulepi64_si128(x1, x0, 0x10); /* 128 bits to 64 */
    x3 = _mm_setr_epi32(~0, 0, ~0, 0);
    x1 = _mm_srli_si128(x1, 8);
    x1 = _mm_xor_si128(x1, x2);
    x0 = _mm_loadl_epi64((const __m128i *)k5k0);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, x3);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    x0 = _mm_load_si128((const __m128i *)poly); /* Barrett reduction to 32 bits */
    x2 = _mm_and_si128(x1, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
    x2 = _mm_and_si128(x2, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static PyObject *
crc32(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32(data, value=0)");
        return NULL;
    }
    unsigned long value = 0;
    if (nargs == 2) {
        value = PyLong_AsUnsignedLongMask(args[1]);
        if (value == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = view.buf;
    size_t len = (size_t)view.len;
    uint32_t crc = ~(uint32_t)value;
    Py_BEGIN_ALLOW_THREADS
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (crc_use_clmul && len >= 64) {
        size_t whole = len & ~(size_t)15;
        crc = crc_clmul(buf, whole, crc);
        buf += whole;
        len -= whole;
    }
#endif
    crc = crc_bytes(crc, buf, len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(~crc);
}

static PyMethodDef methods[] = {
    {"crc32", (PyCFunction)(void (*)(void))crc32, METH_FASTCALL,
     "crc32(data, value=0) -> int\n\n"
     "zlib.crc32(data, value), with PCLMULQDQ where the CPU has it (the GIL released)."},
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
    if (PyType_Ready(&EntityScannerType) < 0)
        return NULL;
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EntityScanner", (PyObject *)&EntityScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
