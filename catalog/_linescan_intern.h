/* The interner's per-value work (correlator/interned.py, correlator/packed_text.py) in C: a scan's results are
 * interned one source at a time, about 5 context records, 9 field dicts, 19 texts and 1.6 digit splits a rank file
 * at 8,192 ranks, each a Python frame (and for a split two regex passes: `[0-9]+` findall and sub, 9% of a rank
 * file's scan instructions). The Python methods stay the reference and the fallback (catalog/native.py);
 * tests/unit/test_native_intern.py compares the two. Included by _linescan.c.
 *
 * Every memo here is a correlator.interned._Recent (a dict subclass): a value seen lately is read with the
 * dict's own lookup, as `_Recent.get` does, and a miss calls back into Python (`share`, `_who_miss`,
 * `_fields_miss`), so the generations are kept by the same code on both paths. */

static PyObject *share_str = NULL, *who_miss_str = NULL, *fields_miss_str = NULL, *fields_str = NULL,
                *record_str = NULL, *empty_str = NULL;

static int intern_names(void) {
    if (share_str) return 0;
    if (!(share_str = PyUnicode_InternFromString("share")) ||
        !(who_miss_str = PyUnicode_InternFromString("_who_miss")) ||
        !(fields_miss_str = PyUnicode_InternFromString("_fields_miss")) ||
        !(fields_str = PyUnicode_InternFromString("_python_fields")) ||
        !(record_str = PyUnicode_InternFromString("record")) || !(empty_str = PyUnicode_FromStringAndSize("", 0)))
        return -1;
    return 0;
}

/* Interner.text: the first copy seen lately of ``text``. New reference. */
static PyObject *shared_text(PyObject *texts, PyObject *text) {
    PyObject *found = PyDict_GetItemWithError(texts, text); /* borrowed */
    if (found) return Py_NewRef(found);
    if (PyErr_Occurred()) return NULL;
    return PyObject_CallMethodObjArgs(texts, share_str, text, text, NULL);
}

/* Interner.fields: the dict of equal items whose values have the same types, keyed by one flat tuple (names,
 * values, their types: the dict's own order); ``fields`` itself where a value cannot be hashed. New reference. */
static PyObject *shared_fields(PyObject *interner, PyObject *memo, PyObject *fields) {
    if (!PyDict_CheckExact(fields)) return PyObject_CallMethodOneArg(interner, fields_str, fields);
    Py_ssize_t n = PyDict_GET_SIZE(fields), pos = 0, k = 0;
    PyObject *key = PyTuple_New(3 * n), *name, *value;
    if (!key) return NULL;
    while (k < n && PyDict_Next(fields, &pos, &name, &value)) {
        PyTuple_SET_ITEM(key, k, Py_NewRef(name));
        PyTuple_SET_ITEM(key, n + k, Py_NewRef(value));
        PyTuple_SET_ITEM(key, 2 * n + k, Py_NewRef((PyObject *)Py_TYPE(value)));
        k++;
    }
    PyObject *found = PyDict_GetItemWithError(memo, key), *out = NULL; /* borrowed */
    if (found) out = Py_NewRef(found);
    else if (!PyErr_Occurred()) out = PyObject_CallMethodObjArgs(interner, fields_miss_str, key, fields, NULL);
    Py_DECREF(key);
    if (!out && PyErr_ExceptionMatches(PyExc_TypeError)) { /* a value that cannot be hashed: kept as it is */
        PyErr_Clear();
        out = Py_NewRef(fields);
    }
    return out;
}

/* intern_fields(fields, interner, memo): Interner.fields without its Python frame. */
static PyObject *intern_fields(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "intern_fields(fields, interner, memo)");
        return NULL;
    }
    if (intern_names() < 0) return NULL;
    return shared_fields(args[1], args[2], args[0]);
}

