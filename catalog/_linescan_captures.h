/* captures(match): catalog.matcher's _captures in C, for the engine's every confirmed line (130,000 a GB at
 * 4,096 ranks; 1.0 us each in Python, most of it the loop over the groups). The named groups that took part,
 * those that read as int() would (decimal digits, up to 12, a leading "-" allowed) converted to ints. Python's
 * str.isdecimal is Py_UNICODE_ISDECIMAL on every character, and PyLong_FromUnicodeObject is int(): the two
 * versions agree on every string (tests/unit/test_captures.py). */

static PyObject *groupdict_name = NULL;

static int all_decimal(PyObject *text, Py_ssize_t from, Py_ssize_t n) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (from >= n) return 0; /* "".isdecimal() is False */
    for (Py_ssize_t i = from; i < n; i++)
        if (!Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i))) return 0;
    return 1;
}

static int as_number(PyObject *value) {
    if (!PyUnicode_Check(value)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    if (n == 0) return 0;
    if (PyUnicode_READ_CHAR(value, 0) == '-') return n <= 13 && all_decimal(value, 1, n);
    return n <= 12 && all_decimal(value, 0, n);
}

static PyObject *captures(PyObject *mod, PyObject *match) {
    if (!groupdict_name && !(groupdict_name = PyUnicode_InternFromString("groupdict"))) return NULL;
    PyObject *found = PyObject_CallMethodNoArgs(match, groupdict_name);
    if (!found) return NULL;
    if (!PyDict_Check(found)) { Py_DECREF(found); PyErr_SetString(PyExc_TypeError, "groupdict() gave no dict"); return NULL; }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int dropped = 0;
    while (PyDict_Next(found, &pos, &key, &value)) { /* values of existing keys may be replaced while iterating */
        if (value == Py_None) { dropped = 1; continue; }
        if (!as_number(value)) continue;
        PyObject *number = PyLong_FromUnicodeObject(value, 10);
        if (!number) { Py_DECREF(found); return NULL; }
        int rc = PyDict_SetItem(found, key, number);
        Py_DECREF(number);
        if (rc < 0) { Py_DECREF(found); return NULL; }
    }
    if (!dropped) return found;
    PyObject *kept = PyDict_New();
    if (!kept) { Py_DECREF(found); return NULL; }
    pos = 0;
    while (PyDict_Next(found, &pos, &key, &value))
        if (value != Py_None && PyDict_SetItem(kept, key, value) < 0) { Py_DECREF(kept); Py_DECREF(found); return NULL; }
    Py_DECREF(found);
    return kept;
}
