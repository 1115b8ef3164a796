/* A result's findings interned in C (correlator/interned.py's Interner.findings and correlator/packed_text.py's
 * packed and digit_runs): speakers shared by identity, then each finding's source, fields, and its text, or the
 * text kept as its digits and a shared skeleton. Uses the memos of _linescan_intern.h; included after it by
 * _linescan.c. tests/unit/test_native_intern.py compares it with the Python methods. */

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

/* The offset of ``name``, a writable object slot of ``type``; -1 with a TypeError where it is none. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *spelled = PyUnicode_FromString(name);
    PyObject *descr = spelled ? _PyType_Lookup(type, spelled) : NULL; /* borrowed */
    Py_XDECREF(spelled);
    PyMemberDef *member = descr && Py_IS_TYPE(descr, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)descr)->d_member
                                                                          : NULL;
    if (!member || member->type != T_OBJECT_EX || (member->flags & READONLY)) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s is not a writable slot of %s", name, type->tp_name);
        return -1;
    }
    return member->offset;
}

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

enum { F_SOURCE, F_FIELDS, F_TEXT, F_SPEAKER, F_COUNT };
static const char *finding_names[F_COUNT] = {"source", "fields", "text", "speaker"};

/* A finding's text as digits and a shared skeleton (correlator/packed_text.py's packed): a new ``packed_type``
 * with every slot of ``finding`` (``slots``: their offsets, ``count`` of them), its text slot the digits, its
 * skeleton slot the shared skeleton; ``finding`` itself (a new reference) where the text has no digits or a NUL. */
static PyObject *packed_finding(const memos *m, PyObject *finding, PyTypeObject *packed_type, const Py_ssize_t *slots,
                                Py_ssize_t count, Py_ssize_t text_at, Py_ssize_t skeleton_at) {
    PyObject *split = digit_runs(NULL, SLOT(finding, text_at));
    if (!split) return NULL;
    if (split == Py_None) {
        Py_DECREF(split);
        return Py_NewRef(finding);
    }
    PyObject *skeleton = shared_text(m, PyTuple_GET_ITEM(split, 1));
    PyObject *out = skeleton ? packed_type->tp_alloc(packed_type, 0) : NULL; /* PackedFinding.__new__ */
    if (!out) {
        Py_XDECREF(skeleton);
        Py_DECREF(split);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < count; k++) SLOT(out, slots[k]) = Py_XNewRef(SLOT(finding, slots[k]));
    Py_XSETREF(SLOT(out, text_at), Py_NewRef(PyTuple_GET_ITEM(split, 0)));
    SLOT(out, skeleton_at) = skeleton;
    Py_DECREF(split);
    return out;
}

/* The slot offsets intern_findings reads, for these types and names: source, fields, text, speaker, the packed
 * type's skeleton, then each of ``names``; looked up once and kept while the same three objects are given (the
 * interner gives its module's constants). Borrowed; NULL with an exception. */
static const Py_ssize_t *bound_slots(PyTypeObject *finding_type, PyTypeObject *packed_type, PyObject *names) {
    static PyObject *bound[3] = {NULL};
    static Py_ssize_t *offsets = NULL;
    if (offsets && bound[0] == (PyObject *)finding_type && bound[1] == (PyObject *)packed_type && bound[2] == names)
        return offsets;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    Py_ssize_t *found = PyMem_Calloc(F_COUNT + 1 + count, sizeof *found);
    if (!found) {
        PyErr_NoMemory();
        return NULL;
    }
    int failed = 0;
    for (int k = 0; !failed && k < F_COUNT; k++) failed = (found[k] = slot_offset(finding_type, finding_names[k])) < 0;
    if (!failed) failed = (found[F_COUNT] = slot_offset(packed_type, "_skeleton")) < 0;
    for (Py_ssize_t k = 0; !failed && k < count; k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        const char *spelled = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        failed = !spelled || (found[F_COUNT + 1 + k] = slot_offset(finding_type, spelled)) < 0;
        if (failed && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "intern_findings: slot names are str");
    }
    if (failed) {
        PyMem_Free(found);
        return NULL;
    }
    offsets = found; /* an earlier array is not freed: a call still running (under a callback) may read it */
    PyObject *objects[3] = {(PyObject *)finding_type, (PyObject *)packed_type, names};
    for (int k = 0; k < 3; k++) Py_XSETREF(bound[k], Py_NewRef(objects[k])); /* kept: their addresses stay theirs */
    return offsets;
}

/* intern_findings(findings, interner, whole, recent, finding_type, packed_type, slot_names): Interner.findings'
 * loop (correlator/interned.py: speakers shared by identity, then each finding's source, fields and text, or its
 * text packed) for the findings of type ``finding_type`` exactly; any other one is given to interner.finding.
 * ``whole``: the set of its records' texts; ``slot_names``: every slot of a Finding, which a packed one copies. */
