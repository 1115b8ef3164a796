/* slotted(type, names): make(*values), an instance of a slotted class (a dataclass with slots=True) with each
 * named slot set to its value, as object.__new__(type) and then object.__setattr__ for each slot would make it
 * (what a frozen dataclass's generated __init__ does). The generated __init__ is a Python frame with keyword
 * arguments: 1.5 to 5 us a Finding, made for 3.7 signature lines of each rank file (correlator/held.py), where
 * this takes a tenth of that. Included by _linescan.c.
 *
 * Bound once per type: every name must be a writable object slot of ``type`` (a member descriptor), the names
 * together every slot it has (so that no slot of a made instance is left unset: reading one would raise), and
 * ``type`` must be made by object.__new__ from a class deriving from object alone. make() then takes exactly as
 * many values, in the names' order. tests/unit/test_native_slotted.py checks the instances equal the classes' own. */
#include <structmember.h>

typedef struct {
    PyTypeObject *type;
    Py_ssize_t count;
    Py_ssize_t offsets[];
} slotted_state;

static void slotted_free(PyObject *capsule) {
    slotted_state *st = PyCapsule_GetPointer(capsule, NULL);
    if (!st) return;
    Py_XDECREF(st->type);
    PyMem_Free(st);
}

static PyObject *slotted_make(PyObject *bound, PyObject *const *args, Py_ssize_t nargs) {
    slotted_state *st = PyCapsule_GetPointer(bound, NULL);
    if (!st) return NULL;
    if (nargs != st->count) {
        PyErr_Format(PyExc_TypeError, "make(): %s takes %zd values, %zd given", st->type->tp_name, st->count, nargs);
        return NULL;
    }
    PyObject *made = st->type->tp_alloc(st->type, 0); /* object.__new__(type): what object_new does after its checks */
    if (!made) return NULL;
    for (Py_ssize_t k = 0; k < nargs; k++) /* a new instance's slots are NULL: nothing to release */
        *(PyObject **)((char *)made + st->offsets[k]) = Py_NewRef(args[k]);
    return made;
}

static PyMethodDef slotted_make_def = {"make", (PyCFunction)(void (*)(void))slotted_make, METH_FASTCALL,
                                       "an instance of the bound slotted class, its slots set in the bound order"};

static PyObject *slotted(PyObject *mod, PyObject *args) {
    PyTypeObject *type;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "O!O!:slotted", &PyType_Type, &type, &PyTuple_Type, &names)) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    if (type->tp_base != &PyBaseObject_Type || type->tp_new != PyBaseObject_Type.tp_new || type->tp_dictoffset ||
        (type->tp_flags & Py_TPFLAGS_IS_ABSTRACT)) {
        PyErr_Format(PyExc_TypeError, "slotted: %s must derive from object alone, with slots and no __dict__",
                     type->tp_name);
        return NULL;
    }
    /* every slot named once: the object slots fill the instance after its header, __weakref__'s aside */
    Py_ssize_t slots = (type->tp_basicsize - (Py_ssize_t)sizeof(PyObject) - (type->tp_weaklistoffset ? 8 : 0)) /
                       (Py_ssize_t)sizeof(PyObject *);
    if (slots != count) {
        PyErr_Format(PyExc_TypeError, "slotted: %s has %zd slots, %zd names given", type->tp_name, slots, count);
        return NULL;
    }
    slotted_state *st = PyMem_Calloc(1, sizeof *st + count * sizeof(Py_ssize_t));
    if (!st) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        PyObject *descr = PyUnicode_Check(name) ? _PyType_Lookup(type, name) : NULL; /* borrowed */
        PyMemberDef *member = descr && Py_IS_TYPE(descr, &PyMemberDescr_Type) ?
                              ((PyMemberDescrObject *)descr)->d_member : NULL;
        if (!member || member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "slotted: %R is not a writable slot of %s", name, type->tp_name);
            PyMem_Free(st);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < k; j++)
            if (st->offsets[j] == member->offset) {
                PyErr_Format(PyExc_TypeError, "slotted: %R named twice", name);
                PyMem_Free(st);
                return NULL;
            }
        st->offsets[k] = member->offset;
    }
    st->type = (PyTypeObject *)Py_NewRef(type);
    st->count = count;
    PyObject *capsule = PyCapsule_New(st, NULL, slotted_free);
    if (!capsule) {
        Py_DECREF(st->type);
        PyMem_Free(st);
        return NULL;
    }
    PyObject *bound = PyCFunction_NewEx(&slotted_make_def, capsule, NULL);
    Py_DECREF(capsule);
    return bound;
}
