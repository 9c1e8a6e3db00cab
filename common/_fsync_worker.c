/* Compiled twin of common/fsync_worker.py: the SYNC_FLUSH group-commit thread, without the GIL.
 *
 * The pure-Python twin's thread needs the GIL after every fdatasync, and the event loop
 * holds it while it runs writers: the next round then waits for the loop to pause. This
 * thread never touches Python objects, so rounds run back to back at the disk's pace while
 * the loop appends. The loop asks with ask(fd, end) (a mutex and a condition signal) and
 * learns of progress through an eventfd it watches; `done` is the highest end offset made
 * durable. Semantics are those of the pure twin (see its docstrings).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEGMENTS 16 /* files waiting for a flush at once; the pure twin has the same cap (MAX_SEGMENTS) */

typedef struct {
    int fd;        /* our dup of the caller's descriptor */
    int asked_fd;  /* the caller's descriptor number (to recognise the same file) */
    long long end; /* global offset everything in this file up to which must be durable */
    long long base;   /* global offset of the file's first byte, -1 when not given */
    long long cached; /* file offset up to which pages were asked into the page cache */
} segment;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started;
    int stopping;
    int held;        /* tests: a hanging disk (the next round waits until released) */
    int efd;
    segment segs[MAX_SEGMENTS];
    int nsegs;
    long long want;  /* highest end asked */
    long long done;  /* highest end made durable */
    long long rounds;
    int err;         /* errno of the last failed fdatasync, 0 after a success */
    long long ahead; /* bytes past the durable end to bring into the page cache (0: none) */
} Worker;

/* At most this much is asked into the page cache after one round (the kernel caps a WILLNEED
 * request at its readahead window anyway); rounds are frequent, so it keeps ahead of the writer. */
#define POPULATE_STEP (256 * 1024)