static PyObject *intern_findings(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    memos m;
    if (nargs != 7 || !PyList_Check(args[0]) || !PyAnySet_Check(args[2]) || !PyType_Check(args[4]) ||
        !PyType_Check(args[5]) || !PyType_IsSubtype((PyTypeObject *)args[5], (PyTypeObject *)args[4]) ||
        !PyTuple_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "intern_findings(findings: list, interner, whole: set, recent: int, "
                                         "finding_type, packed_type: a subclass of it, slot_names: tuple)");
        return NULL;
    }
    if (memos_of(args[1], args[3], &m) < 0) return NULL;
    PyTypeObject *finding_type = (PyTypeObject *)args[4], *packed_type = (PyTypeObject *)args[5];
    const Py_ssize_t *slots = bound_slots(finding_type, packed_type, args[6]);
    if (!slots) return NULL;
    Py_ssize_t at[F_COUNT] = {slots[F_SOURCE], slots[F_FIELDS], slots[F_TEXT], slots[F_SPEAKER]};
    Py_ssize_t skeleton_at = slots[F_COUNT], count = PyTuple_GET_SIZE(args[6]);
    slots += F_COUNT + 1;
    static PyObject *speaker_str = NULL, *finding_str = NULL;
    if ((!speaker_str && !(speaker_str = PyUnicode_InternFromString("speaker"))) ||
        (!finding_str && !(finding_str = PyUnicode_InternFromString("finding"))))
        return NULL;
    PyObject *findings = args[0], *whole = args[2];
    Py_ssize_t n = PyList_GET_SIZE(findings);
    PyObject *out = PyList_New(0), *speakers = PyDict_New(); /* id -> (it, kept alive while its id is a key; shared) */
    PyObject *last = NULL, *shared = NULL;                   /* borrowed from speakers */
    for (Py_ssize_t k = 0; out && speakers && k < n && k < PyList_GET_SIZE(findings); k++) {
        PyObject *f = Py_NewRef(PyList_GET_ITEM(findings, k)), *made = NULL;
        if (Py_TYPE(f) != finding_type || !SLOT(f, at[F_SPEAKER]) || !SLOT(f, at[F_SOURCE]) ||
            !SLOT(f, at[F_FIELDS]) || !SLOT(f, at[F_TEXT])) {
            made = PyObject_CallMethodObjArgs(m.interner, finding_str, f, whole, NULL);
            goto append;
        }
        PyObject *spoke = SLOT(f, at[F_SPEAKER]);
        if (spoke != last) { /* a speaker's findings come together, most often */
            PyObject *id = PyLong_FromVoidPtr(spoke);
            PyObject *seen = id ? PyDict_GetItemWithError(speakers, id) : NULL; /* borrowed */
            if (!seen && id && !PyErr_Occurred()) {
                PyObject *one = PyObject_CallMethodOneArg(m.interner, speaker_str, spoke);
                PyObject *pair = one ? PyTuple_Pack(2, spoke, one) : NULL;
                if (pair && PyDict_SetItem(speakers, id, pair) == 0) seen = pair;
                Py_XDECREF(one);
                Py_XDECREF(pair); /* the dict holds it */
            }
            Py_XDECREF(id);
            if (!seen) goto append;
            last = spoke;
            shared = PyTuple_GET_ITEM(seen, 1);
        }
        if (shared != spoke && shared != Py_None) Py_XSETREF(SLOT(f, at[F_SPEAKER]), Py_NewRef(shared));
        PyObject *value = shared_text(&m, SLOT(f, at[F_SOURCE]));
        if (!value) goto append;
        Py_XSETREF(SLOT(f, at[F_SOURCE]), value);
        if (!(value = shared_fields(&m, SLOT(f, at[F_FIELDS])))) goto append;
        Py_XSETREF(SLOT(f, at[F_FIELDS]), value);
        int held = PySet_Contains(whole, SLOT(f, at[F_TEXT]));
        if (held < 0) goto append;
        if (!held) {
            made = packed_finding(&m, f, packed_type, slots, count, at[F_TEXT], skeleton_at);
            if (!made || made != f) goto append;
            Py_CLEAR(made);
        }
        if ((value = shared_text(&m, SLOT(f, at[F_TEXT])))) {
            Py_XSETREF(SLOT(f, at[F_TEXT]), value);
            made = Py_NewRef(f);
        }
    append:
        Py_DECREF(f);
        if (!made || PyList_Append(out, made) < 0) Py_CLEAR(out);
        Py_XDECREF(made);
    }
    Py_XDECREF(speakers);
    if (out && PyList_GET_SIZE(out) != n) {
        PyErr_SetString(PyExc_RuntimeError, "intern_findings: the list changed size");
        Py_CLEAR(out);
    }
    return out;
}
