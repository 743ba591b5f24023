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
    .tp_name = "emerge_lib.dumps._native.EntityScanner",
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

