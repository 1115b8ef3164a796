/* The time stamps who_and_stamp reads (included by _linescan_who.h, whose types and memo it uses): ISO and glog
 * stamps as correlator.timestamps.parse_timestamp reads them, and the stamp before a line that
 * correlator.speakers peels as a prefix, each regex's steps written out beside it. */

static PyObject *new_stamp(PyObject *time) {
    if (!time) return NULL;
    PyObject *stamp = stamp_type->tp_alloc(stamp_type, 2);
    if (!stamp) { Py_DECREF(time); return NULL; }
    PyTuple_SET_ITEM(stamp, 0, time);
    PyTuple_SET_ITEM(stamp, 1, Py_NewRef(wall_name));
    return stamp;
}

/* timestamps._safe: the datetime, or None (a new reference) where its fields make none; NULL on other errors. */
static PyObject *safe_time(long y, int mo, int d, int h, int mi, int sec, int us) {
    PyObject *t = PyDateTimeAPI->DateTime_FromDateAndTime((int)y, mo, d, h, mi, sec, us, utc_zone,
                                                          PyDateTimeAPI->DateTimeType);
    if (t) return t;
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
    PyErr_Clear();
    Py_RETURN_NONE;
}

static int two(const char *s, Py_ssize_t i) { return (s[i] - '0') * 10 + (s[i + 1] - '0'); }

/* int(digits[:6].ljust(6, "0")) */
static int micros(const char *s, Py_ssize_t from, Py_ssize_t to) {
    int us = 0;
    for (Py_ssize_t k = 0; k < 6; k++) us = us * 10 + (from + k < to ? s[from + k] - '0' : 0);
    return us;
}

/* timestamps._tz of the offset at s[j] (_ISO's [+-]\d\d:?\d\d, before n), in seconds: 0 where none stands there. */
static Py_ssize_t offset_seconds(const char *s, Py_ssize_t j, Py_ssize_t n) {
    if (!(j + 2 < n && (s[j] == '+' || s[j] == '-') && is_dig(s[j + 1]) && is_dig(s[j + 2]))) return 0;
    Py_ssize_t m;
    if (j + 5 < n && s[j + 3] == ':' && is_dig(s[j + 4]) && is_dig(s[j + 5])) m = j + 4;
    else if (j + 4 < n && is_dig(s[j + 3]) && is_dig(s[j + 4])) m = j + 3;
    else return 0;
    Py_ssize_t seconds = two(s, j + 1) * 3600 + two(s, m) * 60;
    return s[j] == '-' ? -seconds : seconds;
}

static PyObject *NOT_HERE = NULL; /* a sentinel: this shape is the Python functions' to read */

