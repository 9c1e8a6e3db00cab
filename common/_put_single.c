/*
 * put_single: CommitLog.put_message's usual case in one call (part of common._speedups).
 *
 * put_single(log, msg, now, kit) -> PutMessageResult, or None
 *
 * The contract is store.commit_log.CommitLog.put_message's, which stays the reference and the general
 * path: for the messages this function takes it writes the same record, stamps the same fields into msg,
 * moves the same offsets and queues the same prepared DispatchRequest, and returns an equal result. It
 * takes only the usual case and declines (None, nothing read changed, nothing written) everything else:
 * a cache miss (topic bytes, host address, queue key, tag hash, msgId prefix), an IPv6 host, a file to roll
 * or to warm ahead, a SCHEDULE_TOPIC delay, properties given only as a map, anything illegal (the general
 * path words the refusal). The pure twin (common.speedups) declines everything.
 *
 * kit: (MessageExtBrokerInner, MappedFile, DispatchRequest, AppendMessageResult, PutMessageResult,
 *       AppendMessageStatus.PUT_OK, PutMessageStatus.PUT_OK, SCHEDULE_TOPIC)
 *
 * Where the log appends single puts by pwrite (CommitLog.singles_by_pwrite: its _append_file is the last
 * file and _append_fd a descriptor of it), the record is encoded into _append_scratch and written to the file with
 * one pwrite instead of through the mapping (why: store/commit_log.py).
 *
 * Why: a single send's append was ~3.8 us of Python around a 0.6 us record write (attribute reads
 * and writes, dict lookups, two result objects); here the slots of msg, the file and the results are
 * read and written at their offsets, and the log's state is read from its __dict__.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <errno.h>
#include <unistd.h>

/* common/_speedups.c */
PyObject *speedups_write_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *speedups_dispatch_props(PyObject *module, PyObject *s);
PyObject *speedups_new_dispatch_request(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#define MIN_RECORD 91
#define END_BLANK 8
#define MAX_PROPS 32767
#define V6_BITS 0x30
#define TX_MASK 0xC
#define TX_PREPARED 0x4
#define TX_ROLLBACK 0xC

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* The offsets of a class's slots, found once per class (the last class seen is cached). */
typedef struct {
    PyTypeObject *cls; /* strong */
    Py_ssize_t off[12];
} slot_plan;

/* exact: instances are allocated here, so the named slots must be all the class has */
static int plan_slots(slot_plan *p, PyTypeObject *cls, const char *const *names, int n, int exact)
{
    Py_ssize_t off[12];
    int k;

    if (p->cls == cls)
        return 0;
    for (k = 0; k < n; k++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)cls, names[k]);
        if (d == NULL)
            return -1;
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type) || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            Py_DECREF(d);
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", cls->tp_name, names[k]);
            return -1;
        }
        off[k] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
    }
    if (exact && (cls->tp_base != &PyBaseObject_Type || cls->tp_itemsize != 0 || cls->tp_dictoffset != 0 ||
                  cls->tp_basicsize - PyBaseObject_Type.tp_basicsize !=
                      n * (Py_ssize_t)sizeof(PyObject *) +
                          (cls->tp_weaklistoffset ? (Py_ssize_t)sizeof(PyObject *) : 0))) {
        PyErr_Format(PyExc_TypeError, "%s has slots other than the ones put_single fills", cls->tp_name);
        return -1;
    }
    memcpy(p->off, off, sizeof(Py_ssize_t) * (size_t)n);
    Py_XSETREF(p->cls, (PyTypeObject *)Py_NewRef((PyObject *)cls));
    return 0;
}

enum { M_TOPIC, M_QID, M_FLAG, M_BODY, M_PROPS, M_PROPS_S, M_SYS_FLAG, M_BORN_TS, M_BORN, M_STORE, M_RECONSUME,
       M_PREPARED, M_N };
static const char *const MSG_READ[M_N] = {
    "topic", "queue_id", "flag", "body", "properties", "properties_string", "sys_flag", "born_timestamp",
    "born_host", "store_host", "reconsume_times", "prepared_transaction_offset",
};
enum { M_STORE_TS, M_QOFF, M_PHYS, M_CRC, M_WN };
static const char *const MSG_MORE[M_WN] = {"store_timestamp", "queue_offset", "commit_log_offset", "body_crc"};

