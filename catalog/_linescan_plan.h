/* plan_for: SourceScanner._plan_for for a line that is not a continuation (included by _linescan.c, after
 * _linescan_who.h).
 *
 * The scanner reads each distinct matched line once: who said it, when, its text, and the fold row of each of
 * its context records. At 4,096 ranks that is 90,000 lines a gigabyte, and the Python method's own steps (its
 * key, the sibling test, the Who kept once, the rows, the plan) cost a third of the scanner's Python time. The
 * steps here are the method's, in its order, calling back into Python where it does more than tuple work: the
 * speaker reading when the C one declines (the shapes _linescan_who.h leaves to Python), an errorish record's
 * row (its template masking), and line_text for a sibling's bytes. correlator/reading.py keeps the Python method
 * as the fallback and the reference; tests/unit/test_native_plan.py compares the two.
 *
 * planner(state) takes a catalog.native_state.PlanState, made once per scanner, reads its fields by name once
 * (a field missing, or of the wrong type, is a TypeError naming it) and returns plan_for(line_match, raw), bound
 * to them: the dicts it fills (plans, whos) are the state's own, the rest is read as it was when bound. */

/* PlanState's fields, in the order the state's array holds them here (catalog/native_state.py documents each) */
static const char *const plan_state_fields[] = {"plans", "base", "year", "whos", "errorish", "sibling_kinds",
                                                "plan_type", "max_line_chars", "said_memo", "folded_kinds",
                                                "python_who_and_stamp", "line_text", NULL};
enum { P_PLANS, P_BASE, P_YEAR, P_WHOS, P_ERRORISH, P_SIBLING_KINDS, P_PLAN, P_MAX_CHARS, P_SAID_MEMO, P_FOLDED,
       P_PY_WHO, P_LINE_TEXT, P_STATE_SIZE };
/* the fields of a plan (plan_type's slots), set on each plan made */
static const char *const plan_fields[] = {"who", "stamp", "text", "raw", "contexts", "folded_only", NULL};

/* state.<name> for each of names (NULL-ended) into out, new references; -1 with a TypeError naming the first
 * field missing. ``interned``: the caller's static array, as long as names, where the names are made once (a
 * scanner binds its state once per source: 163,840 times at 131,072 ranks). */
static int read_fields(PyObject *state, const char *const *names, PyObject **interned, PyObject **out,
                       const char *who) {
    for (int k = 0; names[k]; k++) {
        if (!interned[k] && !(interned[k] = PyUnicode_InternFromString(names[k]))) {
            while (k--) Py_CLEAR(out[k]);
            return -1;
        }
        out[k] = PyObject_GetAttr(state, interned[k]);
        if (out[k]) continue;
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: the state has no field '%s' (%s): see catalog/native_state.py", who,
                         names[k], Py_TYPE(state)->tp_name);
        }
        while (k--) Py_CLEAR(out[k]);
        return -1;
    }
    return 0;
}

/* -1 with a TypeError naming the field, unless ok. */
static int field_is(int ok, const char *who, const char *field, const char *what) {
    if (ok) return 0;
    PyErr_Format(PyExc_TypeError, "%s: the state's field '%s' must be %s: see catalog/native_state.py", who, field,
                 what);
    return -1;
}

/* Matcher.may_be_sibling: no signature, and a context kind whose lines share one LineMatch. */
static int sibling_kind_in(PyObject *signature, PyObject *context, PyObject *sibling_kinds) {
    if (signature != Py_None || PySet_GET_SIZE(sibling_kinds) == 0) return 0;
    PyObject *kind, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(context, &pos, &kind, &value)) {
        int found = PySet_Contains(sibling_kinds, kind);
        if (found != 0) return found; /* 1, or -1 on error */
    }
    return 0;
}

/* (kind, captures, row) for one context record: an errorish one's from the scanner's method, else its fold row
 * (kept.fold_row: (kind, tuple(captures.items()), who) for a folded kind, else None). New reference. */