static void notify(Worker *w)
{
    uint64_t one = 1;
    ssize_t r;

    do {
        r = write(w->efd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
}

static void *worker_main(void *arg)
{
    Worker *w = (Worker *)arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stopping && (w->done >= w->want || w->held || w->nsegs == 0))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stopping)
            break;
        int fd = w->segs[0].fd;
        long long end = w->segs[0].end;
        long long pop_from = 0, pop_len = 0;
        pthread_mutex_unlock(&w->mu);
        int r = fdatasync(fd);
        int e = r < 0 ? errno : 0;
        pthread_mutex_lock(&w->mu);
        w->rounds++;
        if (e == 0) {
            segment *sg = &w->segs[0];
            w->err = 0;
            if (end > w->done)
                w->done = end;
            if (w->ahead > 0 && sg->base >= 0) {
                long long from = end - sg->base > sg->cached ? end - sg->base : sg->cached;
                long long to = end - sg->base + w->ahead;
                if (from < to) {
                    pop_from = from;
                    pop_len = to - from < POPULATE_STEP ? to - from : POPULATE_STEP;
                    sg->cached = from + pop_len;
                }
            }
            if (w->nsegs > 1 && w->segs[0].end == end) {
                pop_len = 0; /* the writer has moved on to the next file */
                /* this file is complete and durable: go on with the next one */
                close(w->segs[0].fd);
                memmove(&w->segs[0], &w->segs[1], (size_t)(w->nsegs - 1) * sizeof(segment));
                w->nsegs--;
            }
        } else {
            w->err = e;
        }
        notify(w);
        if (pop_len > 0) {
            /* Bring the pages the writer is about to fill into the page cache, here rather than in
             * its page faults: a hole reads as zeros, so this allocates and zeroes them (on a VM,
             * also the host's first touch) without writing anything. No race with the writer:
             * the file's content does not change and pages already cached are left alone. */
            pthread_mutex_unlock(&w->mu);
            posix_fadvise(fd, (off_t)pop_from, (off_t)pop_len, POSIX_FADV_WILLNEED);
            pthread_mutex_lock(&w->mu);
        }
        if (e != 0) {
            /* a broken disk: retry shortly, no busy loop */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (!w->stopping)
                pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int Worker_init(Worker *w, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ahead", NULL};
    long long ahead = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|L", kwlist, &ahead))
        return -1;
    w->ahead = ahead > 0 ? ahead : 0;
    if (w->started || w->efd > 0) {
        PyErr_SetString(PyExc_RuntimeError, "FsyncWorker already initialised");
        return -1;
    }
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->efd < 0) {
        w->efd = -1;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int r = pthread_create(&w->thread, NULL, worker_main, w);
    if (r != 0) {
        /* no thread: nothing will ever signal the eventfd, so give it back now */
        close(w->efd);
        w->efd = -1;
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        errno = r;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    w->started = 1;
    return 0;
}

static PyObject *Worker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Worker *w = (Worker *)type->tp_alloc(type, 0);
    if (w != NULL)
        w->efd = -1;
    return (PyObject *)w;
}

static void worker_stop(Worker *w)
{
    if (!w->started)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(w->thread, NULL);
    Py_END_ALLOW_THREADS
    w->started = 0;
    for (int i = 0; i < w->nsegs; i++)
        close(w->segs[i].fd);
    w->nsegs = 0;
    if (w->efd >= 0) {
        close(w->efd);
        w->efd = -1;
    }
}

static void Worker_dealloc(Worker *w)
{
    worker_stop(w);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyObject *Worker_ask(Worker *w, PyObject *const *args, Py_ssize_t nargs)
{
    long long base = -1;

    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "ask(fd, end, base=-1) takes 2 or 3 arguments");
        return NULL;
    }
    if (nargs == 3) {
        base = PyLong_AsLongLong(args[2]);
        if (base == -1 && PyErr_Occurred())
            return NULL;
    }
    long fdl = PyLong_AsLong(args[0]);
    if (fdl == -1 && PyErr_Occurred())
        return NULL;
    if (fdl < 0 || fdl > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "ask: bad file descriptor");
        return NULL;
    }
    int fd = (int)fdl;
    long long end = PyLong_AsLongLong(args[1]);
    if (end == -1 && PyErr_Occurred())
        return NULL;
    if (!w->started) {
        PyErr_SetString(PyExc_RuntimeError, "FsyncWorker is closed");
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    if (w->nsegs > 0 && w->segs[w->nsegs - 1].asked_fd == fd) {
        if (end > w->segs[w->nsegs - 1].end)
            w->segs[w->nsegs - 1].end = end;
    } else {
        if (w->nsegs == MAX_SEGMENTS) {
            pthread_mutex_unlock(&w->mu);
            PyErr_SetString(PyExc_RuntimeError, "FsyncWorker: too many files waiting for a flush");
            return NULL;
        }
        int d = dup(fd);
        if (d < 0) {
            pthread_mutex_unlock(&w->mu);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        w->segs[w->nsegs].fd = d;
        w->segs[w->nsegs].asked_fd = fd;
        w->segs[w->nsegs].end = end;
        w->segs[w->nsegs].base = base;
        w->segs[w->nsegs].cached = 0;
        w->nsegs++;
    }
    if (end > w->want)
        w->want = end;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    Py_RETURN_NONE;
}

static PyObject *Worker_hold(Worker *w, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    pthread_mutex_lock(&w->mu);
    w->held = on;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    Py_RETURN_NONE;
}

static PyObject *Worker_fileno(Worker *w, PyObject *unused)
{
    return PyLong_FromLong(w->efd);
}

static PyObject *Worker_close(Worker *w, PyObject *unused)
{
    worker_stop(w);
    Py_RETURN_NONE;
}

static PyObject *locked_ll(Worker *w, long long *field)
{
    pthread_mutex_lock(&w->mu);
    long long v = *field;
    pthread_mutex_unlock(&w->mu);
    return PyLong_FromLongLong(v);
}

static PyObject *Worker_get_done(Worker *w, void *c) { return locked_ll(w, &w->done); }
static PyObject *Worker_get_rounds(Worker *w, void *c) { return locked_ll(w, &w->rounds); }

static PyObject *Worker_get_error(Worker *w, void *c)
{
    pthread_mutex_lock(&w->mu);
    int e = w->err;
    pthread_mutex_unlock(&w->mu);
    return PyLong_FromLong(e);
}

static PyMethodDef Worker_methods[] = {
    {"ask", (PyCFunction)(void (*)(void))Worker_ask, METH_FASTCALL,
     "ask(fd, end, base=-1): make file fd durable up to global offset end (a new fd queues after the current "
     "file); base, the global offset of the file's first byte, lets the worker cache pages ahead."},
    {"hold", (PyCFunction)Worker_hold, METH_O, "hold(on): tests only: the next round waits while on."},
    {"fileno", (PyCFunction)Worker_fileno, METH_NOARGS, "The eventfd that turns readable after each round."},
    {"close", (PyCFunction)Worker_close, METH_NOARGS, "Stop the thread and close the descriptors."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Worker_getset[] = {
    {"done", (getter)Worker_get_done, NULL, "Highest end offset made durable.", NULL},
    {"rounds", (getter)Worker_get_rounds, NULL, "fdatasync calls so far.", NULL},
    {"error", (getter)Worker_get_error, NULL, "errno of the last failed fdatasync, 0 after a success.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject WorkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "common._fsync_worker.FsyncWorker",
    .tp_basicsize = sizeof(Worker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The SYNC_FLUSH group-commit thread (compiled twin of common.fsync_worker.FsyncWorker).",
    .tp_new = Worker_new,
    .tp_init = (initproc)Worker_init,
    .tp_dealloc = (destructor)Worker_dealloc,
    .tp_methods = Worker_methods,
    .tp_getset = Worker_getset,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "common._fsync_worker", "Compiled twin of common.fsync_worker.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fsync_worker(void)
{
    if (PyType_Ready(&WorkerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&WorkerType);
    if (PyModule_AddObject(m, "FsyncWorker", (PyObject *)&WorkerType) < 0) {
        Py_DECREF(&WorkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