/* parse_timestamp(s[from:len], year): a new reference to a Stamp or None, NOT_HERE (borrowed), or NULL. */
static PyObject *stamp_of(const char *s, Py_ssize_t from, Py_ssize_t len, long year, PyObject *year_obj) {
    Py_ssize_t n = len - from > STAMP_HEAD ? from + STAMP_HEAD : len;
    if (from < n && s[from] == '[') { /* _BOOT: ^\[\s*(\d{1,9}\.\d{3,9})\] -- a boot stamp is Python's */
        Py_ssize_t i = from + 1;
        while (i < n && is_space(s[i])) i++;
        Py_ssize_t e = digits_from(s, i, n);
        if (e - i >= 1 && e - i <= 9 && e < n && s[e] == '.') {
            Py_ssize_t f = e + 1, fe = digits_from(s, f, n);
            if (fe - f >= 3 && fe - f <= 9 && fe < n && s[fe] == ']') return NOT_HERE;
        }
    }
    int clock = 0; /* _CLOCK: \d\d:\d\d:\d\d */
    for (Py_ssize_t i = from; i + 8 <= n && !clock; i++)
        clock = s[i + 2] == ':' && s[i + 5] == ':' && is_dig(s[i]) && is_dig(s[i + 1]) && is_dig(s[i + 3]) &&
                is_dig(s[i + 4]) && is_dig(s[i + 6]) && is_dig(s[i + 7]);
    if (!clock) Py_RETURN_NONE;
    /* _ISO: (20\d\d)-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)? */
    for (Py_ssize_t i = from; i + 19 <= n; i++) {
        const char *p = s + i;
        if (!(p[0] == '2' && p[1] == '0' && is_dig(p[2]) && is_dig(p[3]) && p[4] == '-' && is_dig(p[5]) &&
              is_dig(p[6]) && p[7] == '-' && is_dig(p[8]) && is_dig(p[9]) && (p[10] == 'T' || p[10] == ' ') &&
              is_dig(p[11]) && is_dig(p[12]) && p[13] == ':' && is_dig(p[14]) && is_dig(p[15]) && p[16] == ':' &&
              is_dig(p[17]) && is_dig(p[18])))
            continue;
        Py_ssize_t j = i + 19, f = j, fe = j;
        if (j + 1 < n && (s[j] == '.' || s[j] == ',') && is_dig(s[j + 1])) {
            f = j + 1;
            fe = f;
            while (fe < n && fe - f < 9 && is_dig(s[fe])) fe++;
            j = fe;
        }
        long y = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + two(p, 2);
        PyObject *t = safe_time(y, two(p, 5), two(p, 8), two(p, 11), two(p, 14), two(p, 17), micros(s, f, fe));
        if (!t || t == Py_None) return t;
        /* (Z|[+-]\d\d:?\d\d)?: "Z" takes nothing off (t - timedelta(0) is t); an offset (RFC 3339 5.6's
           time-numoffset, or ISO 8601's basic +hhmm) is taken off as timestamps._tz takes it */
        Py_ssize_t zone = offset_seconds(s, j, n);
        if (zone != 0) {
            PyObject *delta = PyDelta_FromDSU(0, (int)zone, 0);
            Py_SETREF(t, delta ? PyNumber_Subtract(t, delta) : NULL);
            Py_XDECREF(delta);
            if (!t) return NULL;
        }
        return new_stamp(t);
    }
    /* _GLOG: (?:^|[\[\s:])[IWEF](?P<mo>[01]\d)(?P<d>[0-3]\d) (\d\d):(\d\d):(\d\d)\.(?P<f>\d{1,9}) */
    for (Py_ssize_t start = from; start < n; start++) {
        Py_ssize_t letters[2] = {start == from ? start : -1, -1};
        if (s[start] == '[' || s[start] == ':' || is_space(s[start])) letters[1] = start + 1;
        for (int t = 0; t < 2; t++) {
            Py_ssize_t i = letters[t];
            if (i < 0 || i + 16 > n) continue;
            const char *p = s + i;
            if (!((p[0] == 'I' || p[0] == 'W' || p[0] == 'E' || p[0] == 'F') && (p[1] == '0' || p[1] == '1') &&
                  is_dig(p[2]) && p[3] >= '0' && p[3] <= '3' && is_dig(p[4]) && p[5] == ' ' && is_dig(p[6]) &&
                  is_dig(p[7]) && p[8] == ':' && is_dig(p[9]) && is_dig(p[10]) && p[11] == ':' && is_dig(p[12]) &&
                  is_dig(p[13]) && p[14] == '.' && is_dig(p[15])))
                continue;
            Py_ssize_t f = i + 15, fe = f;
            while (fe < n && fe - f < 9 && is_dig(s[fe])) fe++;
            PyObject *text = PyUnicode_FromStringAndSize(s + start, fe - start); /* m.group(0) */
            PyObject *key = text ? PyTuple_Pack(2, text, year_obj) : NULL;
            Py_XDECREF(text);
            if (!key) return NULL;
            PyObject *known = PyDict_GetItemWithError(glog_memo, key);
            if (known || PyErr_Occurred()) {
                Py_DECREF(key);
                return known ? Py_NewRef(known) : NULL;
            }
            PyObject *time = safe_time(year, two(p, 1), two(p, 3), two(p, 6), two(p, 9), two(p, 12),
                                       micros(s, f, fe));
            PyObject *stamp = !time ? NULL : time == Py_None ? time : new_stamp(time);
            if (stamp && PyDict_GET_SIZE(glog_memo) >= memo_max) PyDict_Clear(glog_memo);
            if (stamp && PyDict_SetItem(glog_memo, key, stamp) < 0) Py_CLEAR(stamp);
            Py_DECREF(key);
            return stamp;
        }
    }
    return NOT_HERE; /* a ctime, syslog or MM-DD stamp, or none: Python's */
}

/* speakers' "stamp" prefix, a collector's time stamp before a line: kubectl logs --timestamps and docker logs -t
 * (RFC 3339 5.6's date-time), the kubelet's CRI log files (then "stdout F "), Python logging's asctime
 * ("2026-11-29 10:02:03,963": a space for the "T", as 5.6's NOTE allows, and a comma before the milliseconds):
 *   ^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?:? (?:(?:stdout|stderr) [FP] )?
 * at s[i]: its end, or -1. No step backtracks to a match: a fraction of fewer digits, no zone or no fraction each
 * leave a digit, "+", "-", "Z", "." or "," where only ":" or " " may follow. */
static Py_ssize_t stamp_prefix_at(const char *s, Py_ssize_t i, Py_ssize_t n) {
    if (n - i < 20) return -1;
    const char *p = s + i;
    if (!(is_dig(p[0]) && is_dig(p[1]) && is_dig(p[2]) && is_dig(p[3]) && p[4] == '-' && is_dig(p[5]) &&
          is_dig(p[6]) && p[7] == '-' && is_dig(p[8]) && is_dig(p[9]) && (p[10] == 'T' || p[10] == ' ') &&
          is_dig(p[11]) && is_dig(p[12]) && p[13] == ':' && is_dig(p[14]) && is_dig(p[15]) && p[16] == ':' &&
          is_dig(p[17]) && is_dig(p[18])))
        return -1;
    Py_ssize_t j = i + 19;
    if (j + 1 < n && (s[j] == '.' || s[j] == ',') && is_dig(s[j + 1])) {
        Py_ssize_t f = j + 1, fe = digits_from(s, f, n);
        if (fe - f > 9) return -1; /* \d{1,9} then a digit: nothing after it can match */
        j = fe;
    }
    if (j < n && s[j] == 'Z') j++;
    else if (j + 2 < n && (s[j] == '+' || s[j] == '-') && is_dig(s[j + 1]) && is_dig(s[j + 2])) {
        if (j + 5 < n && s[j + 3] == ':' && is_dig(s[j + 4]) && is_dig(s[j + 5])) j += 6;
        else if (j + 4 < n && is_dig(s[j + 3]) && is_dig(s[j + 4])) j += 5;
    }
    if (j < n && s[j] == ':') j++;
    if (j >= n || s[j] != ' ') return -1;
    j++;
    if (n - j >= 9 && (memcmp(s + j, "stdout ", 7) == 0 || memcmp(s + j, "stderr ", 7) == 0) &&
        (s[j + 7] == 'F' || s[j + 7] == 'P') && s[j + 8] == ' ')
        j += 9;
    return j;
}
