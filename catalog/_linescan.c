/* catalog._linescan: Hyperscan (the system's libhs) with the line loop in C.
 *
 * The python-hyperscan package calls a Python function for every match; at 4,096 ranks a gigabyte of logs has
 * 400,000 matched lines, and that call plus filing each match under its line cost more than ripgrep's whole scan.
 * Here a C callback files matches under their lines, and `Lines.spans` walks those lines, looking each one up in
 * the caller's memo and calling back into Python only for a line it has not seen.
 *
 * The module mirrors the part of python-hyperscan's API that catalog.engine uses (Database, Scratch, dumpb,
 * loadb, error, HS_* constants), so one engine class drives either library. It holds the GIL throughout. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <hs.h>

static PyObject *HsError;

typedef struct {
    PyObject_HEAD
    hs_database_t *db;
    unsigned int mode;
} Database;

typedef struct {
    PyObject_HEAD
    hs_scratch_t *scratch;
} Scratch;

static PyTypeObject DatabaseType, ScratchType, LinesType;

static PyObject *hs_failed(const char *what, hs_error_t code) {
    PyErr_Format(HsError, "%s failed with Hyperscan error %d", what, (int)code);
    return NULL;
}

/* ---- Database ------------------------------------------------------------------------------------------- */

static int Database_init(Database *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"mode", NULL};
    unsigned int mode = HS_MODE_BLOCK;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|I", names, &mode)) return -1;
    self->mode = mode;
    return 0;
}

static void Database_dealloc(Database *self) {
    if (self->db) hs_free_database(self->db);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Database_compile(Database *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"expressions", "ids", "elements", "flags", NULL};
    PyObject *exprs, *ids, *flags;
    Py_ssize_t n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOnO", names, &exprs, &ids, &n, &flags)) return NULL;
    if (!PyList_Check(exprs) || !PyList_Check(ids) || !PyList_Check(flags) || PyList_GET_SIZE(exprs) < n ||
        PyList_GET_SIZE(ids) < n || PyList_GET_SIZE(flags) < n || n < 1) {
        PyErr_SetString(PyExc_TypeError, "expressions, ids and flags must be lists of at least `elements` items");
        return NULL;
    }
    const char **cexprs = PyMem_Calloc((size_t)n, sizeof(char *));
    unsigned int *cids = PyMem_Calloc((size_t)n, sizeof(unsigned int));
    unsigned int *cflags = PyMem_Calloc((size_t)n, sizeof(unsigned int));
    PyObject *result = NULL;
    if (!cexprs || !cids || !cflags) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        char *expr; /* a C string: an embedded NUL raises ValueError rather than cutting the expression short */
        if (PyBytes_AsStringAndSize(PyList_GET_ITEM(exprs, i), &expr, NULL) < 0) goto done;
        cexprs[i] = expr;
        cids[i] = (unsigned int)PyLong_AsUnsignedLong(PyList_GET_ITEM(ids, i));
        cflags[i] = (unsigned int)PyLong_AsUnsignedLong(PyList_GET_ITEM(flags, i));
        if (PyErr_Occurred()) goto done;
    }
    hs_database_t *db = NULL;
    hs_compile_error_t *err = NULL;
    if (hs_compile_multi(cexprs, cflags, cids, (unsigned int)n, self->mode, NULL, &db, &err) != HS_SUCCESS) {
        PyErr_Format(HsError, "%s (expression %d)", err ? err->message : "compile failed", err ? err->expression : -1);
        hs_free_compile_error(err);
        goto done;
    }
    if (self->db) hs_free_database(self->db);
    self->db = db;
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(cexprs);
    PyMem_Free(cids);
    PyMem_Free(cflags);
    return result;
}

typedef struct { PyObject *handler; } PyCallbackContext;

static int call_python(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                       void *ctx) {
    PyObject *r = PyObject_CallFunction(((PyCallbackContext *)ctx)->handler, "IKKIO", id, from, to, flags, Py_None);
    if (!r) return 1; /* stop the scan; the exception propagates */
    int stop = PyObject_IsTrue(r) == 1;
    Py_DECREF(r);
    return stop;
}

static int need_db(Database *self) {
    if (self->db) return 1;
    PyErr_SetString(HsError, "the database is not compiled");
    return 0;
}

/* A scan calling a Python function (pattern id, from, to, flags, context) per match: the self-check's path. */
static PyObject *Database_scan(Database *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"data", "match_event_handler", "scratch", NULL};
    Py_buffer data;
    PyObject *handler;
    Scratch *scratch;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*OO!", names, &data, &handler, &ScratchType, &scratch)) return NULL;
    PyCallbackContext ctx = {handler};
    hs_error_t rc = need_db(self) ? hs_scan(self->db, data.buf, (unsigned int)data.len, 0, scratch->scratch,
                                            call_python, &ctx) : HS_INVALID;
    PyBuffer_Release(&data);
    if (PyErr_Occurred()) return NULL;
    if (rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED) return hs_failed("hs_scan", rc);
    Py_RETURN_NONE;
}

