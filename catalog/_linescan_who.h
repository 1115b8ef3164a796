/* who_and_stamp(line, base, year): correlator.reading's _read_who_and_stamp (without an owner line) in C, for the
 * shapes most distinct lines have: ASCII, an NCCL header or the launcher prefixes torchrun, srun and pdsh print,
 * and an ISO or glog time stamp or none. It reads what correlator.speakers and correlator.timestamps read, by
 * their regexes' own steps (each written out below next to the regex it follows), and returns (who, stamp).
 * For any other shape (non-ASCII text, a Ray, vLLM or SkyPilot prefix, a syslog head, a dmesg boot stamp, a zoned ISO
 * stamp, a ctime or MM-DD stamp) it returns None and the Python functions read the line: they stay the
 * reference, and tests/unit/test_native_who.py checks the two agree on generated and real lines.
 * configure_who(who_type=, stamp_type=, utc=, not_hosts=, glog_memo=, memo_max=) hands it the Python types and
 * the glog memo first, by name. */
#include <datetime.h>

static PyTypeObject *who_type = NULL, *stamp_type = NULL;
static PyObject *utc_zone = NULL, *not_hosts = NULL, *glog_memo = NULL, *wall_name = NULL;
static Py_ssize_t memo_max = 4096;

#define WHO_HEAD 200   /* speakers.py: the NCCL header is looked for in a line's first 200 characters */
#define STAMP_HEAD 160 /* timestamps.HEAD */

static PyObject *configure_who(PyObject *mod, PyObject *args, PyObject *kwargs) {
    /* keyword-only, every one required: a caller names what it hands over, and a renamed one fails loudly */
    static char *names[] = {"who_type", "stamp_type", "utc", "not_hosts", "glog_memo", "memo_max", NULL};
    PyObject *who = NULL, *stamp = NULL, *utc = NULL, *hosts = NULL, *memo = NULL;
    Py_ssize_t most = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O!O!OO!O!n", names, &PyType_Type, &who, &PyType_Type, &stamp,
                                     &utc, &PyFrozenSet_Type, &hosts, &PyDict_Type, &memo, &most))
        return NULL;
    if (!who || !stamp || !utc || !hosts || !memo || most < 0) {
        PyErr_SetString(PyExc_TypeError, "configure_who needs who_type, stamp_type, utc, not_hosts, glog_memo and "
                                         "memo_max (>= 0)");
        return NULL;
    }
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

#include "_linescan_stamp.h"

typedef struct {
    Py_ssize_t host, host_end, pid, pid_end, dev, dev_end, end;
} NcclHeader;

/* (?P<host>[A-Za-z0-9][\w.-]*|\.\.\.(?=[\w.-]*[A-Za-z0-9])[\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]  with the
 * host at h, before n (the second form: a name whose head a paste elided, "...-48"). No step backtracks: each run
 * is followed by a character its class excludes. */
static int nccl_at(const char *s, Py_ssize_t h, Py_ssize_t n, NcclHeader *out) {
    Py_ssize_t i = h;
    int alnum = 1;
    if (n - i >= 3 && s[i] == '.' && s[i + 1] == '.' && s[i + 2] == '.') {
        alnum = 0, i += 3;
        for (; i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '-'); i++) alnum |= is_dig(s[i]) || is_alpha(s[i]);
    } else {
        if (i >= n || !(is_dig(s[i]) || is_alpha(s[i]))) return 0;
        for (i++; i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '-'); i++) {}
    }
    if (!alnum) return 0;
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
    /* an Ascend CANN error code (speakers._CANN_ERROR_CODE): [EWI][0-9A-Z]\d{4} */
    if (to - from == 6 && (s[from] == 'E' || s[from] == 'W' || s[from] == 'I')
        && (is_dig(s[from + 1]) || (s[from + 1] >= 'A' && s[from + 1] <= 'Z'))
        && is_dig(s[from + 2]) && is_dig(s[from + 3]) && is_dig(s[from + 4]) && is_dig(s[from + 5]))
        return 0;
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
    Py_ssize_t rank, rank_end, host, host_end, local, local_end; /* -1: the prefix names none */
    Py_ssize_t end;
} Prefix;

