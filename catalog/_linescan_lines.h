/* Lines: one scan's matches filed under their lines (included by _linescan.c).
 *
 * A match belongs to the line holding its last byte, except that a match ending with a newline belongs to the
 * line before it: the same rule as catalog.engine's Python callback (rfind of a newline before end - 1). */

typedef struct {
    Py_ssize_t start, end; /* the line: its first byte, and its newline (or the data's end) */
    unsigned int id;
} Hit;

typedef struct {
    Hit *hits;
    size_t count, capacity;
    const char *data;
    Py_ssize_t size;
    Py_ssize_t line_start, line_end; /* the last match's line, so its next matches need no search */
    int unsorted;
} Collect;

typedef struct {
    Py_ssize_t start, end, first, count; /* the line, and its pattern ids: ids[first : first + count] */
} Line;

typedef struct {
    PyObject_HEAD
    Py_buffer view; /* keeps the scanned data alive: spans slices lines out of it */
    Line *lines;
    Py_ssize_t line_count;
    unsigned int *ids;
    Hit *extra; /* matches of ids >= first_extra (literals, not patterns): kept apart, never lines */
    Py_ssize_t extra_count;
} Lines;

static int on_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                    void *context) {
    Collect *c = context;
    Py_ssize_t q = to > 1 ? (Py_ssize_t)to - 1 : 0;
    if (q < c->line_start || q > c->line_end) {
        Py_ssize_t lo = q > c->line_end && c->line_end >= 0 ? c->line_end : 0;
        const char *nl = q > lo ? memrchr(c->data + lo, '\n', (size_t)(q - lo)) : NULL;
        c->line_start = nl ? nl - c->data + 1 : 0;
        if (c->count && c->line_start < c->hits[c->count - 1].start) c->unsorted = 1;
        const char *eol = memchr(c->data + c->line_start, '\n', (size_t)(c->size - c->line_start));
        c->line_end = eol ? eol - c->data : c->size;
    }
    if (c->count == c->capacity) {
        size_t grown = c->capacity ? c->capacity * 2 : 1024;
        Hit *hits = PyMem_Realloc(c->hits, grown * sizeof(Hit));
        if (!hits) return 1; /* stops the scan: reported as out of memory */
        c->hits = hits;
        c->capacity = grown;
    }
    c->hits[c->count++] = (Hit){c->line_start, c->line_end, id};
    return 0;
}