static PyObject *context_item(PyObject *const *state, PyObject *kind, PyObject *captures, PyObject *who,
                              PyObject *text, PyObject *signature) {
    static PyObject *errorish = NULL, *generic = NULL;
    if (!errorish && !(errorish = PyUnicode_InternFromString("errorish"))) return NULL;
    if (!generic && !(generic = PyUnicode_InternFromString("generic"))) return NULL;
    int is_errorish = PyUnicode_Check(kind) ? PyUnicode_Compare(kind, errorish) == 0 : 0;
    if (PyErr_Occurred()) return NULL;
    if (is_errorish) {
        int catalogued = 0;
        if (signature != Py_None) {
            PyObject *flag = PyObject_GetAttr(signature, generic);
            if (!flag) return NULL;
            int truth = PyObject_IsTrue(flag);
            Py_DECREF(flag);
            if (truth < 0) return NULL;
            catalogued = !truth;
        }
        PyObject *args[4] = {captures, who, text, catalogued ? Py_True : Py_False};
        PyObject *item = PyObject_Vectorcall(state[P_ERRORISH], args, 4, NULL);
        if (item && (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3)) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_TypeError, "the errorish method must return (kind, captures, row)");
            return NULL;
        }
        return item;
    }
    int folded = PySet_Contains(state[P_FOLDED], kind);
    if (folded < 0) return NULL;
    PyObject *row = NULL;
    if (folded) {
        PyObject *items = PyDict_Check(captures) ? PyDict_Items(captures) : NULL;
        PyObject *pairs = items ? PyList_AsTuple(items) : NULL;
        Py_XDECREF(items);
        if (!pairs) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a context record's captures must be a dict");
            return NULL;
        }
        row = PyTuple_Pack(3, kind, pairs, who);
        Py_DECREF(pairs);
        if (!row) return NULL;
    } else {
        row = Py_NewRef(Py_None);
    }
    PyObject *item = PyTuple_Pack(3, kind, captures, row);
    Py_DECREF(row);
    return item;
}

/* (who, stamp): the C reading, else the Python one's. New reference. */
static PyObject *read_who_and_stamp(PyObject *const *state, PyObject *line) {
    PyObject *args[4] = {line, state[P_BASE], state[P_YEAR], Py_None};
    PyObject *found = who_and_stamp(NULL, args, 3);
    if (found != Py_None) return found; /* a pair, or NULL */
    Py_DECREF(found);
    PyObject *py_args[4] = {line, state[P_BASE], Py_None, state[P_YEAR]};
    found = PyObject_Vectorcall(state[P_PY_WHO], py_args, 4, NULL);
    if (found && (!PyTuple_Check(found) || PyTuple_GET_SIZE(found) != 2)) {
        Py_DECREF(found);
        PyErr_SetString(PyExc_TypeError, "the speaker reading must return (who, stamp)");
        return NULL;
    }
    return found;
}

/* The plan's text: line.strip()[:500]. New reference. */
static PyObject *plan_text(PyObject *line) {
    PyObject *stripped = PyObject_CallMethod(line, "strip", NULL);
    if (!stripped || !PyUnicode_Check(stripped) || PyUnicode_GET_LENGTH(stripped) <= 500) return stripped;
    Py_SETREF(stripped, PyUnicode_Substring(stripped, 0, 500));
    return stripped;
}

/* An instance of the slotted dataclass Plan with its fields set, made as object.__new__ makes it: its generated
 * __init__ is a Python frame, which cost as much as the rest of a plan. New reference or NULL. */
static PyObject *new_instance(PyObject *type, PyObject *who, PyObject *stamp, PyObject *text, PyObject *raw,
                              PyObject *contexts, PyObject *folded_only) {
    static PyObject *names[6] = {NULL};
    for (int k = 0; k < 6; k++)
        if (!names[k] && !(names[k] = PyUnicode_InternFromString(plan_fields[k]))) return NULL;
    PyObject *empty = PyTuple_New(0);
    PyObject *plan = empty ? ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, empty, NULL) : NULL;
    Py_XDECREF(empty);
    PyObject *values[6] = {who, stamp, text, raw, contexts, folded_only};
    for (int k = 0; plan && k < 6; k++)
        if (PyObject_GenericSetAttr(plan, names[k], values[k]) < 0) Py_CLEAR(plan);
    return plan;
}

