/* Compiled twin of common/stats_counters.py: the send path's per-message counters.
 *
 * TopicPutCounters.put is called once per stored message and Histogram.since once per socket
 * read; as Python functions each cost about half a microsecond on the 2-core box, a visible
 * share of a 1 KiB send. Here each is one C call. Semantics are the pure twin's (see its
 * docstrings); buckets are bisect_left's (first bound >= value, else the +Inf bucket).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <time.h>

#define MAX_BOUNDS 16 /* the pure twin's MAX_BOUNDS */
#define KINDS 4       /* normal, fifo, delay, transaction */
enum { NORMAL, FIFO, DELAY, TRANSACTION };

static int read_bounds(PyObject *arg, double *bounds, int *nb) {
    PyObject *seq = PySequence_Fast(arg, "bounds must be a sequence of numbers");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > MAX_BOUNDS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "bounds must be 1 to %d increasing numbers", MAX_BOUNDS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (i > 0 && !(bounds[i - 1] < v)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "bounds must be 1 to %d increasing numbers", MAX_BOUNDS);
            return -1;
        }
        bounds[i] = v;
    }
    Py_DECREF(seq);
    *nb = (int)n;
    return 0;
}

static inline int bucket(const double *bounds, int nb, double v) {
    int i = 0;
    while (i < nb && bounds[i] < v) i++; /* NaN stays in bucket 0, as bisect_left puts it */
    return i;
}

static PyObject *bounds_tuple(const double *bounds, int nb) {
    PyObject *t = PyTuple_New(nb);
    if (t == NULL) return NULL;
    for (int i = 0; i < nb; i++) {
        PyObject *f = PyFloat_FromDouble(bounds[i]);
        if (f == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, f);
    }
    return t;
}

static PyObject *ll_list(const long long *v, int n) {
    PyObject *l = PyList_New(n);
    if (l == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* ---- TopicPutCounter ------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    long long nums, size, calls, first_ms;
    long long msgs[KINDS], bytes[KINDS];
    long long counts[MAX_BOUNDS + 1];
    int buckets;
} CounterObject;

static PyObject *counter_take(CounterObject *self, PyObject *unused) {
    PyObject *out = Py_BuildValue("(LLLL)", self->nums, self->size, self->calls, self->first_ms);
    if (out != NULL) self->nums = self->size = self->calls = 0;
    return out;
}

static PyObject *counter_msgs(CounterObject *self, void *c) { return ll_list(self->msgs, KINDS); }
static PyObject *counter_bytes(CounterObject *self, void *c) { return ll_list(self->bytes, KINDS); }
static PyObject *counter_counts(CounterObject *self, void *c) { return ll_list(self->counts, self->buckets); }

static PyMemberDef counter_members[] = {
    {"nums", T_LONGLONG, offsetof(CounterObject, nums), READONLY, "messages put since the last take"},
    {"size", T_LONGLONG, offsetof(CounterObject, size), READONLY, "body bytes put since the last take"},
    {"calls", T_LONGLONG, offsetof(CounterObject, calls), READONLY, "puts since the last take"},
    {"first_ms", T_LONGLONG, offsetof(CounterObject, first_ms), READONLY, "when the topic's first put was counted"},
    {NULL},
};

static PyGetSetDef counter_getset[] = {
    {"msgs", (getter)counter_msgs, NULL, "messages by type (a copy)", NULL},
    {"bytes", (getter)counter_bytes, NULL, "body bytes by type (a copy)", NULL},
    {"counts", (getter)counter_counts, NULL, "size histogram bucket counts (a copy)", NULL},
    {NULL},
};

static PyMethodDef counter_methods[] = {
    {"take", (PyCFunction)counter_take, METH_NOARGS, "take() -> (nums, size, calls, first_ms), and zero the first three"},
    {NULL},
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "common._stats_counters.TopicPutCounter",
    .tp_basicsize = sizeof(CounterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One topic's put counts (made by TopicPutCounters).",
    .tp_members = counter_members,
    .tp_getset = counter_getset,
    .tp_methods = counter_methods,
};

/* ---- TopicPutCounters ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *table; /* dict: topic -> CounterObject */
    PyObject *last_topic;
    CounterObject *last;
    PyObject *schedule, *half, *sharding, *clock;
    double bounds[MAX_BOUNDS];
    int nb;
} CountersObject;

static PyObject *str_topic, *str_properties; /* interned attribute names */

static int counters_init(CountersObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"bounds", "schedule_topic", "half_topic", "sharding_key", "clock_ms", NULL};
    PyObject *bounds, *schedule, *half, *sharding, *clock;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OUUUO", names, &bounds, &schedule, &half, &sharding, &clock))
        return -1;
    if (read_bounds(bounds, self->bounds, &self->nb) < 0) return -1;
    if (!PyCallable_Check(clock)) {
        PyErr_SetString(PyExc_TypeError, "clock_ms must be callable");
        return -1;
    }
    Py_XSETREF(self->table, PyDict_New());
    if (self->table == NULL) return -1;
    Py_INCREF(schedule);
    Py_XSETREF(self->schedule, schedule);
    Py_INCREF(half);
    Py_XSETREF(self->half, half);
    Py_INCREF(sharding);
    Py_XSETREF(self->sharding, sharding);
    Py_INCREF(clock);
    Py_XSETREF(self->clock, clock);
    Py_CLEAR(self->last_topic);
    Py_CLEAR(self->last);
    return 0;
}