/* pdsh's host as an IPv4 address: ^\d{1,3}(?:\.\d{1,3}){3}: (?=\S) at s[i]; its end, or -1. */
static Py_ssize_t ipv4_host_at(const char *s, Py_ssize_t i, Py_ssize_t n) {
    Py_ssize_t e = i;
    for (int part = 0; part < 4; part++) {
        if (part > 0) {
            if (e >= n || s[e] != '.') return -1;
            e++;
        }
        Py_ssize_t d = e;
        e = digits_from(s, e, n);
        if (e - d < 1 || e - d > 3) return -1;
    }
    if (n - e < 3 || s[e] != ':' || s[e + 1] != ' ' || is_space(s[e + 2])) return -1;
    return e;
}

/* One of read_prefixes' prefixes at s[i]: 1 read, 0 none, -1 not handled here (Ray, vLLM), -2 error. */
static int prefix_at(const char *s, Py_ssize_t i, Py_ssize_t n, Prefix *out) {
    out->rank = out->host = out->local = -1;
    if (i >= n) return 0;
    char c = s[i];
    if (c == '(' || c == '\x1b') return -1; /* Ray's, vLLM's and SkyPilot's (in its colour) prefixes */
    if (c == '[') {
        /* kubectl logs --prefix's [pod/<pod>/<container>] and [node/<node>], mpirun --tag-output
           ^\[\d+,(?P<rank>\d+)\]<stdxxx>: and horovodrun's ^\[(?P<rank>\d+)\]<stdxxx>: are read by speakers.py */
        if (n - i >= 6 && (memcmp(s + i + 1, "pod/", 4) == 0 || memcmp(s + i + 1, "node/", 5) == 0)) return -1;
        Py_ssize_t comma = digits_from(s, i + 1, n);
        if (comma > i + 1 && comma < n && s[comma] == ',') return -1;
        if (comma > i + 1 && n - comma >= 2 && s[comma] == ']' && s[comma + 1] == '<') return -1;
        /* torchrun: ^\[(?:rank(?P<rank>\d+)|(?:default|trainer|worker)(?P<local_rank>\d+))\]:\s? */
        static const char *words[] = {"rank", "default", "trainer", "worker"};
        for (int k = 0; k < 4; k++) {
            Py_ssize_t len = (Py_ssize_t)strlen(words[k]), d = i + 1 + len;
            if (n - (i + 1) < len || memcmp(s + i + 1, words[k], len) != 0) continue;
            Py_ssize_t e = digits_from(s, d, n);
            if (e > d && n - e >= 2 && s[e] == ']' && s[e + 1] == ':') {
                if (k == 0) out->rank = d, out->rank_end = e;
                else out->local = d, out->local_end = e; /* a role's number is the local rank */
                out->end = e + 2 + (e + 2 < n && is_space(s[e + 2]));
                return 1;
            }
            break; /* the words share no prefix: no other can match */
        }
    }
    if (is_dig(c)) { /* speakers' "stamp" prefix first, as _DIGIT_FIRST orders them */
        Py_ssize_t e = stamp_prefix_at(s, i, n);
        if (e >= 0) {
            out->end = e;
            return 1; /* names no one */
        }
    }
    if (is_alpha(c)) { /* torchx's ^[A-Za-z][\w-]*\/\d+ (?=\S) (its role/replica): read by speakers.py */
        Py_ssize_t j = i + 1;
        while (j < n && (is_word(s[j]) || s[j] == '-')) j++;
        Py_ssize_t e = j < n && s[j] == '/' ? digits_from(s, j + 1, n) : j;
        if (e > j + 1 && n - e >= 2 && s[e] == ' ' && !is_space(s[e + 1])) return -1;
    }
    if (c == '[' || is_dig(c)) {
        /* srun: ^\[?(?P<rank>\d{1,5})\]?:  (a run of more than five digits never matches) */
        Py_ssize_t d = i + (c == '['), e = digits_from(s, d, n);
        if (e - d >= 1 && e - d <= 5) {
            if (e < n && s[e] == ']') e++;
            if (n - e >= 2 && s[e] == ':' && s[e + 1] == ' ') {
                out->rank = d, out->rank_end = digits_from(s, d, n);
                out->end = e + 2;
                return 1;
            }
        }
        if (c == '[') return 0;
        /* pdsh with an IPv4 host: digits can be an address as well as a task */
        Py_ssize_t h = ipv4_host_at(s, i, n);
        if (h < 0) return 0;
        out->host = i, out->host_end = h;
        out->end = h + 2;
        return 1;
    }
    if (is_alpha(c)) {
        /* mpirun --timestamp-output: an asctime date right before the [jobid,rank] tag, read by speakers.py */
        if (n - i >= 25 && s[i + 3] == ' ' && s[i + 7] == ' ' && s[i + 10] == ' ' && s[i + 13] == ':' &&
            s[i + 16] == ':' && s[i + 19] == ' ' && s[i + 24] == '[')
            return -1;
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

#define WHO_ITEMS 5 /* Who(rank, host, pid, device, local_rank) */

/* A Who (a NamedTuple: its items set as tuple.__new__ would) from five new references, any of them NULL. */
static PyObject *new_who(PyObject *rank, PyObject *host, PyObject *pid, PyObject *device, PyObject *local) {
    PyObject *items[WHO_ITEMS] = {rank, host, pid, device, local};
    PyObject *who = NULL;
    for (int k = 0; k < WHO_ITEMS; k++)
        if (!items[k]) goto done;
    if (!(who = who_type->tp_alloc(who_type, WHO_ITEMS))) goto done;
    for (int k = 0; k < WHO_ITEMS; k++) {
        PyTuple_SET_ITEM(who, k, items[k]);
        items[k] = NULL;
    }
done:
    for (int k = 0; k < WHO_ITEMS; k++) Py_XDECREF(items[k]);
    return who;
}

static PyObject *who_and_stamp(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "who_and_stamp takes 3 arguments"); return NULL; }
    PyObject *line = args[0], *base = args[1], *year_obj = args[2];
    if (!who_type || !PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line) || Py_TYPE(base) != who_type ||
        PyTuple_GET_SIZE(base) != WHO_ITEMS || !PyLong_CheckExact(year_obj))
        Py_RETURN_NONE;
    int overflow = 0;
    long year = PyLong_AsLongAndOverflow(year_obj, &overflow);
    if (overflow || year < 1 || year > 9999) Py_RETURN_NONE; /* datetime's own errors are Python's to raise */
    if (!NOT_HERE && !(NOT_HERE = PyUnicode_InternFromString("not here"))) return NULL;
    const char *s = (const char *)PyUnicode_DATA(line);
    Py_ssize_t len = PyUnicode_GET_LENGTH(line);
    PyObject *rank = Py_NewRef(PyTuple_GET_ITEM(base, 0)), *host = Py_NewRef(PyTuple_GET_ITEM(base, 1));
    PyObject *pid = Py_NewRef(PyTuple_GET_ITEM(base, 2)), *device = Py_NewRef(PyTuple_GET_ITEM(base, 3));
    PyObject *local = Py_NewRef(PyTuple_GET_ITEM(base, 4)), *base_rank = PyTuple_GET_ITEM(base, 0);
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
            if (p.local >= 0) {
                /* speakers.prefix_step: after srun's task, a local rank's line names no global rank */
                if (local == Py_None && rank != Py_None) Py_SETREF(rank, Py_NewRef(base_rank));
                Py_SETREF(local, int_of(s, p.local, p.local_end));
            }
            if (p.rank >= 0) Py_SETREF(rank, int_of(s, p.rank, p.rank_end));
            if (p.host >= 0) Py_SETREF(host, PyUnicode_FromStringAndSize(s + p.host, p.host_end - p.host));
            if (!rank || !host || !local) goto done;
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
    who = new_who(rank, host, pid, device, local);
    rank = host = pid = device = local = NULL;
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
    Py_XDECREF(local);
    Py_XDECREF(who);
    if (stamp != NOT_HERE) Py_XDECREF(stamp);
    return out;
}