enum { F_SIZE, F_FROM, F_MM, F_WROTE, F_COMMITTED, F_TS, F_WARMED, F_N };
static const char *const MF_SLOTS[F_N] = {
    "file_size", "file_from_offset", "mm", "wrote_position", "committed_position", "store_timestamp", "warmed_to",
};

static const char *const AR_SLOTS[9] = {
    "status", "wrote_offset", "wrote_bytes", "_msg_id", "store_timestamp", "logics_offset", "msg_num",
    "page_cache_rt", "_msg_id_prefix",
};
static const char *const PR_SLOTS[3] = {"status", "append_result", "remark"};

static slot_plan msg_plan, msg_more, mf_plan, ar_plan, pr_plan;

/* the CommitLog's attributes read here, interned once */
enum { L_CONFIG, L_TOPIC_CACHE, L_ADDR_CACHE, L_FILE_SIZE, L_FILE_FOR, L_MFQ, L_WARM, L_KEY_CACHE, L_TABLE,
       L_PREPARED, L_CAPACITY, L_TAGS_CACHE, L_PREFIX_CACHE, L_MAX_SIZE, L_MAPPED_FILES, L_APPEND, L_APPEND_FILE, L_APPEND_FD,
       L_APPEND_SCRATCH, L_N };
static const char *const LOG_NAMES[L_N] = {
    "config", "_topic_cache", "_addr_cache", "file_size", "_file_for", "mapped_file_queue", "_warm", "_key_cache",
    "topic_queue_table", "prepared", "prepared_capacity", "_tags_cache", "_prefix_cache", "maxMessageSize",
    "mapped_files", "append", "_append_file", "_append_fd", "_append_scratch",
};
static PyObject *names[L_N];
static PyObject *empty_str, *int_zero, *int_one;

static int intern_names(void)
{
    int k;

    if (int_one != NULL)
        return 0;
    for (k = 0; k < L_N; k++) {
        PyObject *s = PyUnicode_InternFromString(LOG_NAMES[k]);
        if (s == NULL)
            return -1;
        names[k] = s; /* kept for the life of the process */
    }
    empty_str = PyUnicode_New(0, 0);
    int_zero = PyLong_FromLong(0);
    int_one = PyLong_FromLong(1);
    return (empty_str == NULL || int_zero == NULL || int_one == NULL) ? -1 : 0;
}

/* a value of the log's __dict__ (borrowed), or NULL without an error when it is not there */
static PyObject *log_get(PyObject *dict, int k)
{
    return PyDict_GetItemWithError(dict, names[k]);
}

/* attribute names[name] of the log's value k (new reference), or NULL: not there (no error set) */
static PyObject *attr_of(PyObject *dict, int k, int name)
{
    PyObject *o = log_get(dict, k), *v;

    if (o == NULL)
        return NULL;
    v = PyObject_GetAttr(o, names[name]);
    if (v == NULL)
        PyErr_Clear();
    return v;
}

static int as_ll(PyObject *o, long long *out)
{
    if (o == NULL || !PyLong_CheckExact(o))
        return -1;
    *out = PyLong_AsLongLong(o);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* a 4-byte address from the log's cache (borrowed), or NULL: a miss, or not IPv4 */
static PyObject *ipv4_of(PyObject *cache, PyObject *host)
{
    PyObject *a;

    if (host == NULL || !PyTuple_CheckExact(host) || PyTuple_GET_SIZE(host) != 2 ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(host, 0)))
        return NULL;
    a = PyDict_GetItemWithError(cache, PyTuple_GET_ITEM(host, 0));
    if (a == NULL || !PyBytes_CheckExact(a) || PyBytes_GET_SIZE(a) != 4)
        return NULL;
    return a;
}

/* left bytes at file position at (EINTR and short writes retried); -1 with OSError set */
static int pwrite_all(int fd, const char *p, Py_ssize_t left, long long at)
{
    while (left > 0) {
        ssize_t w = pwrite(fd, p, (size_t)left, (off_t)at);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        p += w;
        left -= w;
        at += w;
    }
    return 0;
}

static PyObject *alloc_slots(PyTypeObject *cls, const slot_plan *p, PyObject *const *vals, int n)
{
    PyObject *o = cls->tp_alloc(cls, 0);
    int k;

    if (o == NULL)
        return NULL;
    for (k = 0; k < n; k++)
        SLOT(o, p->off[k]) = Py_NewRef(vals[k]);
    return o;
}