static int counters_traverse(CountersObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->table);
    Py_VISIT(self->last_topic);
    Py_VISIT(self->last);
    Py_VISIT(self->clock);
    return 0;
}

static int counters_clear(CountersObject *self) {
    Py_CLEAR(self->table);
    Py_CLEAR(self->last_topic);
    Py_CLEAR(self->last);
    Py_CLEAR(self->schedule);
    Py_CLEAR(self->half);
    Py_CLEAR(self->sharding);
    Py_CLEAR(self->clock);
    return 0;
}

static void counters_dealloc(CountersObject *self) {
    PyObject_GC_UnTrack(self);
    counters_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* topic's counter (borrowed from the table), made when missing; NULL on error */
static CounterObject *counters_get(CountersObject *self, PyObject *topic) {
    PyObject *c = PyDict_GetItemWithError(self->table, topic);
    if (c != NULL) return (CounterObject *)c;
    if (PyErr_Occurred()) return NULL;
    PyObject *now = PyObject_CallNoArgs(self->clock);
    if (now == NULL) return NULL;
    long long first = PyLong_AsLongLong(now);
    Py_DECREF(now);
    if (first == -1 && PyErr_Occurred()) return NULL;
    CounterObject *n = PyObject_New(CounterObject, &CounterType);
    if (n == NULL) return NULL;
    memset((char *)n + offsetof(CounterObject, nums), 0, sizeof(CounterObject) - offsetof(CounterObject, nums));
    n->first_ms = first;
    n->buckets = self->nb + 1;
    int rc = PyDict_SetItem(self->table, topic, (PyObject *)n);
    Py_DECREF(n); /* the table holds it */
    return rc < 0 ? NULL : n;
}

static PyObject *counters_put(CountersObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "put(topic, nums, size, msg=None)");
        return NULL;
    }
    PyObject *topic = args[0];
    if (!PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "put: topic must be a str");
        return NULL;
    }
    long long nums = PyLong_AsLongLong(args[1]);
    if (nums == -1 && PyErr_Occurred()) return NULL;
    long long size = PyLong_AsLongLong(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    PyObject *msg = nargs == 4 ? args[3] : Py_None;
    int kind = NORMAL;
    if (msg != Py_None) {
        PyObject *t = PyObject_GetAttr(msg, str_topic);
        if (t == NULL) return NULL;
        if (t != topic) {
            int same = PyObject_RichCompareBool(t, topic, Py_EQ);
            if (same < 0) {
                Py_DECREF(t);
                return NULL;
            }
            if (!same) {
                int d = PyObject_RichCompareBool(t, self->schedule, Py_EQ);
                int h = d == 0 ? PyObject_RichCompareBool(t, self->half, Py_EQ) : 0;
                if (d < 0 || h < 0) {
                    Py_DECREF(t);
                    return NULL;
                }
                kind = d ? DELAY : h ? TRANSACTION : NORMAL;
                Py_DECREF(t);
                goto counted;
            }
        }
        Py_DECREF(t);
        PyObject *props = PyObject_GetAttr(msg, str_properties);
        if (props == NULL) return NULL;
        int has = PySequence_Contains(props, self->sharding);
        Py_DECREF(props);
        if (has < 0) return NULL;
        if (has) kind = FIFO;
    }
counted:;
    CounterObject *c;
    if (topic == self->last_topic) {
        c = self->last;
    } else {
        c = counters_get(self, topic);
        if (c == NULL) return NULL;
        Py_INCREF(topic);
        Py_XSETREF(self->last_topic, topic);
        Py_INCREF(c);
        Py_XSETREF(self->last, c);
    }
    c->nums += nums;
    c->size += size;
    c->calls += 1;
    c->msgs[kind] += nums;
    c->bytes[kind] += size;
    if (nums == 1)
        c->counts[bucket(self->bounds, self->nb, (double)size)] += 1;
    else if (nums > 1)
        c->counts[bucket(self->bounds, self->nb, (double)size / (double)nums)] += nums;
    Py_RETURN_NONE;
}

