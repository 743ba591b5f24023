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

