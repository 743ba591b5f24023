/* ------------------------------------------------------------------------------------
 * The canonical <revision> layout (dumps.xml.revision._REV_HEAD / _REV_TAIL_END) in C.
 *
 * canonical_revisions(buf, pos, page_id, text_bytes, Revision) -> (revisions, pos)
 *
 * A pure accelerator of dumps.xml.revision._parse_canonical_revision(buf, pos, -1, ...): for each
 * revision it builds the identical Revision, or stops whenever anything differs from the strict
 * canonical form (a value it would have to judge, an unusual attribute, a timestamp not
 * of the form YYYY-MM-DDTHH:MM:SSZ, non-UTF-8 names, ids over 18 digits, the buffer
 * ending early): what it stops at is left to the Python function, the specification.
 */

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

