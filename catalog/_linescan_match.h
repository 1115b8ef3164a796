/* match_line(text, indexes, confirms, confirmer, caseless, start, end, line_match, max_chars, kept_text):
 * Matcher.match_line's loop in C, for every distinct matched line (90,000 a GB at 4,096 ranks). The regex
 * searches stay Python's `re` (called from here); what moves is the loop around them, about a microsecond a line.
 * confirms[i] is pattern i's (search, folded, owner, context name, rank, vouched) or None, then made by
 * confirmer(i); caseless(i, text) searches a non-ASCII line with the case-insensitive pattern. A vouched pattern
 * (the engine scans for it exactly and it has no named groups: Engine.vouches) is not searched on a line whose
 * text is the very bytes the engine scanned (ASCII, end - start characters): its captures are {}. Needs captures
 * (above). Tested equal to the Python loop (tests/unit/test_native_match.py). */

static PyObject *lower_name = NULL;

static PyObject *match_line(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) { PyErr_SetString(PyExc_TypeError, "match_line takes 10 arguments"); return NULL; }
    PyObject *text = args[0], *indexes = args[1], *confirms = args[2], *confirmer = args[3], *caseless = args[4];
    PyObject *line_match = args[7], *kept_text = args[9];
    Py_ssize_t max_chars = PyLong_AsSsize_t(args[8]);
    if (max_chars == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t from = PyLong_AsSsize_t(args[5]), to = from == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[6]);
    if (to == -1 && PyErr_Occurred()) return NULL;
    if (!PyUnicode_Check(text) || !PyList_Check(confirms) || !PyType_Check(line_match)) {
        PyErr_SetString(PyExc_TypeError, "match_line: text a str, confirms a list, line_match a type");
        return NULL;
    }
    if (!lower_name && !(lower_name = PyUnicode_InternFromString("lower"))) return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int own = length > 0 && to - from == length && PyUnicode_IS_ASCII(text); /* the bytes the engine vouched for */
    PyObject *order = NULL; /* the indexes in increasing order: a tuple as the C line loop gives them */
    if (PyTuple_CheckExact(indexes)) {
        order = Py_NewRef(indexes);
    } else {
        PyObject *listed = PySequence_List(indexes);
        if (!listed || PyList_Sort(listed) < 0) { Py_XDECREF(listed); return NULL; }
        order = PyList_AsTuple(listed);
        Py_DECREF(listed);
        if (!order) return NULL;
    }
    PyObject *best = NULL, *sig = NULL, *fields = NULL, *context = NULL, *lowered = NULL, *out = NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(order);
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *index = PyTuple_GET_ITEM(order, k);
        Py_ssize_t i = PyLong_AsSsize_t(index);
        if (i == -1 && PyErr_Occurred()) goto done;
        if (i < 0 || i >= PyList_GET_SIZE(confirms)) { PyErr_SetString(PyExc_IndexError, "pattern index"); goto done; }
        PyObject *confirm = PyList_GET_ITEM(confirms, i);
        if (confirm == Py_None) confirm = PyObject_CallOneArg(confirmer, index);
        else Py_INCREF(confirm);
        if (!confirm) goto done;
        if (!PyTuple_Check(confirm) || PyTuple_GET_SIZE(confirm) != 6) {
            Py_DECREF(confirm);
            PyErr_SetString(PyExc_TypeError, "a confirm is a 6-tuple");
            goto done;
        }
        PyObject *search = PyTuple_GET_ITEM(confirm, 0), *owner = PyTuple_GET_ITEM(confirm, 2);
        PyObject *m;
        int folded = PyObject_IsTrue(PyTuple_GET_ITEM(confirm, 1));
        if (folded < 0) { Py_DECREF(confirm); goto done; }
        if (own && PyTuple_GET_ITEM(confirm, 5) == Py_True) {
            m = Py_NewRef(Py_True); /* a match without groups: captures below are {} */
        } else if (!folded) {
            m = PyObject_CallOneArg(search, text);
        } else if (PyUnicode_IS_ASCII(text)) {
            if (!lowered && !(lowered = PyObject_CallMethodNoArgs(text, lower_name))) { Py_DECREF(confirm); goto done; }
            m = PyObject_CallOneArg(search, lowered);
        } else {
            PyObject *pair[2] = {index, text};
            m = PyObject_Vectorcall(caseless, pair, 2, NULL);
        }
        if (!m) { Py_DECREF(confirm); goto done; }
        if (m == Py_None) { Py_DECREF(m); Py_DECREF(confirm); continue; } /* the engine was a prefilter here */
        if (owner == Py_None) {
            PyObject *caps = m == Py_True ? PyDict_New() : captures(mod, m);
            int rc = -1;
            if (caps && (context || (context = PyDict_New())))
                rc = PyDict_SetItem(context, PyTuple_GET_ITEM(confirm, 3), caps);
            Py_XDECREF(caps);
            if (rc < 0) { Py_DECREF(m); Py_DECREF(confirm); goto done; }
        } else {
            PyObject *rank = PyTuple_GET_ITEM(confirm, 4);
            int better = best == NULL ? 1 : PyObject_RichCompareBool(rank, best, Py_GT);
            if (better < 0) { Py_DECREF(m); Py_DECREF(confirm); goto done; }
            if (better) {
                PyObject *caps = m == Py_True ? PyDict_New() : captures(mod, m);
                if (!caps) { Py_DECREF(m); Py_DECREF(confirm); goto done; }
                Py_XSETREF(fields, caps);
                Py_XSETREF(best, Py_NewRef(rank));
                Py_XSETREF(sig, Py_NewRef(owner));
            }
        }
        Py_DECREF(m);
        Py_DECREF(confirm);
    }
    if (sig == NULL && (context == NULL || PyDict_GET_SIZE(context) == 0)) { out = Py_NewRef(Py_None); goto done; }
    if ((!fields && !(fields = PyDict_New())) || (!context && !(context = PyDict_New()))) goto done;
    PyObject *kept = PyUnicode_GET_LENGTH(text) > max_chars ? PyObject_CallOneArg(kept_text, text) : Py_NewRef(text);
    if (!kept) goto done;
    PyTypeObject *type = (PyTypeObject *)line_match;
    out = type->tp_alloc(type, 6); /* a tuple subclass: what tuple.__new__(LineMatch, ...) makes */
    if (!out) { Py_DECREF(kept); goto done; }
    PyTuple_SET_ITEM(out, 0, Py_NewRef(args[5]));
    PyTuple_SET_ITEM(out, 1, Py_NewRef(args[6]));
    PyTuple_SET_ITEM(out, 2, kept);
    PyTuple_SET_ITEM(out, 3, Py_NewRef(sig ? sig : Py_None));
    PyTuple_SET_ITEM(out, 4, Py_NewRef(fields));
    PyTuple_SET_ITEM(out, 5, Py_NewRef(context));
done:
    Py_XDECREF(order);
    Py_XDECREF(best);
    Py_XDECREF(sig);
    Py_XDECREF(fields);
    Py_XDECREF(context);
    Py_XDECREF(lowered);
    return out;
}
