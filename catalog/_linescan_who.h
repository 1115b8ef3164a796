/* who_and_stamp(line, base, year): correlator.reading's _read_who_and_stamp (without an owner line) in C, for the
 * shapes most distinct lines have: ASCII, an NCCL header or the launcher prefixes torchrun, srun and pdsh print,
 * and an ISO or glog time stamp or none. It reads what correlator.speakers and correlator.timestamps read, by
 * their regexes' own steps (each written out below next to the regex it follows), and returns (who, stamp).
 * For any other shape (non-ASCII text, a Ray or vLLM prefix, a syslog head, a dmesg boot stamp, a zoned ISO
 * stamp, a ctime or MM-DD stamp) it returns None and the Python functions read the line: they stay the
 * reference, and tests/unit/test_native_who.py checks the two agree on generated and real lines.
 * configure_who(Who, Stamp, UTC, not_hosts, glog_memo, memo_max) hands it the Python types and the glog memo
 * first. */
#include <datetime.h>

static PyTypeObject *who_type = NULL, *stamp_type = NULL;
static PyObject *utc_zone = NULL, *not_hosts = NULL, *glog_memo = NULL, *wall_name = NULL;
static Py_ssize_t memo_max = 4096;

#define WHO_HEAD 200   /* speakers.py: the NCCL header is looked for in a line's first 200 characters */
#define STAMP_HEAD 160 /* timestamps.HEAD */

static PyObject *configure_who(PyObject *mod, PyObject *args) {
    PyObject *who, *stamp, *utc, *hosts, *memo;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!n", &PyType_Type, &who, &PyType_Type, &stamp, &utc, &PyFrozenSet_Type,
                          &hosts, &PyDict_Type, &memo, &most))
        return NULL;
    if (!PyDateTimeAPI) {
        PyDateTime_IMPORT;
        if (!PyDateTimeAPI) return NULL;
    }
    if (!wall_name && !(wall_name = PyUnicode_InternFromString("wall"))) return NULL;
    Py_XSETREF(who_type, (PyTypeObject *)Py_NewRef(who));
    Py_XSETREF(stamp_type, (PyTypeObject *)Py_NewRef(stamp));
    Py_XSETREF(utc_zone, Py_NewRef(utc));
    Py_XSETREF(not_hosts, Py_NewRef(hosts));
    Py_XSETREF(glog_memo, Py_NewRef(memo));
    memo_max = most;
    Py_RETURN_NONE;
}

/* Python's str regexes on ASCII text: \d is [0-9], \w is [A-Za-z0-9_], \s includes \x1c-\x1f. */
static inline int is_dig(char c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static inline int is_word(char c) { return is_dig(c) || is_alpha(c) || c == '_'; }
static inline int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

static Py_ssize_t digits_from(const char *s, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && is_dig(s[i])) i++;
    return i;
}

static PyObject *int_of(const char *s, Py_ssize_t from, Py_ssize_t to) {
    char buf[64];
    Py_ssize_t len = to - from;
    if (len > 0 && len < (Py_ssize_t)sizeof buf) {
        memcpy(buf, s + from, len);
        buf[len] = 0;
        return PyLong_FromString(buf, NULL, 10);
    }
    PyObject *text = PyUnicode_FromStringAndSize(s + from, len);
    if (!text) return NULL;
    PyObject *out = PyLong_FromUnicodeObject(text, 10);
    Py_DECREF(text);
    return out;
}

typedef struct {
    Py_ssize_t host, host_end, pid, pid_end, dev, dev_end, end;
} NcclHeader;

/* (?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]  with the host at h, before n. No step
 * backtracks: each run is followed by a character its class excludes. */
static int nccl_at(const char *s, Py_ssize_t h, Py_ssize_t n, NcclHeader *out) {
    Py_ssize_t i = h;
    if (i >= n || !(is_dig(s[i]) || is_alpha(s[i]))) return 0;
    for (i++; i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '-'); i++) {}
    if (i >= n || s[i] != ':') return 0;
    out->host = h, out->host_end = i, out->pid = ++i;
    if ((i = digits_from(s, i, n)) == out->pid || i >= n || s[i] != ':') return 0;
    out->pid_end = i++;
    Py_ssize_t tid = i;
    if ((i = digits_from(s, i, n)) == tid || i + 1 >= n || s[i] != ' ' || s[i + 1] != '[') return 0;
    out->dev = i += 2;
    if ((i = digits_from(s, i, n)) == out->dev || i + 1 >= n || s[i] != ']' || s[i + 1] != ' ') return 0;
    out->dev_end = i, out->end = i + 2;
    return 1;
}