static int by_start_then_id(const void *a, const void *b) {
    const Hit *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static void Lines_dealloc(Lines *self) {
    PyMem_Free(self->lines);
    PyMem_Free(self->ids);
    PyMem_Free(self->extra);
    if (self->view.obj) PyBuffer_Release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Group the hits (sorted by line) into lines with sorted, distinct ids; ids >= first_extra go to extra. */
static int file_hits(Lines *self, Hit *hits, size_t count, unsigned int first_extra) {
    self->lines = PyMem_Malloc((count ? count : 1) * sizeof(Line));
    self->ids = PyMem_Malloc((count ? count : 1) * sizeof(unsigned int));
    self->extra = PyMem_Malloc((count ? count : 1) * sizeof(Hit));
    if (!self->lines || !self->ids || !self->extra) return -1;
    Py_ssize_t n_ids = 0;
    for (size_t i = 0; i < count; i++) {
        Hit h = hits[i];
        if (h.id >= first_extra) {
            self->extra[self->extra_count++] = h;
            continue;
        }
        Line *last = self->line_count ? &self->lines[self->line_count - 1] : NULL;
        if (!last || last->start != h.start) {
            last = &self->lines[self->line_count++];
            *last = (Line){h.start, h.end, n_ids, 0};
        }
        /* insert h.id in order unless present: a line has few ids */
        unsigned int *ids = self->ids + last->first;
        Py_ssize_t k = last->count;
        while (k > 0 && ids[k - 1] > h.id) k--;
        if (k > 0 && ids[k - 1] == h.id) continue;
        memmove(ids + k + 1, ids + k, (size_t)(last->count - k) * sizeof(unsigned int));
        ids[k] = h.id;
        last->count++;
        n_ids++;
    }
    return 0;
}

static PyObject *Lines_scan(Database *db, PyObject *args, PyObject *kw) {
    static char *names[] = {"data", "scratch", "first_extra", NULL};
    Scratch *scratch;
    unsigned int first_extra = 0xffffffffu;
    Lines *self = PyObject_New(Lines, &LinesType);
    if (!self) return NULL;
    self->view.obj = NULL;
    self->lines = NULL, self->ids = NULL, self->extra = NULL, self->line_count = self->extra_count = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*O!|I", names, &self->view, &ScratchType, &scratch,
                                     &first_extra) || !need_db(db)) {
        Py_DECREF(self);
        return NULL;
    }
    if (self->view.len > 0xffffffffLL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_ValueError, "Hyperscan scans at most 4 GiB at once");
        return NULL;
    }
    Collect c = {NULL, 0, 0, self->view.buf, self->view.len, -1, -2, 0};
    hs_error_t rc = self->view.len ? hs_scan(db->db, self->view.buf, (unsigned int)self->view.len, 0,
                                             scratch->scratch, on_match, &c) : HS_SUCCESS;
    if (rc == HS_SCAN_TERMINATED) {
        PyMem_Free(c.hits);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (rc != HS_SUCCESS) {
        PyMem_Free(c.hits);
        Py_DECREF(self);
        return hs_failed("hs_scan", rc);
    }
    if (c.unsorted) qsort(c.hits, c.count, sizeof(Hit), by_start_then_id);
    int filed = file_hits(self, c.hits, c.count, first_extra);
    PyMem_Free(c.hits);
    if (filed < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static PyObject *line_ids(Lines *self, Line *line) {
    PyObject *t = PyTuple_New(line->count);
    for (Py_ssize_t k = 0; t && k < line->count; k++) {
        PyObject *id = PyLong_FromUnsignedLong(self->ids[line->first + k]);
        if (!id) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, k, id);
    }
    return t;
}

/* {line start: {pattern ids}}, in line order */
static PyObject *Lines_candidates(Lines *self, PyObject *unused) {
    PyObject *out = PyDict_New();
    for (Py_ssize_t i = 0; out && i < self->line_count; i++) {
        PyObject *ids = line_ids(self, &self->lines[i]);
        PyObject *set = ids ? PySet_New(ids) : NULL;
        PyObject *start = PyLong_FromSsize_t(self->lines[i].start);
        if (!set || !start || PyDict_SetItem(out, start, set) < 0) Py_CLEAR(out);
        Py_XDECREF(ids), Py_XDECREF(set), Py_XDECREF(start);
    }
    return out;
}

/* {extra id: [start of the line of each of its matches]} */
static PyObject *Lines_extra_hits(Lines *self, PyObject *unused) {
    PyObject *out = PyDict_New();
    for (Py_ssize_t i = 0; out && i < self->extra_count; i++) {
        PyObject *id = PyLong_FromUnsignedLong(self->extra[i].id);
        PyObject *start = PyLong_FromSsize_t(self->extra[i].start);
        PyObject *starts = id ? PyDict_GetItemWithError(out, id) : NULL;
        if (id && start && !starts && !PyErr_Occurred()) {
            starts = PyList_New(0);
            if (starts && PyDict_SetItem(out, id, starts) < 0) Py_CLEAR(starts);
            Py_XDECREF(starts); /* the dict holds it */
        }
        if (!starts || PyList_Append(starts, start) < 0) Py_CLEAR(out);
        Py_XDECREF(id), Py_XDECREF(start);
    }
    return out;
}

/* The ids of a line both scans found (mine may be NULL: none), their union sorted. */
static PyObject *merged_ids(PyObject *mine, PyObject *theirs) {
    PyObject *set = PySet_New(mine), *it = set ? PyObject_GetIter(theirs) : NULL, *id;
    while (it && (id = PyIter_Next(it))) {
        int added = PySet_Add(set, id);
        Py_DECREF(id);
        if (added < 0) break;
    }
    Py_XDECREF(it);
    PyObject *list = set && !PyErr_Occurred() ? PySequence_List(set) : NULL;
    Py_XDECREF(set);
    if (!list || PyList_Sort(list) < 0) { Py_XDECREF(list); return NULL; }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}

#include "_linescan_siblings.h"
#include "_linescan_own.h"

/* A line the memo lacks under its bytes: its sibling key's match, else resolve's. New reference or NULL. */
static PyObject *match_line(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* _linescan_match.h */

/* resolve's own work where direct is (confirms, confirmer, caseless, LineMatch, max_chars, kept_text), the rest
 * of match_line's arguments: the line decoded as resolve decodes it (UTF-8, errors replaced, trailing CRs
 * stripped), matched, and remembered under both keys; without a Python frame between. New reference or NULL. */
static PyObject *resolved(PyObject *direct, PyObject *raw, PyObject *ids, PyObject *from, PyObject *to,
                          PyObject *key, PyObject *memo, Py_ssize_t limit) {
    static PyObject *cr = NULL;
    if (!cr && !(cr = PyUnicode_InternFromString("\r"))) return NULL;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), "replace");
    Py_ssize_t n = text ? PyUnicode_GET_LENGTH(text) : 0;
    if (text && n && PyUnicode_READ_CHAR(text, n - 1) == '\r') Py_SETREF(text, PyObject_CallMethod(text, "rstrip", "O", cr));
    if (!text) return NULL;
    PyObject *args[10] = {text, ids, PyTuple_GET_ITEM(direct, 0), PyTuple_GET_ITEM(direct, 1),
                          PyTuple_GET_ITEM(direct, 2), from, to, PyTuple_GET_ITEM(direct, 3),
                          PyTuple_GET_ITEM(direct, 4), PyTuple_GET_ITEM(direct, 5)};
    PyObject *match = match_line(NULL, args, 10);
    Py_DECREF(text);
    if (match && remember(memo, limit, raw, key, match) < 0) Py_CLEAR(match);
    return match;
}