static PyObject *Lines_scan(Database *db, PyObject *args, PyObject *kw); /* defined in lines.h */

static PyMethodDef Database_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))Database_compile, METH_VARARGS | METH_KEYWORDS, NULL},
    {"scan", (PyCFunction)(void (*)(void))Database_scan, METH_VARARGS | METH_KEYWORDS, NULL},
    {"lines", (PyCFunction)(void (*)(void))Lines_scan, METH_VARARGS | METH_KEYWORDS,
     "lines(data, scratch, first_extra): the matched lines of data (see Lines)"},
    {NULL}};

static PyTypeObject DatabaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "catalog._linescan.Database",
    .tp_basicsize = sizeof(Database),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Database_init,
    .tp_dealloc = (destructor)Database_dealloc,
    .tp_methods = Database_methods,
};

/* ---- Scratch -------------------------------------------------------------------------------------------- */

static int Scratch_init(Scratch *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"database", NULL};
    Database *db;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!", names, &DatabaseType, &db)) return -1;
    if (!need_db(db)) return -1;
    hs_error_t rc = hs_alloc_scratch(db->db, &self->scratch);
    if (rc != HS_SUCCESS) { hs_failed("hs_alloc_scratch", rc); return -1; }
    return 0;
}

static void Scratch_dealloc(Scratch *self) {
    if (self->scratch) hs_free_scratch(self->scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ScratchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "catalog._linescan.Scratch",
    .tp_basicsize = sizeof(Scratch),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scratch_init,
    .tp_dealloc = (destructor)Scratch_dealloc,
};

/* ---- serialisation -------------------------------------------------------------------------------------- */

static PyObject *dumpb(PyObject *mod, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &DatabaseType)) { PyErr_SetString(PyExc_TypeError, "a Database"); return NULL; }
    Database *db = (Database *)arg;
    if (!need_db(db)) return NULL;
    char *bytes = NULL;
    size_t length = 0;
    hs_error_t rc = hs_serialize_database(db->db, &bytes, &length);
    if (rc != HS_SUCCESS) return hs_failed("hs_serialize_database", rc);
    PyObject *out = PyBytes_FromStringAndSize(bytes, (Py_ssize_t)length);
    free(bytes); /* Hyperscan's default allocator is malloc */
    return out;
}

static PyObject *loadb(PyObject *mod, PyObject *args) {
    Py_buffer data;
    unsigned int mode = HS_MODE_BLOCK;
    if (!PyArg_ParseTuple(args, "y*|I", &data, &mode)) return NULL;
    hs_database_t *hdb = NULL;
    hs_error_t rc = hs_deserialize_database(data.buf, (size_t)data.len, &hdb);
    PyBuffer_Release(&data);
    if (rc != HS_SUCCESS) return hs_failed("hs_deserialize_database", rc);
    Database *db = PyObject_New(Database, &DatabaseType);
    if (!db) { hs_free_database(hdb); return NULL; }
    db->db = hdb;
    db->mode = mode;
    return (PyObject *)db;
}

#include "_linescan_lines.h"
#include "_linescan_captures.h"
#include "_linescan_match.h"
#include "_linescan_who.h"
#include "_linescan_plan.h"
#include "_linescan_kept.h"
#include "_linescan_slotted.h"
#include "_linescan_intern.h"
#include "_linescan_packed.h"

/* count_newlines(data, start=0, end=len(data)): data.count(b"\n", start, end), at memory speed. The scanner
 * numbers every line of its input; CPython's count compares one byte at a time, this loop is vectorised (-O3). */
static PyObject *count_newlines(PyObject *mod, PyObject *args) {
    Py_buffer data;
    Py_ssize_t start = 0, end = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "y*|nn", &data, &start, &end)) return NULL;
    Py_ssize_t n = data.len;
    if (start < 0) start = start + n < 0 ? 0 : start + n; /* as a slice reads them */
    if (end < 0) end = end + n < 0 ? 0 : end + n;
    if (end > n) end = n;
    const unsigned char *p = data.buf;
    Py_ssize_t count = 0, i = start;
    /* Byte-wide counters, 16 lanes, summed before any can wrap (255 rounds): the compiler turns the inner loop
     * into one compare and one subtract per 16 bytes, three times the speed of a 64-bit counter's widening. */
    while (end - i >= 16) {
        Py_ssize_t rounds = (end - i) / 16;
        if (rounds > 255) rounds = 255;
        unsigned char lanes[16] = {0};
        for (Py_ssize_t r = 0; r < rounds; r++, i += 16)
            for (int k = 0; k < 16; k++) lanes[k] += p[i + k] == '\n';
        for (int k = 0; k < 16; k++) count += lanes[k];
    }
    for (; i < end; i++) count += p[i] == '\n';
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(count);
}