/* One record (a ContextRecord or its plain tuple) as Interner.record makes it. New reference. */
static PyObject *shared_record(PyObject *rec, PyObject *interner, PyObject *texts, PyObject *memo, PyObject *whos,
                               PyObject *unread, PyTypeObject *record_type) {
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 8) return PyObject_CallMethodOneArg(interner, record_str, rec);
    PyObject *kind = PyTuple_GET_ITEM(rec, 0), *who = PyTuple_GET_ITEM(rec, 4), *text = PyTuple_GET_ITEM(rec, 6);
    int unread_kind = PySet_Contains(unread, kind);
    if (unread_kind < 0) return NULL;
    if (unread_kind) text = empty_str;
    PyObject *values[8] = {NULL};
    PyObject *found = PyDict_GetItemWithError(whos, who); /* borrowed */
    if (found) values[4] = Py_NewRef(found);
    else if (!PyErr_Occurred()) values[4] = PyObject_CallMethodOneArg(interner, who_miss_str, who);
    if (values[4] && (values[1] = shared_fields(interner, memo, PyTuple_GET_ITEM(rec, 1))) &&
        (values[2] = shared_text(texts, PyTuple_GET_ITEM(rec, 2))) && (values[6] = shared_text(texts, text))) {
        PyObject *made = record_type->tp_alloc(record_type, 8); /* what tuple.__new__(ContextRecord, values) makes */
        if (made) {
            for (int k = 0; k < 8; k++)
                PyTuple_SET_ITEM(made, k, values[k] ? values[k] : Py_NewRef(PyTuple_GET_ITEM(rec, k)));
            return made;
        }
    }
    for (int k = 0; k < 8; k++) Py_XDECREF(values[k]);
    return NULL;
}

/* intern_records(records, interner, texts, fields, whos, unread_kinds, record_type): [interner.record(rec) for rec
 * in records], the memos given as Interner holds them (texts, field dicts, speakers), unread_kinds the kinds whose
 * text is dropped (correlator.kept.TEXT_UNREAD_KINDS). */
static PyObject *intern_records(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyList_Check(args[0]) || !PyDict_Check(args[2]) || !PyDict_Check(args[3]) ||
        !PyDict_Check(args[4]) || !PyAnySet_Check(args[5]) || !PyType_Check(args[6]) ||
        !PyType_IsSubtype((PyTypeObject *)args[6], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "intern_records(records: list, interner, texts, fields, whos: dict, unread_kinds: set, "
                        "record_type: a tuple type)");
        return NULL;
    }
    if (intern_names() < 0) return NULL;
    PyObject *records = args[0];
    Py_ssize_t n = PyList_GET_SIZE(records);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *rec = Py_NewRef(PyList_GET_ITEM(records, k)); /* the list may change under a callback */
        PyObject *made = shared_record(rec, args[1], args[2], args[3], args[4], args[5], (PyTypeObject *)args[6]);
        Py_DECREF(rec);
        if (!made) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, made);
        if (PyList_GET_SIZE(records) != n) {
            PyErr_SetString(PyExc_RuntimeError, "intern_records: the list changed size");
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* digit_runs(text): (the runs of ASCII digits joined by spaces, the text with each run made one NUL), as
 * correlator/packed_text.py makes them with `[0-9]+` (findall, then sub); None where the text has no digit or a
 * NUL of its own. */
static PyObject *digit_runs(PyObject *mod, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "digit_runs(text: str)");
        return NULL;
    }
    if (PyUnicode_READY(text) < 0) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), digits = 0, runs = 0, k;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int in_run = 0;
    for (k = 0; k < n; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c == 0) Py_RETURN_NONE;
        if (c >= '0' && c <= '9') {
            digits++;
            if (!in_run) runs++;
            in_run = 1;
        } else in_run = 0;
    }
    if (!runs) Py_RETURN_NONE;
    /* The skeleton keeps every character but the digits (ASCII), so its widest is the text's: same kind. */
    PyObject *joined = PyUnicode_New(digits + runs - 1, 127);
    PyObject *skeleton = joined ? PyUnicode_New(n - digits + runs, PyUnicode_MAX_CHAR_VALUE(text)) : NULL;
    if (!skeleton) {
        Py_XDECREF(joined);
        return NULL;
    }
    Py_UCS1 *out_digits = PyUnicode_1BYTE_DATA(joined);
    int skel_kind = PyUnicode_KIND(skeleton);
    void *skel = PyUnicode_DATA(skeleton);
    Py_ssize_t d = 0, s = 0;
    in_run = 0;
    for (k = 0; k < n; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c >= '0' && c <= '9') {
            if (!in_run) {
                if (d) out_digits[d++] = ' ';
                PyUnicode_WRITE(skel_kind, skel, s++, 0);
            }
            out_digits[d++] = (Py_UCS1)c;
            in_run = 1;
        } else {
            PyUnicode_WRITE(skel_kind, skel, s++, c);
            in_run = 0;
        }
    }
    return Py_BuildValue("(NN)", joined, skeleton);
}
