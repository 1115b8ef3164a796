/* The interner's per-value work (correlator/interned.py, correlator/packed_text.py) in C: a scan's results are
 * interned one source at a time, about 5 context records, 9 field dicts, 19 texts and 1.6 digit splits a rank file
 * at 8,192 ranks, each a Python frame (and for a split two regex passes: `[0-9]+` findall and sub, 9% of a rank
 * file's scan instructions). The Python methods stay the reference and the fallback (catalog/native.py);
 * tests/unit/test_native_intern.py compares the two. Included by _linescan.c.
 *
 * Every memo here is a correlator.interned._Recent (a dict subclass): a value seen lately is read with the
 * dict's own lookup, as `_Recent.get` does, and a miss is kept as `_Recent.share` keeps it (the value the last
 * generation held, else the new one; a full generation made the last one). A speaker that is not a tuple of at
 * least three is left to Python (`_who_miss`), and so is a field dict not seen lately (`_fields_miss`: about two
 * a rank, each given its shape's key table, correlator/shaped.py). */

static PyObject *share_str = NULL, *who_miss_str = NULL, *fields_str = NULL, *record_str = NULL,
                *empty_str = NULL, *old_str = NULL, *fields_miss_str = NULL;

static int intern_names(void) {
    if (share_str) return 0;
    if (!(share_str = PyUnicode_InternFromString("share")) ||
        !(who_miss_str = PyUnicode_InternFromString("_who_miss")) ||
        !(fields_miss_str = PyUnicode_InternFromString("_fields_miss")) ||
        !(old_str = PyUnicode_InternFromString("_old")) ||
        !(fields_str = PyUnicode_InternFromString("_python_fields")) ||
        !(record_str = PyUnicode_InternFromString("record")) || !(empty_str = PyUnicode_FromStringAndSize("", 0)))
        return -1;
    return 0;
}

/* What the interner's memos are, for one call: its _Recent memos and RECENT (read from correlator.interned at
 * each call, as _Recent.share reads it). */
typedef struct {
    PyObject *interner, *texts, *fields, *whos, *ints;
    Py_ssize_t limit;
} memos;

/* _Recent.share(key, value) for a key its own lookup missed: the value the last generation kept (taken out of
 * it), else ``value``, kept in this generation; a full generation becomes the last one. New reference. */
static PyObject *recent_miss(PyObject *recent, PyObject *key, PyObject *value, Py_ssize_t limit) {
    PyObject *old = PyObject_GetAttr(recent, old_str);
    if (!old) return NULL;
    if (!PyDict_Check(old)) { /* not a memo this code wrote: its own method */
        Py_DECREF(old);
        return PyObject_CallMethodObjArgs(recent, share_str, key, value, NULL);
    }
    PyObject *found = PyDict_GetItemWithError(old, key); /* borrowed */
    if (found) {
        Py_INCREF(found);
        if (PyDict_DelItem(old, key) < 0) Py_CLEAR(found);
    } else if (!PyErr_Occurred()) found = Py_NewRef(value);
    Py_DECREF(old);
    if (!found) return NULL;
    if (PyDict_SetItem(recent, key, found) < 0) {
        Py_DECREF(found);
        return NULL;
    }
    if (PyDict_GET_SIZE(recent) >= limit) {
        PyObject *last = PyDict_Copy(recent); /* dict(self): a plain dict, in the same order */
        int failed = !last || PyObject_SetAttr(recent, old_str, last) < 0;
        Py_XDECREF(last);
        if (failed) {
            Py_DECREF(found);
            return NULL;
        }
        PyDict_Clear(recent);
    }
    return found;
}

/* _Recent's lookup, then its share. New reference. */
static PyObject *recent_shared(PyObject *recent, PyObject *key, PyObject *value, Py_ssize_t limit) {
    PyObject *found = PyDict_GetItemWithError(recent, key); /* borrowed */
    if (found) return Py_NewRef(found);
    if (PyErr_Occurred()) return NULL;
    return recent_miss(recent, key, value, limit);
}

/* Interner.text: the first copy seen lately of ``text``. New reference. */
static PyObject *shared_text(const memos *m, PyObject *text) { return recent_shared(m->texts, text, text, m->limit); }

/* Interner.fields: the dict of equal items whose values have the same types, keyed by one flat tuple (names,
 * values, their types: the dict's own order); ``fields`` itself where a value cannot be hashed. New reference. */
static PyObject *shared_fields(const memos *m, PyObject *fields) {
    if (!PyDict_CheckExact(fields)) return PyObject_CallMethodOneArg(m->interner, fields_str, fields);
    Py_ssize_t n = PyDict_GET_SIZE(fields), pos = 0, k = 0;
    PyObject *key = PyTuple_New(3 * n), *name, *value;
    if (!key) return NULL;
    while (k < n && PyDict_Next(fields, &pos, &name, &value)) {
        PyTuple_SET_ITEM(key, k, Py_NewRef(name));
        PyTuple_SET_ITEM(key, n + k, Py_NewRef(value));
        PyTuple_SET_ITEM(key, 2 * n + k, Py_NewRef((PyObject *)Py_TYPE(value)));
        k++;
    }
    PyObject *found = PyDict_GetItemWithError(m->fields, key), *out = NULL; /* borrowed */
    if (found) out = Py_NewRef(found);
    else if (!PyErr_Occurred())
        out = PyObject_CallMethodObjArgs(m->interner, fields_miss_str, key, fields, NULL);
    Py_DECREF(key);
    if (!out && PyErr_ExceptionMatches(PyExc_TypeError)) { /* a value that cannot be hashed: kept as it is */
        PyErr_Clear();
        out = Py_NewRef(fields);
    }
    return out;
}

