/* Lines.spans and Lines.iter_spans: the walk over a scan's lines (included by _linescan_lines.h).
 *
 * spans(memo, resolve, extra_lines=None, siblings=None, limit=2**30, own=None): [(start, end, match)] for every
 * line whose match is not None, in order. A line's match is memo[line bytes]; else, for a line only one pattern
 * of siblings may match, memo[its sibling key]; else resolve(line bytes, start, end, pattern ids, the key looked
 * up). extra_lines: [(start, ids)] sorted by start, lines another scan found (their ids join the line's).
 * With own (see _linescan_own.h), each line's own LineMatch instead of (start, end, match). With direct (the last
 * arguments of match_line), a line resolve would match is matched in C instead: see resolved.
 *
 * iter_spans(memo, resolve, extra_lines, siblings, limit, skip, touched, direct=None): the same spans one at a
 * time, where skip is a dict {id(match): [match, ...]}: a line whose match has such an entry is not returned but counted in
 * it (item 2 goes up by one, items 3 and 4 become the line's start and end, touched[id(entry)] = entry). The
 * scanner adds entries while it walks (a line that will only repeat rows it kept: see correlator.reading), so
 * the lines after it in the same buffer are skipped too: most of a rank log's matched lines are such repeats. */

static PyObject *one_int = NULL;

typedef struct {
    PyObject *memo, *resolve, *extra, *sib, *skip, *touched, *direct; /* skip, direct NULL: none */
    Py_ssize_t limit, extra_n, i, j;
    int has_own;
    Own own;
} Walk;

static int walk_parse(PyObject *args, Walk *w, int with_skip) {
    PyObject *extra = Py_None, *siblings = Py_None, *own_spec = Py_None, *skip = Py_None, *touched = Py_None;
    PyObject *direct = Py_None;
    w->limit = (Py_ssize_t)1 << 30;
    int parsed = with_skip ? PyArg_ParseTuple(args, "O!OOOnO!O!|O", &PyDict_Type, &w->memo, &w->resolve, &extra,
                                              &siblings, &w->limit, &PyDict_Type, &skip, &PyDict_Type, &touched,
                                              &direct)
                           : PyArg_ParseTuple(args, "O!O|OOnOO", &PyDict_Type, &w->memo, &w->resolve, &extra,
                                              &siblings, &w->limit, &own_spec, &direct);
    if (!parsed) return 0;
    if (direct != Py_None && (!PyTuple_Check(direct) || PyTuple_GET_SIZE(direct) != 6)) {
        PyErr_SetString(PyExc_TypeError, "direct must be match_line's 6 last arguments but the span, or None");
        return 0;
    }
    w->direct = direct == Py_None ? NULL : direct;
    w->has_own = own_spec != Py_None;
    if (w->has_own && !own_parse(own_spec, &w->own)) return 0;
    if (extra != Py_None && !PyList_Check(extra)) {
        PyErr_SetString(PyExc_TypeError, "extra_lines must be a list or None");
        return 0;
    }
    if (siblings != Py_None && !PyDict_Check(siblings)) {
        PyErr_SetString(PyExc_TypeError, "siblings must be a dict or None");
        return 0;
    }
    if (!one_int && !(one_int = PyLong_FromLong(1))) return 0;
    w->extra = extra == Py_None ? NULL : extra;
    w->extra_n = w->extra ? PyList_GET_SIZE(extra) : 0;
    w->sib = siblings == Py_None || !PyDict_GET_SIZE(siblings) ? NULL : siblings;
    w->skip = with_skip ? skip : NULL;
    w->touched = with_skip ? touched : NULL;
    w->i = w->j = 0;
    return 1;
}

/* 1: the line was counted in its skip entry; 0: it has none; -1: an error. */
static int skipped(Walk *w, PyObject *match, Py_ssize_t start, Py_ssize_t end) {
    PyObject *id = PyLong_FromVoidPtr(match);
    if (!id) return -1;
    PyObject *entry = PyDict_GetItemWithError(w->skip, id);
    Py_DECREF(id);
    if (!entry) return PyErr_Occurred() ? -1 : 0;
    if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 5 || PyList_GET_ITEM(entry, 0) != match) return 0;
    PyObject *count = PyNumber_Add(PyList_GET_ITEM(entry, 2), one_int);
    PyObject *from = count ? PyLong_FromSsize_t(start) : NULL, *to = from ? PyLong_FromSsize_t(end) : NULL;
    PyObject *key = to ? PyLong_FromVoidPtr(entry) : NULL;
    if (!key) { Py_XDECREF(count), Py_XDECREF(from), Py_XDECREF(to); return -1; }
    PyList_SetItem(entry, 2, count); /* steals the new item, releases the old; the index is in range */
    PyList_SetItem(entry, 3, from);
    PyList_SetItem(entry, 4, to);
    int failed = PyDict_SetItem(w->touched, key, entry);
    Py_DECREF(key);
    return failed < 0 ? -1 : 1;
}