static PyObject *counters_counter(CountersObject *self, PyObject *topic) {
    if (!PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "counter: topic must be a str");
        return NULL;
    }
    CounterObject *c = counters_get(self, topic);
    if (c == NULL) return NULL;
    Py_INCREF(c);
    return (PyObject *)c;
}

static PyObject *counters_remove(CountersObject *self, PyObject *topic) {
    int has = PyDict_Contains(self->table, topic);
    if (has < 0 || (has && PyDict_DelItem(self->table, topic) < 0)) return NULL;
    Py_CLEAR(self->last_topic);
    Py_CLEAR(self->last);
    Py_RETURN_NONE;
}

static PyObject *counters_get_table(CountersObject *self, void *c) {
    Py_INCREF(self->table);
    return self->table;
}

static PyObject *counters_get_bounds(CountersObject *self, void *c) { return bounds_tuple(self->bounds, self->nb); }

static PyMethodDef counters_methods[] = {
    {"put", (PyCFunction)(void (*)(void))counters_put, METH_FASTCALL,
     "put(topic, nums, size, msg=None): count a stored put"},
    {"counter", (PyCFunction)counters_counter, METH_O, "counter(topic) -> the topic's counter, made when missing"},
    {"remove", (PyCFunction)counters_remove, METH_O, "remove(topic): drop the topic's counter"},
    {NULL},
};

static PyGetSetDef counters_getset[] = {
    {"table", (getter)counters_get_table, NULL, "topic -> counter (read it; change it through counter/remove)", NULL},
    {"bounds", (getter)counters_get_bounds, NULL, "the size histogram's bounds", NULL},
    {NULL},
};

static PyTypeObject CountersType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "common._stats_counters.TopicPutCounters",
    .tp_basicsize = sizeof(CountersObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TopicPutCounters(bounds, schedule_topic, half_topic, sharding_key, clock_ms)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)counters_init,
    .tp_traverse = (traverseproc)counters_traverse,
    .tp_clear = (inquiry)counters_clear,
    .tp_dealloc = (destructor)counters_dealloc,
    .tp_methods = counters_methods,
    .tp_getset = counters_getset,
};