/* _NCCL.search(s[from:], 0, 200): (?:^|\s|\]) then the header; the leftmost start wins. */
static int nccl_search(const char *s, Py_ssize_t from, Py_ssize_t n, NcclHeader *out) {
    if (n > from + WHO_HEAD) n = from + WHO_HEAD;
    if (nccl_at(s, from, n, out)) return 1;
    for (Py_ssize_t i = from; i < n; i++)
        if ((is_space(s[i]) || s[i] == ']') && nccl_at(s, i + 1, n, out)) return 1;
    return 0;
}

/* _RANK_IN_TEXT.search(s[from:n]): \[(?:PG ID \d+ PG GUID \S+ )?Rank (?P<rank>\d+)\] */
static int rank_in_text(const char *s, Py_ssize_t from, Py_ssize_t n, Py_ssize_t *rank, Py_ssize_t *rank_end) {
    static const char pg[] = "PG ID ", guid[] = " PG GUID ", word[] = "Rank ";
    for (Py_ssize_t at = from; at < n; at++) {
        if (s[at] != '[') continue;
        Py_ssize_t starts[2] = {-1, at + 1}; /* after the optional group, then without it */
        Py_ssize_t i = at + 1;
        if (n - i >= 6 && memcmp(s + i, pg, 6) == 0) {
            Py_ssize_t d = i + 6, e = digits_from(s, d, n);
            if (e > d && n - e >= 9 && memcmp(s + e, guid, 9) == 0) {
                Py_ssize_t g = e + 9, k = g;
                while (k < n && !is_space(s[k])) k++;
                if (k > g && k < n && s[k] == ' ') starts[0] = k + 1;
            }
        }
        for (int t = 0; t < 2; t++) {
            Py_ssize_t r = starts[t];
            if (r < 0 || n - r < 5 || memcmp(s + r, word, 5) != 0) continue;
            Py_ssize_t d = r + 5, e = digits_from(s, d, n);
            if (e > d && e < n && s[e] == ']') {
                *rank = d, *rank_end = e;
                return 1;
            }
        }
    }
    return 0;
}

/* _SYSLOG_HOST.match(s[from:]): ^[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d (?P<host>[\w.-]+) [\w./-]+(?:\[\d+\])?: */
static int syslog_host(const char *s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *host, Py_ssize_t *host_end) {
    if (n - i < 4 || !(s[i] >= 'A' && s[i] <= 'Z') || !(s[i + 1] >= 'a' && s[i + 1] <= 'z') ||
        !(s[i + 2] >= 'a' && s[i + 2] <= 'z') || s[i + 3] != ' ')
        return 0;
    for (i += 3; i < n && s[i] == ' '; i++) {}
    Py_ssize_t d = i;
    i = digits_from(s, i, n);
    if (i - d < 1 || i - d > 2 || i >= n || s[i] != ' ') return 0;
    i++;
    if (n - i < 9 || !is_dig(s[i]) || !is_dig(s[i + 1]) || s[i + 2] != ':' || !is_dig(s[i + 3]) ||
        !is_dig(s[i + 4]) || s[i + 5] != ':' || !is_dig(s[i + 6]) || !is_dig(s[i + 7]) || s[i + 8] != ' ')
        return 0;
    Py_ssize_t h = i += 9;
    while (i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '-')) i++;
    if (i == h || i >= n || s[i] != ' ') return 0;
    Py_ssize_t he = i++, p = i;
    while (i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '/' || s[i] == '-')) i++;
    if (i == p) return 0;
    if (i < n && s[i] == '[') {
        Py_ssize_t e = digits_from(s, i + 1, n);
        if (e > i + 1 && n - e >= 3 && s[e] == ']' && s[e + 1] == ':' && s[e + 2] == ' ') {
            *host = h, *host_end = he;
            return 1;
        }
        return 0; /* without the bracket, ": " would have to stand where "[" does */
    }
    if (n - i < 2 || s[i] != ':' || s[i + 1] != ' ') return 0;
    *host = h, *host_end = he;
    return 1;
}