/* The next span (a new reference); NULL at the end (no error set) or on an error. */
static PyObject *walk_next(Lines *self, Walk *w) {
    const char *data = self->view.buf;
    Py_ssize_t size = self->view.len;
    while (w->i < self->line_count || w->j < w->extra_n) {
        Line *line = w->i < self->line_count ? &self->lines[w->i] : NULL;
        PyObject *other = w->j < w->extra_n ? PyList_GET_ITEM(w->extra, w->j) : NULL;
        Py_ssize_t other_start = -1;
        if (other && (!PyTuple_Check(other) || PyTuple_GET_SIZE(other) != 2 ||
                      (other_start = PyLong_AsSsize_t(PyTuple_GET_ITEM(other, 0))) < 0 || other_start > size)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "extra_lines: (start, ids) within the data");
            return NULL;
        }
        int take_line = line && (!other || line->start <= other_start);
        int take_other = other && (!line || other_start <= line->start);
        Py_ssize_t start = take_line ? line->start : other_start, end;
        if (take_line) end = line->end;
        else {
            const char *eol = memchr(data + start, '\n', (size_t)(size - start));
            end = eol ? eol - data : size;
        }
        w->i += take_line, w->j += take_other;
        PyObject *raw = PyBytes_FromStringAndSize(data + start, end - start);
        PyObject *match = raw ? PyDict_GetItemWithError(w->memo, raw) : NULL;
        if (match) Py_INCREF(match);
        else if (raw && !PyErr_Occurred())
            match = unseen(self, take_line ? line : NULL, take_other ? other : NULL, raw, start, end, w->memo,
                           w->resolve, w->sib, w->limit, w->direct);
        Py_XDECREF(raw);
        if (!match) return NULL;
        if (match == Py_None) { Py_DECREF(match); continue; }
        if (w->skip) {
            int counted = skipped(w, match, start, end);
            if (counted != 0) {
                Py_DECREF(match);
                if (counted < 0) return NULL;
                continue;
            }
        }
        if (!w->has_own) return Py_BuildValue("(nnN)", start, end, match);
        PyObject *span = own_match(&w->own, match, start, end, data);
        Py_DECREF(match);
        return span;
    }
    return NULL;
}

static PyObject *Lines_spans(Lines *self, PyObject *args) {
    Walk w;
    if (!walk_parse(args, &w, 0)) return NULL;
    PyObject *out = PyList_New(0), *span;
    while (out && (span = walk_next(self, &w))) {
        if (PyList_Append(out, span) < 0) Py_CLEAR(out);
        Py_DECREF(span);
    }
    if (PyErr_Occurred()) Py_CLEAR(out);
    return out;
}

typedef struct {
    PyObject_HEAD
    Lines *lines;
    Walk walk; /* its objects held by the iterator */
} SpanIter;

static void SpanIter_dealloc(SpanIter *self) {
    Walk *w = &self->walk;
    Py_XDECREF(self->lines);
    Py_XDECREF(w->memo), Py_XDECREF(w->resolve), Py_XDECREF(w->extra), Py_XDECREF(w->sib);
    Py_XDECREF(w->skip), Py_XDECREF(w->touched), Py_XDECREF(w->direct);
    PyObject_Free(self);
}

static PyObject *SpanIter_next(SpanIter *self) { return walk_next(self->lines, &self->walk); }

static PyTypeObject SpanIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "catalog._linescan.SpanIter",
    .tp_basicsize = sizeof(SpanIter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)SpanIter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)SpanIter_next,
};

static PyObject *Lines_iter_spans(Lines *self, PyObject *args) {
    Walk w;
    if (!walk_parse(args, &w, 1)) return NULL;
    SpanIter *it = PyObject_New(SpanIter, &SpanIterType);
    if (!it) return NULL;
    it->lines = (Lines *)Py_NewRef(self);
    it->walk = w;
    Py_INCREF(w.memo), Py_INCREF(w.resolve), Py_XINCREF(w.extra), Py_XINCREF(w.sib);
    Py_INCREF(w.skip), Py_INCREF(w.touched), Py_XINCREF(w.direct);
    return (PyObject *)it;
}