PyObject *put_single(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *log, *msg, *now, *kit, *dict = NULL, *fields = NULL, *props_b = NULL, *res = NULL;
    PyObject *o_qoff = NULL, *o_phys = NULL, *o_total = NULL, *o_end = NULL, *o_flag = NULL, *o_next = NULL;
    PyObject *max_size, *mf = NULL, *files, *table, *queue, *key, *prefix, *tags_code = NULL, *keys;
    PyObject *topic_b, *born_a, *store_a, *v, *scratch = NULL;
    PyTypeObject *msg_cls, *mf_cls, *ar_cls, *pr_cls;
    long long body_len, lmax, file_size, wrote, mf_size, warmed, from, sys_flag, qoff = 0, total;
    Py_ssize_t props_len;
    int counts, use_queue = 0, tx, append_fd = -1;

    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "put_single expected 4 arguments, got %zd", nargs);
        return NULL;
    }
    log = args[0];
    msg = args[1];
    now = args[2];
    kit = args[3];
    if (!PyTuple_CheckExact(kit) || PyTuple_GET_SIZE(kit) != 8 || !PyLong_CheckExact(now)) {
        PyErr_SetString(PyExc_TypeError, "put_single(log, msg, now: int, kit: 8-tuple)");
        return NULL;
    }
    msg_cls = (PyTypeObject *)PyTuple_GET_ITEM(kit, 0);
    mf_cls = (PyTypeObject *)PyTuple_GET_ITEM(kit, 1);
    ar_cls = (PyTypeObject *)PyTuple_GET_ITEM(kit, 3);
    pr_cls = (PyTypeObject *)PyTuple_GET_ITEM(kit, 4);
    if (!PyType_Check(msg_cls) || !PyType_Check(mf_cls) || !PyType_Check(ar_cls) || !PyType_Check(pr_cls)) {
        PyErr_SetString(PyExc_TypeError, "put_single: the kit's first five items must be classes");
        return NULL;
    }
    if (intern_names() < 0 || plan_slots(&msg_plan, msg_cls, MSG_READ, M_N, 0) < 0 ||
        plan_slots(&msg_more, msg_cls, MSG_MORE, M_WN, 0) < 0 || plan_slots(&mf_plan, mf_cls, MF_SLOTS, F_N, 0) < 0 ||
        plan_slots(&ar_plan, ar_cls, AR_SLOTS, 9, 1) < 0 || plan_slots(&pr_plan, pr_cls, PR_SLOTS, 3, 1) < 0)
        return NULL;
    if (Py_TYPE(msg) != msg_cls)
        Py_RETURN_NONE;
    dict = PyObject_GenericGetDict(log, NULL);
    if (dict == NULL)
        return NULL;
    /* the one read that may run Python code (a config attribute), first: every borrowed value below
     * stays valid while nothing else runs */
    max_size = attr_of(dict, L_CONFIG, L_MAX_SIZE);
    if (max_size == NULL)
        goto decline;
    if (as_ll(max_size, &lmax) < 0) {
        Py_DECREF(max_size);
        goto decline;
    }
    Py_DECREF(max_size);
    {
        files = attr_of(dict, L_MFQ, L_MAPPED_FILES);
        if (files == NULL)
            goto decline;
        /* a list the queue keeps (a reference of ours until the end) */
        if (!PyList_CheckExact(files) || PyList_GET_SIZE(files) == 0) {
            Py_DECREF(files);
            goto decline;
        }
        mf = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
        Py_INCREF(mf);
        Py_DECREF(files);
    }
    if (Py_TYPE(mf) != mf_cls)
        goto decline;

    v = SLOT(msg, msg_plan.off[M_BODY]);
    if (v == NULL || !PyBytes_CheckExact(v))
        goto decline;
    body_len = PyBytes_GET_SIZE(v);
    if (body_len > lmax)
        goto decline;
    {
        PyObject *topic = SLOT(msg, msg_plan.off[M_TOPIC]), *cache = log_get(dict, L_TOPIC_CACHE);

        if (topic == NULL || !PyUnicode_CheckExact(topic) || cache == NULL || !PyDict_CheckExact(cache))
            goto decline;
        topic_b = PyDict_GetItemWithError(cache, topic);
        if (topic_b == NULL || !PyBytes_CheckExact(topic_b))
            goto decline;
    }
    v = SLOT(msg, msg_plan.off[M_PROPS_S]);
    if (v == NULL || !PyUnicode_CheckExact(v))
        goto decline;
    if (PyUnicode_GET_LENGTH(v) == 0) {
        PyObject *map = SLOT(msg, msg_plan.off[M_PROPS]);
        /* an empty string with a non-empty map: the general path serializes the map */
        if (map == NULL || !PyDict_CheckExact(map) || PyDict_GET_SIZE(map) != 0)
            goto decline;
    }
    props_b = PyUnicode_AsUTF8String(v);
    if (props_b == NULL) {
        PyErr_Clear();
        goto decline;
    }
    props_len = PyBytes_GET_SIZE(props_b);
    if (props_len > MAX_PROPS)
        goto decline;
    fields = speedups_dispatch_props(module, v);
    if (fields == NULL) {
        PyErr_Clear();
        goto decline;
    }
    if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != 4)
        goto decline; /* None: a NUL in the properties */
    {
        PyObject *cache = log_get(dict, L_ADDR_CACHE);

        if (cache == NULL || !PyDict_CheckExact(cache))
            goto decline;
        born_a = ipv4_of(cache, SLOT(msg, msg_plan.off[M_BORN]));
        store_a = ipv4_of(cache, SLOT(msg, msg_plan.off[M_STORE]));
        if (born_a == NULL || store_a == NULL)
            goto decline;
    }
    if (as_ll(SLOT(msg, msg_plan.off[M_SYS_FLAG]), &sys_flag) < 0 || sys_flag < INT32_MIN || sys_flag > INT32_MAX)
        goto decline;
    sys_flag &= ~(long long)V6_BITS;
    {
        total = MIN_RECORD + body_len + PyBytes_GET_SIZE(topic_b) + props_len;
        PyObject *file_for = log_get(dict, L_FILE_FOR), *warm = log_get(dict, L_WARM);
        int is_warm;

        if (as_ll(log_get(dict, L_FILE_SIZE), &file_size) < 0 || total + END_BLANK > file_size)
            goto decline;
        if (file_for != Py_None || warm == NULL || (warm != Py_True && warm != Py_False))
            goto decline;
        is_warm = warm == Py_True;
        if (as_ll(SLOT(mf, mf_plan.off[F_WROTE]), &wrote) < 0 || as_ll(SLOT(mf, mf_plan.off[F_SIZE]), &mf_size) < 0 ||
            as_ll(SLOT(mf, mf_plan.off[F_WARMED]), &warmed) < 0 || as_ll(SLOT(mf, mf_plan.off[F_FROM]), &from) < 0)
            goto decline;
        if (wrote + total + END_BLANK > mf_size || (wrote + total > warmed && is_warm))
            goto decline; /* roll, or warm the file ahead of the writer: the general path */
        o_total = PyLong_FromLongLong(total);
        o_end = PyLong_FromLongLong(wrote + total);
        o_phys = PyLong_FromLongLong(from + wrote);
        if (o_total == NULL || o_end == NULL || o_phys == NULL)
            goto error;
    }
    {
        /* append by pwrite: only into the file the descriptor is of, with a scratch big enough */
        PyObject *af = log_get(dict, L_APPEND_FILE), *fd = log_get(dict, L_APPEND_FD);
        long long lfd;

        scratch = log_get(dict, L_APPEND_SCRATCH);
        if (af == mf && fd != NULL && as_ll(fd, &lfd) == 0 && lfd >= 0 && lfd <= INT32_MAX && scratch != NULL &&
            PyByteArray_CheckExact(scratch) && PyByteArray_GET_SIZE(scratch) >= total)
            append_fd = (int)lfd;
    }
    tx = (int)(sys_flag & TX_MASK);
    counts = tx != TX_PREPARED && tx != TX_ROLLBACK;
    {
        PyObject *kc = log_get(dict, L_KEY_CACHE), *per_topic, *qid = SLOT(msg, msg_plan.off[M_QID]);

        if (kc == NULL || !PyDict_CheckExact(kc) || qid == NULL || !PyLong_CheckExact(qid))
            goto decline;
        per_topic = PyDict_GetItemWithError(kc, SLOT(msg, msg_plan.off[M_TOPIC]));
        if (per_topic == NULL || !PyDict_CheckExact(per_topic))
            goto decline;
        key = PyDict_GetItemWithError(per_topic, qid);
        if (key == NULL || !PyUnicode_CheckExact(key))
            goto decline;
    }
    table = log_get(dict, L_TABLE);
    if (table == NULL || !PyDict_CheckExact(table))
        goto decline;
    if (counts) {
        v = PyDict_GetItemWithError(table, key);
        if (v == NULL) {
            if (PyErr_Occurred())
                goto error;
            qoff = 0;
        } else if (as_ll(v, &qoff) < 0 || qoff == INT64_MAX) {
            goto decline;
        }
    }
    queue = log_get(dict, L_PREPARED);
    if (queue == NULL)
        goto decline;
    if (queue != Py_None) {
        long long capacity;
        Py_ssize_t len = PyObject_Size(queue);

        if (len < 0 || as_ll(log_get(dict, L_CAPACITY), &capacity) < 0) {
            PyErr_Clear();
            goto decline;
        }
        use_queue = len < capacity;
    }
    if (use_queue) {
        PyObject *tags = PyTuple_GET_ITEM(fields, 0), *delay = PyTuple_GET_ITEM(fields, 3);

        if (delay != Py_None) {
            int sched = PyUnicode_Compare(SLOT(msg, msg_plan.off[M_TOPIC]), PyTuple_GET_ITEM(kit, 7));
            if (sched == -1 && PyErr_Occurred())
                goto error;
            if (sched == 0)
                goto decline; /* a delayed message: its tag code is the delivery time */
        }
        if (tags != Py_None && PyUnicode_GET_LENGTH(tags) > 0) {
            PyObject *tc = log_get(dict, L_TAGS_CACHE);

            if (tc == NULL || !PyDict_CheckExact(tc))
                goto decline;
            tags_code = PyDict_GetItemWithError(tc, tags);
            if (tags_code == NULL)
                goto decline;
            Py_INCREF(tags_code);
        } else {
            tags_code = Py_NewRef(int_zero);
        }
    }
    {
        PyObject *pc = log_get(dict, L_PREFIX_CACHE);

        if (pc == NULL || !PyDict_CheckExact(pc))
            goto decline;
        prefix = PyDict_GetItemWithError(pc, SLOT(msg, msg_plan.off[M_STORE]));
        if (prefix == NULL || !PyUnicode_CheckExact(prefix) || !PyUnicode_IS_ASCII(prefix))
            goto decline;
    }
    o_flag = PyLong_FromLongLong(sys_flag);
    o_qoff = PyLong_FromLongLong(qoff);
    o_next = counts ? PyLong_FromLongLong(qoff + 1) : NULL;
    if (o_flag == NULL || o_qoff == NULL || (counts && o_next == NULL))
        goto error;
    {
        PyObject *born = SLOT(msg, msg_plan.off[M_BORN]), *store = SLOT(msg, msg_plan.off[M_STORE]);
        PyObject *crc = SLOT(msg, msg_more.off[M_CRC]), *flag = SLOT(msg, msg_plan.off[M_FLAG]);
        PyObject *born_ts = SLOT(msg, msg_plan.off[M_BORN_TS]), *recon = SLOT(msg, msg_plan.off[M_RECONSUME]);
        PyObject *prep = SLOT(msg, msg_plan.off[M_PREPARED]), *end;
        PyObject *wargs[19];

        if (crc == NULL || flag == NULL || born_ts == NULL || recon == NULL || prep == NULL)
            goto decline;
        wargs[0] = SLOT(mf, mf_plan.off[F_MM]);
        wargs[1] = SLOT(mf, mf_plan.off[F_WROTE]);
        wargs[2] = SLOT(msg, msg_plan.off[M_BODY]);
        wargs[3] = topic_b;
        wargs[4] = props_b;
        wargs[5] = SLOT(msg, msg_plan.off[M_QID]);
        wargs[6] = flag;
        wargs[7] = o_qoff;
        wargs[8] = o_phys;
        wargs[9] = o_flag;
        wargs[10] = born_ts;
        wargs[11] = born_a;
        wargs[12] = PyTuple_GET_ITEM(born, 1);
        wargs[13] = now;
        wargs[14] = store_a;
        wargs[15] = PyTuple_GET_ITEM(store, 1);
        wargs[16] = recon;
        wargs[17] = prep;
        wargs[18] = crc;
        if (wargs[0] == NULL)
            goto decline;
        if (append_fd >= 0) {
            wargs[0] = scratch;
            wargs[1] = int_zero;
        }
        /* write_record checks everything before it writes a byte: an error here leaves the file as it was */
        end = speedups_write_record(module, wargs, 19);
        if (end == NULL)
            goto error;
        Py_DECREF(end);
        if (append_fd >= 0 && pwrite_all(append_fd, PyByteArray_AS_STRING(scratch), (Py_ssize_t)total, wrote) < 0)
            goto error; /* nothing counted yet: the bytes past wrote_position are overwritten by the next put */
    }
    /* written: from here on every step is the general path's bookkeeping, in its order */
    Py_SETREF(SLOT(mf, mf_plan.off[F_WROTE]), Py_NewRef(o_end));
    Py_XSETREF(SLOT(mf, mf_plan.off[F_COMMITTED]), Py_NewRef(o_end));
    Py_XSETREF(SLOT(mf, mf_plan.off[F_TS]), Py_NewRef(now));
    if (counts && PyDict_SetItem(table, key, o_next) < 0)
        goto error;
    Py_XSETREF(SLOT(msg, msg_more.off[M_STORE_TS]), Py_NewRef(now));
    Py_XSETREF(SLOT(msg, msg_more.off[M_QOFF]), Py_NewRef(o_qoff));
    Py_XSETREF(SLOT(msg, msg_more.off[M_PHYS]), Py_NewRef(o_phys));
    Py_XSETREF(SLOT(msg, msg_plan.off[M_SYS_FLAG]), Py_NewRef(o_flag));
    if (use_queue) {
        PyObject *rargs[13], *req, *r;

        keys = PyTuple_GET_ITEM(fields, 1);
        rargs[0] = PyTuple_GET_ITEM(kit, 2);
        rargs[1] = SLOT(msg, msg_plan.off[M_TOPIC]);
        rargs[2] = SLOT(msg, msg_plan.off[M_QID]);
        rargs[3] = o_phys;
        rargs[4] = o_total;
        rargs[5] = tags_code;
        rargs[6] = now;
        rargs[7] = o_qoff;
        rargs[8] = keys == Py_None ? empty_str : keys;
        rargs[9] = PyTuple_GET_ITEM(fields, 2);
        rargs[10] = o_flag;
        rargs[11] = SLOT(msg, msg_plan.off[M_PREPARED]);
        rargs[12] = SLOT(msg, msg_plan.off[M_PROPS_S]);
        req = speedups_new_dispatch_request(module, rargs, 13);
        if (req == NULL)
            goto error;
        r = PyObject_CallMethodOneArg(queue, names[L_APPEND], req);
        Py_DECREF(req);
        if (r == NULL)
            goto error;
        Py_DECREF(r);
    }
    {
        /* the offset msgId now (AppendMessageResult.msg_id would build it from the prefix on first
         * access, in Python): prefix + the CommitLog offset as 16 upper-case hex digits */
        static const char HEX[] = "0123456789ABCDEF";
        Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
        PyObject *msg_id = PyUnicode_New(plen + 16, 127), *ar = NULL;
        uint64_t off = (uint64_t)(from + wrote);
        int d;

        if (msg_id == NULL)
            goto error;
        memcpy(PyUnicode_1BYTE_DATA(msg_id), PyUnicode_1BYTE_DATA(prefix), (size_t)plen);
        for (d = 15; d >= 0; d--, off >>= 4)
            PyUnicode_1BYTE_DATA(msg_id)[plen + d] = (Py_UCS1)HEX[off & 0xF];
        {
            PyObject *av[9] = {PyTuple_GET_ITEM(kit, 5), o_phys, o_total, msg_id, now, o_qoff, int_one, int_zero,
                               prefix};
            ar = alloc_slots(ar_cls, &ar_plan, av, 9);
        }
        Py_DECREF(msg_id);
        if (ar != NULL) {
            PyObject *pv[3] = {PyTuple_GET_ITEM(kit, 6), ar, empty_str};
            res = alloc_slots(pr_cls, &pr_plan, pv, 3);
            Py_DECREF(ar);
        }
    }
    goto out;
decline:
    /* nothing written; an error here is a real one (a failed dict lookup, no memory) */
    res = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    goto out;
error:
    res = NULL;
out:
    Py_XDECREF(mf);
    Py_XDECREF(tags_code);
    Py_XDECREF(o_qoff);
    Py_XDECREF(o_phys);
    Py_XDECREF(o_total);
    Py_XDECREF(o_end);
    Py_XDECREF(o_flag);
    Py_XDECREF(o_next);
    Py_XDECREF(fields);
    Py_XDECREF(props_b);
    Py_XDECREF(dict);
    return res;
}
