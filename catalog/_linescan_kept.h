/* keep_line: correlator.kept.KeptContext.keep_line in C (included by _linescan.c).
 *
 * Each distinct matched line's context records go through KeptContext: a repeat of a row kept before is only
 * counted (or moved to its latest occurrence), a new one is kept. At 4,096 ranks that is 60,000 records a
 * gigabyte, and in Python two method calls each. The steps here are repeat's then add's, in their order, on the
 * KeptContext's own lists and dicts; the Python method stays the fallback and the reference
 * (tests/unit/test_native_kept.py compares the two). configure_kept gives it the ContextRecord type, the kinds
 * whose first occurrence is all that is kept, and MAX_ERROR_ROWS. */

static PyObject *record_type = NULL, *first_only_kinds = NULL;
static Py_ssize_t max_error_rows = 0;

static PyObject *configure_kept(PyObject *mod, PyObject *args) {
    PyObject *type, *kinds;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyType_Type, &type, &PyFrozenSet_Type, &kinds, &most)) return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the record type must be a tuple type");
        return NULL;
    }
    Py_XSETREF(record_type, Py_NewRef(type));
    Py_XSETREF(first_only_kinds, Py_NewRef(kinds));
    max_error_rows = most;
    Py_RETURN_NONE;
}

/* ContextRecord(kind, captures, source, line_no, who, time, text, 1) as tuple.__new__ makes it. New reference. */
static PyObject *new_record(PyObject *kind, PyObject *captures, PyObject *source, PyObject *line_no, PyObject *who,
                            PyObject *time, PyObject *text) {
    static PyObject *one = NULL;
    if (!one && !(one = PyLong_FromLong(1))) return NULL;
    PyObject *values = PyTuple_Pack(8, kind, captures, source, line_no, who, time, text, one);
    PyObject *packed = values ? PyTuple_Pack(1, values) : NULL;
    PyObject *record = packed ? PyTuple_Type.tp_new((PyTypeObject *)record_type, packed, NULL) : NULL;
    Py_XDECREF(values);
    Py_XDECREF(packed);
    return record;
}

/* repeat(kind, row, ...) for a new errorish row beyond MAX_ERROR_ROWS: errors_dropped += 1. */
static int count_dropped(PyObject *kept) {
    static PyObject *name = NULL;
    if (!name && !(name = PyUnicode_InternFromString("errors_dropped"))) return -1;
    PyObject *count = PyObject_GetAttr(kept, name);
    if (!count) return -1;
    PyObject *one = PyLong_FromLong(1);
    PyObject *more = one ? PyNumber_Add(count, one) : NULL;
    Py_DECREF(count);
    Py_XDECREF(one);
    int failed = more ? PyObject_SetAttr(kept, name, more) : -1;
    Py_XDECREF(more);
    return failed;
}