/* speakers._looks_like_host for a pdsh host candidate. */
static int looks_like_host(const char *s, Py_ssize_t from, Py_ssize_t to, int *failed) {
    int marked = 0;
    for (Py_ssize_t i = from; i < to; i++)
        if (is_dig(s[i]) || s[i] == '-') marked = 1;
    if (!marked) return 0;
    static const char *endings[] = {"Error", "Exception", "Warning"};
    for (int k = 0; k < 3; k++) {
        Py_ssize_t len = (Py_ssize_t)strlen(endings[k]);
        if (to - from >= len && memcmp(s + to - len, endings[k], len) == 0) return 0;
    }
    PyObject *word = PyUnicode_FromStringAndSize(s + from, to - from);
    if (!word) { *failed = 1; return 0; }
    int listed = PySet_Contains(not_hosts, word);
    Py_DECREF(word);
    if (listed < 0) { *failed = 1; return 0; }
    return !listed;
}

typedef struct {
    Py_ssize_t rank, rank_end, host, host_end; /* -1: the prefix names none */
    Py_ssize_t end;
} Prefix;

/* One of read_prefixes' prefixes at s[i]: 1 read, 0 none, -1 not handled here (Ray, vLLM), -2 error. */
static int prefix_at(const char *s, Py_ssize_t i, Py_ssize_t n, Prefix *out) {
    out->rank = out->host = -1;
    if (i >= n) return 0;
    char c = s[i];
    if (c == '(') return -1;
    if (c == '[') {
        /* torchrun: ^\[(?:rank|default|trainer|worker)(?P<rank>\d+)\]:\s? */
        static const char *words[] = {"rank", "default", "trainer", "worker"};
        for (int k = 0; k < 4; k++) {
            Py_ssize_t len = (Py_ssize_t)strlen(words[k]), d = i + 1 + len;
            if (n - (i + 1) < len || memcmp(s + i + 1, words[k], len) != 0) continue;
            Py_ssize_t e = digits_from(s, d, n);
            if (e > d && n - e >= 2 && s[e] == ']' && s[e + 1] == ':') {
                out->rank = d, out->rank_end = e;
                out->end = e + 2 + (e + 2 < n && is_space(s[e + 2]));
                return 1;
            }
            break; /* the words share no prefix: no other can match */
        }
    }
    if (c == '[' || is_dig(c)) {
        /* srun: ^\[?(?P<rank>\d{1,5})\]?:  (a run of more than five digits never matches) */
        Py_ssize_t d = i + (c == '['), e = digits_from(s, d, n);
        if (e - d < 1 || e - d > 5) return 0;
        if (e < n && s[e] == ']') e++;
        if (n - e >= 2 && s[e] == ':' && s[e + 1] == ' ') {
            out->rank = d, out->rank_end = digits_from(s, d, n);
            out->end = e + 2;
            return 1;
        }
        return 0;
    }
    if (is_alpha(c)) {
        /* pdsh: ^(?P<host>[A-Za-z][\w.-]*[\w]): (?=\S), a host by _looks_like_host */
        Py_ssize_t e = i + 1;
        while (e < n && (is_word(s[e]) || s[e] == '.' || s[e] == '-')) e++;
        if (e - i < 2 || !is_word(s[e - 1]) || n - e < 3 || s[e] != ':' || s[e + 1] != ' ' || is_space(s[e + 2]))
            return 0;
        int failed = 0;
        int host = looks_like_host(s, i, e, &failed);
        if (failed) return -2;
        if (!host) return 0;
        out->host = i, out->host_end = e;
        out->end = e + 2;
        return 1;
    }
    return 0;
}

/* A Who (a NamedTuple: its items set as tuple.__new__ would) from four new references, any of them NULL. */
static PyObject *new_who(PyObject *rank, PyObject *host, PyObject *pid, PyObject *device) {
    PyObject *items[4] = {rank, host, pid, device};
    PyObject *who = NULL;
    for (int k = 0; k < 4; k++)
        if (!items[k]) goto done;
    if (!(who = who_type->tp_alloc(who_type, 4))) goto done;
    for (int k = 0; k < 4; k++) {
        PyTuple_SET_ITEM(who, k, items[k]);
        items[k] = NULL;
    }
done:
    for (int k = 0; k < 4; k++) Py_XDECREF(items[k]);
    return who;
}

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
        /* (Z|[+-]\d\d:?\d\d)?: "Z" takes nothing off (t - timedelta(0) is t); an offset is Python's */
        if (j + 2 < n && (s[j] == '+' || s[j] == '-') && is_dig(s[j + 1]) && is_dig(s[j + 2]) &&
            ((j + 5 < n && s[j + 3] == ':' && is_dig(s[j + 4]) && is_dig(s[j + 5])) ||
             (j + 4 < n && is_dig(s[j + 3]) && is_dig(s[j + 4]))))
            return NOT_HERE;
        long y = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + two(p, 2);
        PyObject *t = safe_time(y, two(p, 5), two(p, 8), two(p, 11), two(p, 14), two(p, 17), micros(s, f, fe));
        if (!t || t == Py_None) return t;
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