static PyMethodDef module_methods[] = {
    {"dumpb", dumpb, METH_O, "the database serialised"},
    {"loadb", loadb, METH_VARARGS, "a database from dumpb's bytes"},
    {"sibling_key", sibling_key, METH_VARARGS, "the key the line loop looks a sibling up by"},
    {"count_newlines", count_newlines, METH_VARARGS, "data.count(b'\\n', start, end), vectorised"},
    {"captures", captures, METH_O, "a match's named groups that took part, decimal ones as ints"},
    {"match_line", (PyCFunction)(void (*)(void))match_line, METH_FASTCALL, "Matcher.match_line's loop"},
    {"configure_who", (PyCFunction)(void (*)(void))configure_who, METH_VARARGS | METH_KEYWORDS, "the types and memo who_and_stamp makes and reads"},
    {"who_and_stamp", (PyCFunction)(void (*)(void))who_and_stamp, METH_FASTCALL,
     "_read_who_and_stamp for common ASCII lines, else None"},
    {"planner", planner, METH_O, "plan_for(line_match, raw) bound to a catalog.native_state.PlanState"},
    {"configure_kept", (PyCFunction)(void (*)(void))configure_kept, METH_VARARGS | METH_KEYWORDS, "the record type, first-only kinds and error rows keep_line uses"},
    {"slotted", slotted, METH_VARARGS, "make(*values) for a slotted class, its slots named in order"},
    {"intern_records", (PyCFunction)(void (*)(void))intern_records, METH_FASTCALL,
     "[interner.record(rec) for rec in records], given the interner's memos"},
    {"intern_fields", (PyCFunction)(void (*)(void))intern_fields, METH_FASTCALL, "Interner.fields(fields)"},
    {"intern_findings", (PyCFunction)(void (*)(void))intern_findings, METH_FASTCALL,
     "Interner.findings' loop over a result's findings"},
    {"digit_runs", digit_runs, METH_O, "(digit runs joined by spaces, the text with each run a NUL), or None"},
    {"keeper", keeper, METH_O, "keep_line(contexts, ...) bound to a catalog.native_state.KeptState"},
    {NULL}};

/* ("a", "b", ...) of a NULL-ended list of names. New reference. */
static PyObject *names_tuple(const char *const *names) {
    Py_ssize_t n = 0;
    while (names[n]) n++;
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t k = 0; out && k < n; k++) {
        PyObject *name = PyUnicode_FromString(names[k]);
        if (!name) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, k, name);
    }
    return out;
}

/* What planner and keeper read, by name: tests/unit/test_native_state.py holds catalog/native_state.py to it. */
static int add_field_names(PyObject *m) {
    const char *const *lists[] = {plan_state_fields, plan_fields, kept_state_fields};
    const char *spelled[] = {"PLAN_STATE_FIELDS", "PLAN_FIELDS", "KEPT_STATE_FIELDS"};
    for (int k = 0; k < 3; k++) {
        PyObject *names = names_tuple(lists[k]);
        int failed = names ? PyModule_AddObjectRef(m, spelled[k], names) : -1;
        Py_XDECREF(names);
        if (failed < 0) return -1;
    }
    return 0;
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "catalog._linescan", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__linescan(void) {
    if (hs_valid_platform() != HS_SUCCESS) {
        PyErr_SetString(PyExc_ImportError, "libhs does not run on this CPU");
        return NULL;
    }
    if (PyType_Ready(&DatabaseType) < 0 || PyType_Ready(&ScratchType) < 0 || PyType_Ready(&LinesType) < 0 ||
        PyType_Ready(&SpanIterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    HsError = PyErr_NewException("catalog._linescan.error", NULL, NULL);
    if (PyModule_AddObjectRef(m, "error", HsError) < 0 ||
        PyModule_AddObjectRef(m, "Database", (PyObject *)&DatabaseType) < 0 ||
        PyModule_AddObjectRef(m, "Scratch", (PyObject *)&ScratchType) < 0 ||
        PyModule_AddObjectRef(m, "Lines", (PyObject *)&LinesType) < 0 ||
        PyModule_AddStringConstant(m, "__version__", hs_version()) < 0 ||
        PyModule_AddIntConstant(m, "HS_MODE_BLOCK", HS_MODE_BLOCK) < 0 ||
        PyModule_AddIntConstant(m, "HS_FLAG_MULTILINE", HS_FLAG_MULTILINE) < 0 ||
        PyModule_AddIntConstant(m, "HS_FLAG_PREFILTER", HS_FLAG_PREFILTER) < 0 ||
        PyModule_AddIntConstant(m, "HS_FLAG_CASELESS", HS_FLAG_CASELESS) < 0 ||
        PyModule_AddIntConstant(m, "HS_FLAG_DOTALL", HS_FLAG_DOTALL) < 0 ||
        PyModule_AddIntConstant(m, "HS_FLAG_SINGLEMATCH", HS_FLAG_SINGLEMATCH) < 0 || add_field_names(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
