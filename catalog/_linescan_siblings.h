/* Sibling keys (catalog/siblings.py) for the line loop: included by _linescan_lines.h. */

static Py_ssize_t digit_run(const char *p, Py_ssize_t at, Py_ssize_t n) {
    while (at < n && p[at] >= '0' && p[at] <= '9') at++;
    return at;
}

/* Volatile.regex's group in line p[0:n]: the leftmost place where one of `after` is followed by \d+ or \d+/\d+
 * and then `before` (at one place, the first of `after` that fits). before never starts with a digit or '/', so
 * the longest run is the only one that can fit, as in the regex. Returns 1 and the group's [from, to), or 0. */
static int volatile_span(const char *p, Py_ssize_t n, PyObject *after, PyObject *before, Py_ssize_t *from,
                         Py_ssize_t *to) {
    const char *b = PyBytes_AS_STRING(before);
    Py_ssize_t blen = PyBytes_GET_SIZE(before), best = -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(after); k++) {
        PyObject *a = PyTuple_GET_ITEM(after, k);
        Py_ssize_t alen = PyBytes_GET_SIZE(a), at = 0;
        const char *hit;
        while (at + alen <= n && (hit = memmem(p + at, (size_t)(n - at), PyBytes_AS_STRING(a), (size_t)alen))) {
            Py_ssize_t pos = hit - p, d = pos + alen, end = digit_run(p, d, n);
            if (best >= 0 && pos >= best) break; /* an earlier `after` fits at or before this place */
            if (end > d && end < n && p[end] == '/') {
                Py_ssize_t more = digit_run(p, end + 1, n);
                if (more > end + 1) end = more;
            }
            if (end > d && end + blen <= n && memcmp(p + end, b, (size_t)blen) == 0) {
                best = pos, *from = d, *to = end;
                break;
            }
            at = pos + 1;
        }
    }
    return best >= 0;
}

/* (id, the line with its volatile digits zeroed), or the line itself where it has none: new reference. */
static PyObject *masked_key(unsigned int id, PyObject *raw, PyObject *after, PyObject *before) {
    Py_ssize_t from, to;
    if (!volatile_span(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), after, before, &from, &to))
        return Py_NewRef(raw);
    PyObject *masked = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
    if (!masked) return NULL;
    char *m = PyBytes_AS_STRING(masked);
    for (Py_ssize_t i = from; i < to; i++)
        if (m[i] >= '1' && m[i] <= '9') m[i] = '0';
    return Py_BuildValue("(IN)", id, masked);
}

static int literals_ok(PyObject *spec, PyObject **after, PyObject **before) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(spec, 0)) ||
        !PyBytes_Check(PyTuple_GET_ITEM(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "siblings: {pattern id: ((after bytes, ...), before bytes)}");
        return 0;
    }
    *after = PyTuple_GET_ITEM(spec, 0), *before = PyTuple_GET_ITEM(spec, 1);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(*after); k++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(*after, k)) || !PyBytes_GET_SIZE(PyTuple_GET_ITEM(*after, k))) {
            PyErr_SetString(PyExc_TypeError, "siblings: after must hold non-empty bytes");
            return 0;
        }
    return 1;
}

/* sibling_key(id, line, (after, before)): the key the C line loop looks a sibling up by (for tests). */
static PyObject *sibling_key(PyObject *mod, PyObject *args) {
    unsigned int id;
    PyObject *raw, *spec, *after, *before;
    if (!PyArg_ParseTuple(args, "IO!O", &id, &PyBytes_Type, &raw, &spec) || !literals_ok(spec, &after, &before))
        return NULL;
    return masked_key(id, raw, after, before);
}

/* The sibling literals of pattern `id`, if it has any: borrowed. */
static PyObject *sibling_spec(PyObject *siblings, unsigned int id) {
    if (!siblings) return NULL;
    PyObject *key = PyLong_FromUnsignedLong(id);
    PyObject *spec = key ? PyDict_GetItemWithError(siblings, key) : NULL;
    Py_XDECREF(key);
    return spec;
}

/* memo[raw] = memo[key] = match, the memo emptied first once it holds `limit` keys (as Matcher's resolve does). */
static int remember(PyObject *memo, Py_ssize_t limit, PyObject *raw, PyObject *key, PyObject *match) {
    if (PyDict_GET_SIZE(memo) >= limit) PyDict_Clear(memo);
    return PyDict_SetItem(memo, raw, match) < 0 || PyDict_SetItem(memo, key, match) < 0 ? -1 : 0;
}