/* One record of the line, at ``position``: repeat's answer for its row, else add's. 0, or -1 on error. */
static int keep_one(PyObject *kept, PyObject *const *dicts, PyObject *item, PyObject *const *line, PyObject *position) {
    static PyObject *errorish = NULL;
    if (!errorish && !(errorish = PyUnicode_InternFromString("errorish"))) return -1;
    PyObject *kept_list = dicts[0], *first = dicts[1], *last = dicts[2], *errors = dicts[3];
    PyObject *kind = PyTuple_GET_ITEM(item, 0), *captures = PyTuple_GET_ITEM(item, 1), *row = PyTuple_GET_ITEM(item, 2);
    int is_errorish = PyUnicode_Check(kind) && PyUnicode_Compare(kind, errorish) == 0;
    if (PyErr_Occurred()) return -1;
    if (row != Py_None) {
        if (is_errorish) {
            PyObject *seen = PyDict_GetItemWithError(errors, row); /* [its first record, times seen] */
            if (seen) {
                if (!PyList_Check(seen) || PyList_GET_SIZE(seen) != 2) {
                    PyErr_SetString(PyExc_TypeError, "an errorish row's entry must be [record, times]");
                    return -1;
                }
                PyObject *one = PyLong_FromLong(1);
                PyObject *times = one ? PyNumber_Add(PyList_GET_ITEM(seen, 1), one) : NULL;
                Py_XDECREF(one);
                if (!times) return -1;
                PyList_SetItem(seen, 1, times); /* steals times */
                return 0;
            }
            if (PyErr_Occurred()) return -1;
            if (PyDict_GET_SIZE(errors) >= max_error_rows) return count_dropped(kept);
        } else {
            int found = PyDict_Contains(first, row);
            if (found < 0) return -1;
            if (found) {
                int only = PySet_Contains(first_only_kinds, kind);
                if (only) return only < 0 ? -1 : 0;
                PyObject *latest = PyDict_GetItemWithError(last, row); /* (position, line_no, time, text) */
                if (!latest && PyErr_Occurred()) return -1;
                if (latest) {
                    if (!PyTuple_Check(latest) || PyTuple_GET_SIZE(latest) != 4) {
                        PyErr_SetString(PyExc_TypeError, "a folded row's latest occurrence must be a 4-tuple");
                        return -1;
                    }
                    int later = PyObject_RichCompareBool(PyTuple_GET_ITEM(latest, 0), position, Py_LT);
                    if (later <= 0) return later;
                }
                PyObject *moved = PyTuple_Pack(4, position, line[1], line[3], line[4]);
                if (!moved) return -1;
                int failed = PyDict_SetItem(last, row, moved);
                Py_DECREF(moved);
                return failed;
            }
        }
    }
    /* add: a new row, or a kind kept whole */
    PyObject *record = new_record(kind, captures, line[0], line[1], line[2], line[3], line[4]);
    PyObject *pair = record ? PyTuple_Pack(2, position, record) : NULL;
    int failed = pair ? PyList_Append(kept_list, pair) : -1;
    Py_XDECREF(pair);
    if (!failed && row != Py_None) {
        if (is_errorish) {
            PyObject *entry = PyList_New(2);
            if (!entry) failed = -1;
            else {
                PyList_SET_ITEM(entry, 0, Py_NewRef(record));
                PyList_SET_ITEM(entry, 1, PyLong_FromLong(1));
                failed = PyList_GET_ITEM(entry, 1) ? PyDict_SetItem(errors, row, entry) : -1;
                Py_DECREF(entry);
            }
        } else {
            failed = PyDict_SetItem(first, row, record);
        }
    }
    Py_XDECREF(record);
    return failed;
}

/* keep_line(kept, contexts, source, line_no, who, time, text, at): see KeptContext.keep_line. */
static PyObject *keep_line(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    static PyObject *names[4] = {NULL};
    static const char *spelled[4] = {"_kept", "_first", "_last", "_errors"};
    if (nargs != 8 || !PyList_Check(args[1]) || !PyLong_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "keep_line(kept, contexts, source, line_no, who, time, text, at)");
        return NULL;
    }
    if (!record_type) {
        PyErr_SetString(PyExc_RuntimeError, "configure_kept was not called");
        return NULL;
    }
    PyObject *kept = args[0], *contexts = args[1], *at = args[7];
    PyObject *dicts[4] = {NULL}, *result = NULL;
    for (int k = 0; k < 4; k++) {
        if (!names[k] && !(names[k] = PyUnicode_InternFromString(spelled[k]))) goto done;
        if (!(dicts[k] = PyObject_GetAttr(kept, names[k]))) goto done;
    }
    if (!PyList_CheckExact(dicts[0]) || !PyDict_CheckExact(dicts[1]) || !PyDict_CheckExact(dicts[2]) ||
        !PyDict_CheckExact(dicts[3])) {
        PyErr_SetString(PyExc_TypeError, "keep_line: not a KeptContext");
        goto done;
    }
    PyObject *const *line = &args[2]; /* source, line_no, who, time, text */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(contexts); k++) {
        PyObject *item = PyList_GET_ITEM(contexts, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "a context record must be (kind, captures, row)");
            goto done;
        }
        PyObject *offset = PyLong_FromSsize_t(k);
        PyObject *position = offset ? PyNumber_Add(at, offset) : NULL;
        Py_XDECREF(offset);
        int failed = position ? keep_one(kept, dicts, item, line, position) : -1;
        Py_XDECREF(position);
        if (failed) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 4; k++) Py_XDECREF(dicts[k]);
    return result;
}
