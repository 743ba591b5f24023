/* ------------------------------------------------------------------------------------
 * Spans of the dump buffer and the strict readers of a canonical revision's fields (ids,
 * timestamps of the form YYYY-MM-DDTHH:MM:SSZ, names, <text> attributes), used by the
 * batch of canonical revisions (revisions.c) and by the claims decoder (claims.c). Each
 * reader declines (returns 0 or NULL without an exception) whatever it would have to judge.
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