/* The memos of ``interner`` (its _texts, _fields, _whos and _ints) and RECENT: 0, or -1 with an exception. The
 * references are borrowed from the interner, which the caller holds. */
static int memos_of(PyObject *interner, PyObject *limit, memos *m) {
    static PyObject *names[4] = {NULL};
    static const char *spelled[4] = {"_texts", "_fields", "_whos", "_ints"};
    PyObject **slots[4] = {&m->texts, &m->fields, &m->whos, &m->ints};
    if (intern_names() < 0) return -1;
    m->interner = interner;
    m->limit = PyLong_AsSsize_t(limit);
    if (m->limit == -1 && PyErr_Occurred()) return -1;
    for (int k = 0; k < 4; k++) {
        if (!names[k] && !(names[k] = PyUnicode_InternFromString(spelled[k]))) return -1;
        PyObject *memo = PyObject_GetAttr(interner, names[k]);
        if (!memo) return -1;
        int ok = PyDict_Check(memo);
        Py_DECREF(memo); /* the interner holds it */
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "the interner's %s is not a dict", spelled[k]);
            return -1;
        }
        *slots[k] = memo;
    }
    return 0;
}

/* intern_fields(fields, interner, recent): Interner.fields without its Python frame (recent: RECENT). */
static PyObject *intern_fields(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    memos m;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "intern_fields(fields, interner, recent)");
        return NULL;
    }
    if (memos_of(args[1], args[2], &m) < 0) return NULL;
    return shared_fields(&m, args[0]);
}

/* Interner.number: an int above 256 (or below -5) as the first copy seen lately; any other value as it is. New
 * reference. */
static PyObject *shared_number(const memos *m, PyObject *value) {
    if (PyLong_CheckExact(value)) {
        int overflow;
        long v = PyLong_AsLongAndOverflow(value, &overflow);
        if (overflow || v < -5 || v > 256) return recent_shared(m->ints, value, value, m->limit);
    }
    return Py_NewRef(value);
}

/* Interner._who_miss: a speaker of records not seen lately (a Who: a tuple of rank, host, pid and more), kept
 * with its rank and pid shared; anything else is Python's to read. New reference. */
static PyObject *who_miss(const memos *m, PyObject *who) {
    if (!PyTuple_Check(who) || PyTuple_GET_SIZE(who) < 3) return PyObject_CallMethodOneArg(m->interner, who_miss_str, who);
    PyObject *rank = PyTuple_GET_ITEM(who, 0), *pid = PyTuple_GET_ITEM(who, 2);
    PyObject *shared_rank = shared_number(m, rank), *shared_pid = shared_rank ? shared_number(m, pid) : NULL;
    PyObject *value = NULL, *found = NULL;
    if (shared_pid && shared_rank == rank && shared_pid == pid) value = Py_NewRef(who);
    else if (shared_pid) { /* tuple.__new__(type(who), (rank, host, pid, *rest)) */
        Py_ssize_t n = PyTuple_GET_SIZE(who);
        value = Py_TYPE(who)->tp_alloc(Py_TYPE(who), n);
        for (Py_ssize_t k = 0; value && k < n; k++)
            PyTuple_SET_ITEM(value, k, Py_NewRef(k == 0 ? shared_rank : k == 2 ? shared_pid : PyTuple_GET_ITEM(who, k)));
    }
    if (value) found = recent_miss(m->whos, who, value, m->limit);
    Py_XDECREF(value);
    Py_XDECREF(shared_rank);
    Py_XDECREF(shared_pid);
    return found;
}

/* One record (a ContextRecord or its plain tuple) as Interner.record makes it. New reference. */
static PyObject *shared_record(const memos *m, PyObject *rec, PyObject *unread, PyTypeObject *record_type) {
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 8) return PyObject_CallMethodOneArg(m->interner, record_str, rec);
    PyObject *kind = PyTuple_GET_ITEM(rec, 0), *who = PyTuple_GET_ITEM(rec, 4), *text = PyTuple_GET_ITEM(rec, 6);
    int unread_kind = PySet_Contains(unread, kind);
    if (unread_kind < 0) return NULL;
    if (unread_kind) text = empty_str;
    PyObject *values[8] = {NULL};
    PyObject *found = PyDict_GetItemWithError(m->whos, who); /* borrowed */
    if (found) values[4] = Py_NewRef(found);
    else if (!PyErr_Occurred()) values[4] = who_miss(m, who);
    if (values[4] && (values[1] = shared_fields(m, PyTuple_GET_ITEM(rec, 1))) &&
        (values[2] = shared_text(m, PyTuple_GET_ITEM(rec, 2))) && (values[6] = shared_text(m, text))) {
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

/* intern_records(records, interner, unread_kinds, record_type, recent): [interner.record(rec) for rec in
 * records], unread_kinds the kinds whose text is dropped (correlator.kept.TEXT_UNREAD_KINDS), recent RECENT. */
static PyObject *intern_records(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    memos m;
    if (nargs != 5 || !PyList_Check(args[0]) || !PyAnySet_Check(args[2]) || !PyType_Check(args[3]) ||
        !PyType_IsSubtype((PyTypeObject *)args[3], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "intern_records(records: list, interner, unread_kinds: set, record_type: a tuple type, "
                        "recent: int)");
        return NULL;
    }
    if (memos_of(args[1], args[4], &m) < 0) return NULL;
    PyObject *records = args[0];
    Py_ssize_t n = PyList_GET_SIZE(records);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *rec = Py_NewRef(PyList_GET_ITEM(records, k)); /* the list may change under a callback */
        PyObject *made = shared_record(&m, rec, args[2], (PyTypeObject *)args[3]);
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