static PyObject *unseen(Lines *self, Line *line, PyObject *other, PyObject *raw, Py_ssize_t start, Py_ssize_t end,
                        PyObject *memo, PyObject *resolve, PyObject *siblings, Py_ssize_t limit, PyObject *direct) {
    PyObject *key = NULL, *match = NULL, *spec, *after, *before;
    if (line && !other && line->count == 1 && (spec = sibling_spec(siblings, self->ids[line->first]))) {
        if (!literals_ok(spec, &after, &before) || !(key = masked_key(self->ids[line->first], raw, after, before)))
            return NULL;
        if (key != raw && (match = PyDict_GetItemWithError(memo, key))) {
            Py_INCREF(match);
            if (remember(memo, limit, raw, key, match) < 0) Py_CLEAR(match);
            Py_DECREF(key);
            return match;
        }
    }
    if (PyErr_Occurred()) { Py_XDECREF(key); return NULL; }
    if (!key) key = Py_NewRef(raw);
    PyObject *mine = line ? line_ids(self, line) : NULL, *ids = NULL;
    if (!line || mine) ids = other ? merged_ids(mine, PyTuple_GET_ITEM(other, 1)) : Py_NewRef(mine);
    Py_XDECREF(mine);
    PyObject *from = ids ? PyLong_FromSsize_t(start) : NULL, *to = from ? PyLong_FromSsize_t(end) : NULL;
    if (to && direct) match = resolved(direct, raw, ids, from, to, key, memo, limit);
    else if (to) {
        PyObject *call[] = {raw, from, to, ids, key};
        match = PyObject_Vectorcall(resolve, call, 5, NULL);
    }
    Py_XDECREF(ids), Py_XDECREF(from), Py_XDECREF(to);
    Py_DECREF(key);
    return match;
}

#include "_linescan_walk.h"

static PyMethodDef Lines_methods[] = {
    {"candidates", (PyCFunction)Lines_candidates, METH_NOARGS, "{line start: {pattern ids}}"},
    {"extra_hits", (PyCFunction)Lines_extra_hits, METH_NOARGS, "{extra id: [line starts]}"},
    {"spans", (PyCFunction)Lines_spans, METH_VARARGS, "[(start, end, match)]: see the C source"},
    {"iter_spans", (PyCFunction)Lines_iter_spans, METH_VARARGS, "spans, one at a time, skipping as it goes"},
    {NULL}};

static PyTypeObject LinesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "catalog._linescan.Lines",
    .tp_basicsize = sizeof(Lines),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Lines_dealloc,
    .tp_methods = Lines_methods,
};