static PyObject *who_and_stamp(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "who_and_stamp takes 3 arguments"); return NULL; }
    PyObject *line = args[0], *base = args[1], *year_obj = args[2];
    if (!who_type || !PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line) || Py_TYPE(base) != who_type ||
        PyTuple_GET_SIZE(base) != 4 || !PyLong_CheckExact(year_obj))
        Py_RETURN_NONE;
    int overflow = 0;
    long year = PyLong_AsLongAndOverflow(year_obj, &overflow);
    if (overflow || year < 1 || year > 9999) Py_RETURN_NONE; /* datetime's own errors are Python's to raise */
    if (!NOT_HERE && !(NOT_HERE = PyUnicode_InternFromString("not here"))) return NULL;
    const char *s = (const char *)PyUnicode_DATA(line);
    Py_ssize_t len = PyUnicode_GET_LENGTH(line);
    PyObject *rank = Py_NewRef(PyTuple_GET_ITEM(base, 0)), *host = Py_NewRef(PyTuple_GET_ITEM(base, 1));
    PyObject *pid = Py_NewRef(PyTuple_GET_ITEM(base, 2)), *device = Py_NewRef(PyTuple_GET_ITEM(base, 3));
    PyObject *who = NULL, *stamp = NULL, *out = NULL;
    Py_ssize_t body = 0, r, re;
    NcclHeader h;
    /* speaker_and_body: an NCCL header first (no launcher prefix can stand before it) */
    if (nccl_at(s, 0, len < WHO_HEAD ? len : WHO_HEAD, &h) ||
        (len > 0 && (is_space(s[0]) || s[0] == ']') && nccl_at(s, 1, len < WHO_HEAD ? len : WHO_HEAD, &h))) {
        Py_SETREF(host, PyUnicode_FromStringAndSize(s + h.host, h.host_end - h.host));
        Py_SETREF(pid, int_of(s, h.pid, h.pid_end));
        Py_SETREF(device, int_of(s, h.dev, h.dev_end));
        if (rank == Py_None && rank_in_text(s, 0, len, &r, &re)) Py_SETREF(rank, int_of(s, r, re));
    } else {
        Prefix p;
        for (int k = 0; k < 4; k++) { /* read_prefixes */
            int got = prefix_at(s, body, len, &p);
            if (got == -1) { Py_INCREF(Py_None); out = Py_None; goto done; }
            if (got == -2) goto done;
            if (got == 0) break;
            if (p.rank >= 0) Py_SETREF(rank, int_of(s, p.rank, p.rank_end));
            if (p.host >= 0) Py_SETREF(host, PyUnicode_FromStringAndSize(s + p.host, p.host_end - p.host));
            if (!rank || !host) goto done;
            body = p.end;
        }
        Py_ssize_t sh, she;
        if (nccl_search(s, body, len, &h)) {
            Py_SETREF(host, PyUnicode_FromStringAndSize(s + h.host, h.host_end - h.host));
            Py_SETREF(pid, int_of(s, h.pid, h.pid_end));
            Py_SETREF(device, int_of(s, h.dev, h.dev_end));
        } else if (syslog_host(s, body, len, &sh, &she)) {
            Py_SETREF(host, PyUnicode_FromStringAndSize(s + sh, she - sh));
        }
        if (rank == Py_None && rank_in_text(s, body, len, &r, &re)) Py_SETREF(rank, int_of(s, r, re));
    }
    who = new_who(rank, host, pid, device);
    rank = host = pid = device = NULL;
    if (!who) goto done;
    stamp = stamp_of(s, body, len, year, year_obj);
    if (stamp == Py_None && body > 0) { /* read after the prefixes, else anywhere in the line's head */
        Py_DECREF(stamp);
        stamp = stamp_of(s, 0, len, year, year_obj);
    }
    if (!stamp) goto done;
    if (stamp == NOT_HERE) { out = Py_NewRef(Py_None); stamp = NULL; goto done; }
    out = PyTuple_Pack(2, who, stamp);
done:
    Py_XDECREF(rank);
    Py_XDECREF(host);
    Py_XDECREF(pid);
    Py_XDECREF(device);
    Py_XDECREF(who);
    if (stamp != NOT_HERE) Py_XDECREF(stamp);
    return out;
}
