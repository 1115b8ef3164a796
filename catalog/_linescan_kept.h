/* keep_line: correlator.kept.KeptContext.keep_line in C (included by _linescan.c).
 *
 * Each distinct matched line's context records go through KeptContext: a repeat of a row kept before is only
 * counted (or moved to its latest occurrence), a new one is kept. At 4,096 ranks that is 60,000 records a
 * gigabyte, and in Python two method calls each. The steps here are repeat's then add's, in their order, on the
 * KeptContext's own lists and dicts, which its catalog.native_state.KeptState holds; the Python method stays the
 * fallback and the reference (tests/unit/test_native_kept.py compares the two). configure_kept (by name) gives it the
 * ContextRecord type, the kinds whose first occurrence is all that is kept, and MAX_ERROR_ROWS.
 *
 * keeper(state) reads a KeptState's fields by name once (a field missing, or of the wrong type, is a TypeError
 * naming it) and returns keep_line(contexts, source, line_no, who, time, text, at) bound to its containers;
 * errors_dropped is read and written on the state itself, by name. */

/* KeptState's fields, in the order the bound containers are held here (catalog/native_state.py documents each) */
static const char *const kept_state_fields[] = {"records", "first", "last", "errors", "errors_dropped", NULL};
enum { K_RECORDS, K_FIRST, K_LAST, K_ERRORS, K_DROPPED, K_STATE_SIZE };

static PyObject *record_type = NULL, *first_only_kinds = NULL;
static Py_ssize_t max_error_rows = 0;

static PyObject *configure_kept(PyObject *mod, PyObject *args, PyObject *kwargs) {
    /* keyword-only, every one required: a caller names what it hands over, and a renamed one fails loudly */
    static char *names[] = {"record_type", "first_only_kinds", "max_error_rows", NULL};
    PyObject *type = NULL, *kinds = NULL;
    Py_ssize_t most = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O!O!n", names, &PyType_Type, &type, &PyFrozenSet_Type, &kinds,
                                     &most))
        return NULL;
    if (!type || !kinds || most < 0) {
        PyErr_SetString(PyExc_TypeError, "configure_kept needs record_type, first_only_kinds and max_error_rows (>= 0)");
        return NULL;
    }
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
    if (!name && !(name = PyUnicode_InternFromString(kept_state_fields[K_DROPPED]))) return -1;
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

typedef struct {
    PyObject *state;               /* the KeptState: errors_dropped is counted on it */
    PyObject *field[K_DROPPED];    /* its records, first, last and errors, as they were when bound */
} kept_state;

static void kept_state_free(PyObject *capsule) {
    kept_state *st = PyCapsule_GetPointer(capsule, NULL);
    if (!st) return;
    Py_XDECREF(st->state);
    for (int k = 0; k < K_DROPPED; k++) Py_XDECREF(st->field[k]);
    PyMem_Free(st);
}

/* keep_line(contexts, source, line_no, who, time, text, at), bound by keeper to one KeptState: see
 * KeptContext.keep_line. */
static PyObject *keep_line(PyObject *bound, PyObject *const *args, Py_ssize_t nargs) {
    kept_state *st = PyCapsule_GetPointer(bound, NULL);
    if (!st) return NULL;
    if (nargs != 7 || !PyList_Check(args[0]) || !PyLong_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "keep_line(contexts, source, line_no, who, time, text, at)");
        return NULL;
    }
    if (!record_type) {
        PyErr_SetString(PyExc_RuntimeError, "configure_kept was not called");
        return NULL;
    }
    PyObject *contexts = args[0], *at = args[6];
    PyObject *const *line = &args[1]; /* source, line_no, who, time, text */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(contexts); k++) {
        PyObject *item = PyList_GET_ITEM(contexts, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "a context record must be (kind, captures, row)");
            return NULL;
        }
        PyObject *offset = PyLong_FromSsize_t(k);
        PyObject *position = offset ? PyNumber_Add(at, offset) : NULL;
        Py_XDECREF(offset);
        int failed = position ? keep_one(st->state, st->field, item, line, position) : -1;
        Py_XDECREF(position);
        if (failed) return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef keep_line_def = {"keep_line", (PyCFunction)(void (*)(void))keep_line, METH_FASTCALL,
                                    "KeptContext.keep_line(contexts, ...), on the KeptState it was bound to"};

/* keeper(state): keep_line bound to a KeptState, its fields checked here, once. */
static PyObject *keeper(PyObject *mod, PyObject *state) {
    static const char *who = "keeper";
    static PyObject *interned[K_STATE_SIZE] = {NULL};
    PyObject *field[K_STATE_SIZE];
    if (read_fields(state, kept_state_fields, interned, field, who) < 0) return NULL;
    const char *const *name = kept_state_fields;
    int ok = field_is(PyList_CheckExact(field[K_RECORDS]), who, name[K_RECORDS], "a list") == 0 &&
             field_is(PyDict_CheckExact(field[K_FIRST]), who, name[K_FIRST], "a dict") == 0 &&
             field_is(PyDict_CheckExact(field[K_LAST]), who, name[K_LAST], "a dict") == 0 &&
             field_is(PyDict_CheckExact(field[K_ERRORS]), who, name[K_ERRORS], "a dict") == 0 &&
             field_is(PyLong_Check(field[K_DROPPED]), who, name[K_DROPPED], "an int") == 0;
    Py_DECREF(field[K_DROPPED]); /* read on the state each time: an int is replaced, not changed */
    kept_state *st = ok ? PyMem_Calloc(1, sizeof *st) : NULL;
    if (!st) {
        for (int k = 0; k < K_DROPPED; k++) Py_DECREF(field[k]);
        return ok ? PyErr_NoMemory() : NULL;
    }
    st->state = Py_NewRef(state);
    for (int k = 0; k < K_DROPPED; k++) st->field[k] = field[k];
    PyObject *capsule = PyCapsule_New(st, NULL, kept_state_free);
    if (!capsule) {
        Py_DECREF(st->state);
        for (int k = 0; k < K_DROPPED; k++) Py_DECREF(st->field[k]);
        PyMem_Free(st);
        return NULL;
    }
    PyObject *bound = PyCFunction_NewEx(&keep_line_def, capsule, NULL);
    Py_DECREF(capsule);
    return bound;
}