/* ---- Histogram --------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    double bounds[MAX_BOUNDS];
    long long counts[MAX_BOUNDS + 1];
    double total;
    int nb;
} HistogramObject;

static int histogram_init(HistogramObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"bounds", NULL};
    PyObject *bounds;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", names, &bounds)) return -1;
    if (read_bounds(bounds, self->bounds, &self->nb) < 0) return -1;
    memset(self->counts, 0, sizeof(self->counts));
    self->total = 0.0;
    return 0;
}

static int parse_value_times(PyObject *const *args, Py_ssize_t nargs, const char *name, double *v, long long *times) {
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s takes 1 or 2 arguments", name);
        return -1;
    }
    *v = PyFloat_AsDouble(args[0]);
    if (*v == -1.0 && PyErr_Occurred()) return -1;
    *times = 1;
    if (nargs == 2) {
        *times = PyLong_AsLongLong(args[1]);
        if (*times == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static void histogram_add(HistogramObject *self, double ms, long long times) {
    self->counts[bucket(self->bounds, self->nb, ms)] += times;
    self->total += ms * (double)times;
}

static PyObject *histogram_observe(HistogramObject *self, PyObject *const *args, Py_ssize_t nargs) {
    double v;
    long long times;
    if (parse_value_times(args, nargs, "observe", &v, &times) < 0) return NULL;
    histogram_add(self, v, times);
    Py_RETURN_NONE;
}

static PyObject *histogram_since(HistogramObject *self, PyObject *const *args, Py_ssize_t nargs) {
    double started;
    long long times;
    if (parse_value_times(args, nargs, "since", &started, &times) < 0) return NULL;
    /* time.perf_counter() on Linux reads CLOCK_MONOTONIC, in seconds */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    histogram_add(self, (now - started) * 1000.0, times);
    Py_RETURN_NONE;
}

static PyObject *histogram_counts(HistogramObject *self, void *c) { return ll_list(self->counts, self->nb + 1); }
static PyObject *histogram_bounds(HistogramObject *self, void *c) { return bounds_tuple(self->bounds, self->nb); }

static PyMemberDef histogram_members[] = {
    {"total", T_DOUBLE, offsetof(HistogramObject, total), READONLY, "the sum of the observed values"},
    {NULL},
};

static PyGetSetDef histogram_getset[] = {
    {"counts", (getter)histogram_counts, NULL, "bucket counts, the last one +Inf (a copy)", NULL},
    {"bounds", (getter)histogram_bounds, NULL, "the buckets' upper bounds", NULL},
    {NULL},
};

static PyMethodDef histogram_methods[] = {
    {"observe", (PyCFunction)(void (*)(void))histogram_observe, METH_FASTCALL, "observe(value, times=1)"},
    {"since", (PyCFunction)(void (*)(void))histogram_since, METH_FASTCALL,
     "since(started, times=1): observe the milliseconds from a time.perf_counter() reading to now"},
    {NULL},
};

static PyTypeObject HistogramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "common._stats_counters.Histogram",
    .tp_basicsize = sizeof(HistogramObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Histogram(bounds): bucket counts and their sum",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)histogram_init,
    .tp_members = histogram_members,
    .tp_getset = histogram_getset,
    .tp_methods = histogram_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stats_counters", "Compiled twin of common/stats_counters.py.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__stats_counters(void) {
    str_topic = PyUnicode_InternFromString("topic");
    str_properties = PyUnicode_InternFromString("properties");
    if (str_topic == NULL || str_properties == NULL) return NULL;
    if (PyType_Ready(&CounterType) < 0 || PyType_Ready(&CountersType) < 0 || PyType_Ready(&HistogramType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "TopicPutCounter", (PyObject *)&CounterType) < 0 ||
        PyModule_AddObjectRef(m, "TopicPutCounters", (PyObject *)&CountersType) < 0 ||
        PyModule_AddObjectRef(m, "Histogram", (PyObject *)&HistogramType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