/* A new plan for lm, or NULL. */
static PyObject *new_plan(PyObject *const *state, PyObject *lm, PyObject *raw) {
    PyObject *text_of_lm = PyTuple_GET_ITEM(lm, 2), *signature = PyTuple_GET_ITEM(lm, 3);
    PyObject *context = PyTuple_GET_ITEM(lm, 5);
    int sibling = sibling_kind_in(signature, context, state[P_SIBLING_KINDS]);
    if (sibling < 0) return NULL;
    /* a sibling's LineMatch holds another line's text: read this line's own bytes (decoded once, in spans) */
    PyObject *line = sibling ? PyObject_CallOneArg(state[P_LINE_TEXT], raw) : Py_NewRef(text_of_lm);
    if (!line) return NULL;
    PyObject *found = read_who_and_stamp(state, line);
    PyObject *who = NULL, *text = NULL, *contexts = NULL, *plan = NULL;
    if (!found) goto done;
    who = Py_NewRef(PyTuple_GET_ITEM(found, 0));
    if (PyDict_GET_SIZE(state[P_WHOS]) < PyLong_AsSsize_t(state[P_SAID_MEMO])) {
        PyObject *kept = PyDict_SetDefault(state[P_WHOS], who, who); /* borrowed */
        if (!kept) goto done;
        Py_SETREF(who, Py_NewRef(kept));
    }
    if (PyErr_Occurred() || !(text = plan_text(line)) || !(contexts = PyList_New(0))) goto done;
    int folded_only = 1;
    PyObject *kind, *captures;
    Py_ssize_t pos = 0;
    while (PyDict_Next(context, &pos, &kind, &captures)) {
        PyObject *item = context_item(state, kind, captures, who, text, signature);
        if (!item) goto done;
        folded_only = folded_only && PyTuple_GET_ITEM(item, 2) != Py_None;
        int failed = PyList_Append(contexts, item);
        Py_DECREF(item);
        if (failed < 0) goto done;
    }
    plan = new_instance(state[P_PLAN], who, PyTuple_GET_ITEM(found, 1), text, raw, contexts,
                        folded_only ? Py_True : Py_False);
done:
    Py_DECREF(line);
    Py_XDECREF(found);
    Py_XDECREF(who);
    Py_XDECREF(text);
    Py_XDECREF(contexts);
    return plan;
}

typedef struct {
    PyObject *field[P_STATE_SIZE];
} plan_state;

static void plan_state_free(PyObject *capsule) {
    plan_state *st = PyCapsule_GetPointer(capsule, NULL);
    if (!st) return;
    for (int k = 0; k < P_STATE_SIZE; k++) Py_XDECREF(st->field[k]);
    PyMem_Free(st);
}

/* plan_for(line_match, raw), bound by planner to one PlanState: SourceScanner._plan_for(lm, None, raw). */
static PyObject *plan_for(PyObject *bound, PyObject *const *args, Py_ssize_t nargs) {
    plan_state *st = PyCapsule_GetPointer(bound, NULL);
    if (!st) return NULL;
    if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 6 || !PyBytes_Check(args[1]) ||
        !PyDict_Check(PyTuple_GET_ITEM(args[0], 5))) {
        PyErr_SetString(PyExc_TypeError, "plan_for(line_match, raw)");
        return NULL;
    }
    PyObject *const *state = st->field;
    PyObject *lm = args[0], *raw = args[1], *plans = state[P_PLANS];
    PyObject *key = PyTuple_Pack(2, PyTuple_GET_ITEM(lm, 2), Py_None);
    if (!key) return NULL;
    PyObject *plan = PyDict_GetItemWithError(plans, key);
    if (plan || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(plan);
    }
    plan = new_plan(state, lm, raw);
    PyObject *text = PyTuple_GET_ITEM(lm, 2);
    Py_ssize_t max_chars = PyLong_AsSsize_t(state[P_MAX_CHARS]), memo = PyLong_AsSsize_t(state[P_SAID_MEMO]);
    /* a truncated text may stand for lines that differ further on: such a plan is not kept */
    if (plan && !PyErr_Occurred() && PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) <= max_chars) {
        if (PyDict_GET_SIZE(plans) >= memo) PyDict_Clear(plans);
        if (PyDict_SetItem(plans, key, plan) < 0) Py_CLEAR(plan);
    }
    if (PyErr_Occurred()) Py_CLEAR(plan);
    Py_DECREF(key);
    return plan;
}

