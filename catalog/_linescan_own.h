/* Matcher.match's own LineMatch for each line (included by _linescan_lines.h).
 *
 * A memo shares one LineMatch among the repeats of a line; match() hands each line its own, with its own offsets
 * and, for a sibling (see catalog/siblings.py), its own text. own is (LineMatch, the context kinds whose lines
 * may be siblings, MAX_LINE_CHARS, the suffix of a truncated text): what Matcher.match would use. */

typedef struct {
    PyTypeObject *type; /* LineMatch: a tuple of (start, end, text, signature, fields, context) */
    PyObject *sibling_kinds;
    Py_ssize_t max_chars;
    PyObject *truncated;
} Own;

static int own_parse(PyObject *spec, Own *own) {
    if (!PyTuple_Check(spec) ||
        !PyArg_ParseTuple(spec, "O!O!nU", &PyType_Type, &own->type, &PyFrozenSet_Type, &own->sibling_kinds,
                          &own->max_chars, &own->truncated))
        return 0;
    if (!PyType_IsSubtype(own->type, &PyTuple_Type) || own->type->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "own: the match type must be a plain tuple subclass");
        return 0;
    }
    return 1;
}

/* Matcher.may_be_sibling: no entry, and a context kind that may stand for siblings. 1, 0, or -1 on error. */
static int may_be_sibling(Own *own, PyObject *match) {
    PyObject *context = PyTuple_GET_ITEM(match, 5), *kind, *value;
    if (PyTuple_GET_ITEM(match, 3) != Py_None || !PySet_GET_SIZE(own->sibling_kinds) || !PyDict_Check(context))
        return 0;
    Py_ssize_t pos = 0;
    while (PyDict_Next(context, &pos, &kind, &value)) {
        int found = PySet_Contains(own->sibling_kinds, kind);
        if (found) return found;
    }
    return 0;
}

/* catalog.matcher.line_text: the line decoded (invalid bytes replaced), trailing \r dropped, maybe truncated. */
static PyObject *own_text(Own *own, const char *p, Py_ssize_t n) {
    PyObject *text = PyUnicode_DecodeUTF8(p, n, "replace");
    if (!text) return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), keep = length;
    while (keep > 0 && PyUnicode_READ_CHAR(text, keep - 1) == '\r') keep--;
    if (keep == length && keep <= own->max_chars) return text;
    PyObject *cut = PyUnicode_Substring(text, 0, keep <= own->max_chars ? keep : own->max_chars);
    Py_DECREF(text);
    if (!cut || keep <= own->max_chars) return cut;
    PyObject *out = PyUnicode_Concat(cut, own->truncated);
    Py_DECREF(cut);
    return out;
}

/* The match of the line [start, end): the shared one if it is that line's, else a copy with the line's offsets
 * (and its text, for a sibling). New reference. */
static PyObject *own_match(Own *own, PyObject *match, Py_ssize_t start, Py_ssize_t end, const char *data) {
    if (!PyTuple_Check(match) || PyTuple_GET_SIZE(match) != 6) {
        PyErr_SetString(PyExc_TypeError, "own: a match must be a LineMatch");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(match, 0));
    if (first == -1 && PyErr_Occurred()) return NULL;
    if (first == start) return Py_NewRef(match);
    int sibling = may_be_sibling(own, match);
    PyObject *text = sibling < 0 ? NULL : sibling ? own_text(own, data + start, end - start)
                                                  : Py_NewRef(PyTuple_GET_ITEM(match, 2));
    PyObject *out = text ? own->type->tp_alloc(own->type, 6) : NULL;
    PyObject *from = out ? PyLong_FromSsize_t(start) : NULL, *to = from ? PyLong_FromSsize_t(end) : NULL;
    if (!to) {
        Py_XDECREF(text), Py_XDECREF(out), Py_XDECREF(from);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, from);
    PyTuple_SET_ITEM(out, 1, to);
    PyTuple_SET_ITEM(out, 2, text);
    for (Py_ssize_t k = 3; k < 6; k++) PyTuple_SET_ITEM(out, k, Py_NewRef(PyTuple_GET_ITEM(match, k)));
    return out;
}
