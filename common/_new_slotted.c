/*
 * new_slotted(cls, values): an instance of a plain slotted class with its slots set, in __slots__ order,
 * from the tuple values (part of common._speedups). The pure twin (common.speedups) does it with
 * cls.__new__ and setattr; for a dataclass(slots=True) given every field it equals cls(*values).
 *
 * cls must derive from object alone, have no __dict__, and have exactly len(values) slots (a weakref
 * slot aside): TypeError otherwise. Why: one object per send is built this way (its header and the
 * message to store), and a Python __init__ of 12-17 assignments costs ~0.5 us where the slots set
 * here cost a tenth of that.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_SLOTS 32
#define PLANS 4

typedef struct {
    PyTypeObject *cls; /* strong */
    Py_ssize_t n;
    Py_ssize_t off[MAX_SLOTS];
} slotted_plan;

static slotted_plan plans[PLANS];
static int next_plan;

static const slotted_plan *plan_of(PyTypeObject *cls)
{
    slotted_plan p, *slot;
    PyObject *names = NULL, *seq = NULL;
    Py_ssize_t i;
    int k;

    for (k = 0; k < PLANS; k++)
        if (plans[k].cls == cls)
            return &plans[k];
    if (cls->tp_base != &PyBaseObject_Type || cls->tp_dictoffset != 0 || cls->tp_itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "new_slotted: %s is not a plain slotted class", cls->tp_name);
        return NULL;
    }
    names = PyDict_GetItemString(cls->tp_dict, "__slots__"); /* borrowed */
    if (names == NULL) {
        PyErr_Format(PyExc_TypeError, "new_slotted: %s has no __slots__", cls->tp_name);
        return NULL;
    }
    seq = PyUnicode_Check(names) ? PyTuple_Pack(1, names) : PySequence_Tuple(names);
    if (seq == NULL)
        return NULL;
    p.n = 0;
    for (i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *name = PyTuple_GET_ITEM(seq, i), *d;

        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__weakref__") == 0)
            continue;
        if (p.n == MAX_SLOTS) {
            PyErr_Format(PyExc_TypeError, "new_slotted: %s has too many slots", cls->tp_name);
            goto fail;
        }
        d = PyDict_GetItemWithError(cls->tp_dict, name); /* borrowed */
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "new_slotted: %s.%S is not a slot", cls->tp_name, name);
            goto fail;
        }
        p.off[p.n++] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    /* every slot of the instance is one of those: none is left unset */
    if (cls->tp_basicsize - PyBaseObject_Type.tp_basicsize !=
        p.n * (Py_ssize_t)sizeof(PyObject *) + (cls->tp_weaklistoffset ? (Py_ssize_t)sizeof(PyObject *) : 0)) {
        PyErr_Format(PyExc_TypeError, "new_slotted: %s has slots its __slots__ does not name", cls->tp_name);
        goto fail;
    }
    Py_DECREF(seq);
    slot = &plans[next_plan];
    next_plan = (next_plan + 1) % PLANS;
    p.cls = (PyTypeObject *)Py_NewRef((PyObject *)cls);
    Py_XDECREF((PyObject *)slot->cls);
    *slot = p;
    return slot;
fail:
    Py_DECREF(seq);
    return NULL;
}

PyObject *new_slotted(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const slotted_plan *p;
    PyObject *obj, *values;
    PyTypeObject *cls;
    Py_ssize_t i;

    if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "new_slotted(cls, values: tuple)");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    values = args[1];
    p = plan_of(cls);
    if (p == NULL)
        return NULL;
    if (PyTuple_GET_SIZE(values) != p->n) {
        PyErr_Format(PyExc_TypeError, "new_slotted: %s has %zd slots, %zd values given", cls->tp_name, p->n,
                     PyTuple_GET_SIZE(values));
        return NULL;
    }
    obj = cls->tp_alloc(cls, 0);
    if (obj == NULL)
        return NULL;
    for (i = 0; i < p->n; i++)
        *(PyObject **)((char *)obj + p->off[i]) = Py_NewRef(PyTuple_GET_ITEM(values, i));
    return obj;
}