static PyMethodDef plan_for_def = {"plan_for", (PyCFunction)(void (*)(void))plan_for, METH_FASTCALL,
                                   "SourceScanner._plan_for(line_match, None, raw), on the PlanState it was bound to"};

/* planner(state): plan_for bound to a PlanState, its fields checked here, once. */
static PyObject *planner(PyObject *mod, PyObject *state) {
    static const char *who = "planner";
    static PyObject *interned[P_STATE_SIZE] = {NULL};
    plan_state *st = PyMem_Calloc(1, sizeof *st);
    if (!st) return PyErr_NoMemory();
    PyObject *const *field = st->field;
    if (read_fields(state, plan_state_fields, interned, st->field, who) < 0) {
        PyMem_Free(st);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(st, NULL, plan_state_free);
    if (!capsule) {
        for (int k = 0; k < P_STATE_SIZE; k++) Py_XDECREF(st->field[k]);
        PyMem_Free(st);
        return NULL;
    }
    const char *const *name = plan_state_fields;
    if (field_is(PyDict_CheckExact(field[P_PLANS]), who, name[P_PLANS], "a dict") < 0 ||
        field_is(PyDict_CheckExact(field[P_WHOS]), who, name[P_WHOS], "a dict") < 0 ||
        field_is(PyLong_Check(field[P_YEAR]), who, name[P_YEAR], "an int") < 0 ||
        field_is(PyAnySet_Check(field[P_SIBLING_KINDS]), who, name[P_SIBLING_KINDS], "a set or frozenset") < 0 ||
        field_is(PyAnySet_Check(field[P_FOLDED]), who, name[P_FOLDED], "a set or frozenset") < 0 ||
        field_is(PyType_Check(field[P_PLAN]), who, name[P_PLAN], "a type") < 0 ||
        field_is(PyLong_Check(field[P_MAX_CHARS]), who, name[P_MAX_CHARS], "an int") < 0 ||
        field_is(PyLong_Check(field[P_SAID_MEMO]), who, name[P_SAID_MEMO], "an int") < 0 ||
        field_is(PyCallable_Check(field[P_ERRORISH]), who, name[P_ERRORISH], "callable") < 0 ||
        field_is(PyCallable_Check(field[P_PY_WHO]), who, name[P_PY_WHO], "callable") < 0 ||
        field_is(PyCallable_Check(field[P_LINE_TEXT]), who, name[P_LINE_TEXT], "callable") < 0)
        goto failed;
    for (int k = 0; plan_fields[k]; k++) {
        int has = PyObject_HasAttrString(field[P_PLAN], plan_fields[k]);
        if (!has) {
            PyErr_Format(PyExc_TypeError, "planner: the state's plan_type %s has no field '%s': see "
                         "catalog/native_state.py", ((PyTypeObject *)field[P_PLAN])->tp_name, plan_fields[k]);
            goto failed;
        }
    }
    PyObject *bound = PyCFunction_NewEx(&plan_for_def, capsule, NULL);
    Py_DECREF(capsule);
    return bound;
failed:
    Py_DECREF(capsule);
    return NULL;
}
