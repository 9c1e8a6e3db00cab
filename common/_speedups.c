/*
 * common._speedups: the compiled twin of common/speedups.py.
 *
 * Same functions, same results, same error types as the pure-Python twin there
 * (which documents each contract). Plain CPython API; everything the module keeps (CRC tables,
 * interned attribute names, the CPU's CRC path, a cached class) lives in its module state, which the
 * garbage collector can traverse and clear. Every buffer access is bounds-checked against the length
 * the buffer protocol gave.
 * All store integers are big-endian.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#define INDEX_HEADER_SIZE 40
#define HASH_SLOT_SIZE 4
#define INDEX_ENTRY_SIZE 20

#define MESSAGE_MAGIC_CODE ((int32_t)0xDAA320A7)
#define MESSAGE_MAGIC_CODE_V2 ((int32_t)0xDAA320AB)
#define BLANK_MAGIC_CODE ((int32_t)0xCBD43194)
#define BORN_V6 0x10
#define STORE_V6 0x20
#define MIN_RECORD 91
#define HEAD_SIZE 48 /* TOTAL MAGIC CRC QID FLAG QOFF PHYS SYSFLAG BORNTS */

/* Module state: CRC-32 (zlib's polynomial) slice-by-8 tables and interned attribute names, built once
 * per module object. */
typedef struct {
    uint32_t crc[8][256];
    /* attribute names of a DispatchRequest read by index_build_many */
    PyObject *n_topic, *n_offset, *n_sys_flag, *n_keys, *n_uniq, *n_ts;
    /* and by cq_put_units, queue_groups */
    PyObject *n_size, *n_tags_code, *n_cq_offset, *n_queue_id;
    /* the DispatchRequest class last given to dispatch_requests/new_dispatch_request and its slot offsets */
    PyObject *dr_cls;
    Py_ssize_t dr_offs[15];
    /* 1 when the CPU has PCLMULQDQ and SSE4.1 and ROCKETMQ_PY_NO_PCLMUL is not "1" (decided at import) */
    int use_clmul;
} speedups_state;

/* -- big-endian access (callers check bounds) ------------------------------------ */

static inline uint32_t rd_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline int32_t rd_i32(const uint8_t *p) { return (int32_t)rd_u32(p); }

static inline int64_t rd_i64(const uint8_t *p)
{
    return (int64_t)(((uint64_t)rd_u32(p) << 32) | (uint64_t)rd_u32(p + 4));
}

static inline void wr_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void wr_u64(uint8_t *p, uint64_t v)
{
    wr_u32(p, (uint32_t)(v >> 32));
    wr_u32(p + 4, (uint32_t)v);
}

/* A CommitLog record's header, from TOTALSIZE to BODYLENGTH (the MAGICCODE slot at +4 is left for the
 * caller to write last: a reader that sees the magic sees a whole record). The one writer of that
 * layout for the three record encoders below. */
typedef struct {
    uint32_t size, crc, queue_id, flag, sys_flag, born_port, store_port, reconsume, body_len;
    uint64_t queue_offset, physical_offset, born_ts, store_ts, prepared;
    const Py_buffer *born_addr, *store_addr;
} record_head;

static inline void write_record_head(uint8_t *h, const record_head *r)
{
    wr_u32(h, r->size);
    wr_u32(h + 8, r->crc);
    wr_u32(h + 12, r->queue_id);
    wr_u32(h + 16, r->flag);
    wr_u64(h + 20, r->queue_offset);
    wr_u64(h + 28, r->physical_offset);
    wr_u32(h + 36, r->sys_flag);
    wr_u64(h + 40, r->born_ts);
    h += HEAD_SIZE;
    memcpy(h, r->born_addr->buf, (size_t)r->born_addr->len);
    wr_u32(h + r->born_addr->len, r->born_port);
    h += r->born_addr->len + 4;
    wr_u64(h, r->store_ts);
    memcpy(h + 8, r->store_addr->buf, (size_t)r->store_addr->len);
    wr_u32(h + 8 + r->store_addr->len, r->store_port);
    h += 8 + r->store_addr->len + 4;
    wr_u32(h, r->reconsume);
    wr_u64(h + 4, r->prepared);
    wr_u32(h + 12, r->body_len);
}

/* -- java_hash ------------------------------------------------------------------------ */

/* String.hashCode() over the UTF-16 code units of a ready str, unsigned 32-bit. */
static uint32_t hash_str(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *data = PyUnicode_DATA(s);
    uint32_t h = 0;
    Py_ssize_t i;

    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND: {
        const Py_UCS1 *u = (const Py_UCS1 *)data;
        for (i = 0; i < n; i++)
            h = 31u * h + u[i];
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *u = (const Py_UCS2 *)data;
        for (i = 0; i < n; i++)
            h = 31u * h + u[i];
        break;
    }
    default: {
        const Py_UCS4 *u = (const Py_UCS4 *)data;
        for (i = 0; i < n; i++) {
            Py_UCS4 c = u[i];
            if (c > 0xFFFF) { /* a surrogate pair, as Java stores it */
                c -= 0x10000;
                h = 31u * h + (0xD800u + (c >> 10));
                h = 31u * h + (0xDC00u + (c & 0x3FF));
            } else {
                h = 31u * h + c;
            }
        }
        break;
    }
    }
    return h;
}

/* Check that o is a str and make it ready; -1 with an exception set otherwise. */
static int check_str(PyObject *o)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(o) < 0)
        return -1;
#endif
    return 0;
}

static PyObject *java_hash(PyObject *module, PyObject *arg)
{
    (void)module;
    if (check_str(arg) < 0)
        return NULL;
    return PyLong_FromLong((long)(int32_t)hash_str(arg));
}

/* -- IndexFile ------------------------------------------------------------------------ */

/* RocketMQ's indexKeyHashMethod: abs of the signed hash, Integer.MIN_VALUE -> 0. */
static inline uint32_t index_key_hash(uint32_t h)
{
    if (h & 0x80000000u)
        return h == 0x80000000u ? 0 : 0u - h;
    return h;
}

/*
 * Validate slot_num/index_count and that entries index_count..last fit in len bytes
 * (no bounds check when last < index_count). Returns the entries' base offset, -1 on error.
 */
static Py_ssize_t check_index_args(Py_ssize_t len, Py_ssize_t slot_num, Py_ssize_t index_count,
                                   Py_ssize_t last)
{
    Py_ssize_t base;

    if (slot_num < 1) {
        PyErr_SetString(PyExc_ValueError, "slot_num must be positive");
        return -1;
    }
    if (index_count < 0) {
        PyErr_SetString(PyExc_ValueError, "index_count must not be negative");
        return -1;
    }
    if (slot_num > (PY_SSIZE_T_MAX - INDEX_HEADER_SIZE) / HASH_SLOT_SIZE)
        goto outside;
    base = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE;
    if (last >= index_count) {
        /* need base + (last + 1) * 20 <= len, without overflow */
        if (base > len || last >= (len - base) / INDEX_ENTRY_SIZE)
            goto outside;
    }
    return base;
outside:
    PyErr_SetString(PyExc_IndexError, "index entry outside the buffer");
    return -1;
}

/* Write entry `count` for key_hash (already abs'ed); returns 1 when the slot was empty. */
static int put_entry(uint8_t *b, Py_ssize_t base, Py_ssize_t slot_num, Py_ssize_t count, uint32_t key_hash,
                     int64_t phy_offset, int32_t time_diff)
{
    uint8_t *slot = b + INDEX_HEADER_SIZE + (Py_ssize_t)(key_hash % (uint64_t)slot_num) * HASH_SLOT_SIZE;
    uint8_t *e = b + base + count * INDEX_ENTRY_SIZE;
    int32_t prev = rd_i32(slot);
    int empty = prev <= 0 || (Py_ssize_t)prev > count;

    wr_u32(e, key_hash);
    wr_u64(e + 4, (uint64_t)phy_offset);
    wr_u32(e + 12, (uint32_t)time_diff);
    wr_u32(e + 16, empty ? 0u : (uint32_t)prev);
    wr_u32(slot, (uint32_t)count);
    return empty;
}

static PyObject *index_put(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t slot_num, index_count, base;
    long long key_hash, phy_offset;
    int time_diff, empty;

    (void)module;
    if (!PyArg_ParseTuple(args, "w*nnLLi:index_put", &buf, &slot_num, &index_count, &key_hash, &phy_offset,
                          &time_diff))
        return NULL;
    if (key_hash < -0x80000000LL || key_hash > 0xFFFFFFFFLL) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "key_hash is not a 32-bit value");
        return NULL;
    }
    base = check_index_args(buf.len, slot_num, index_count, index_count);
    if (base < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    empty = put_entry((uint8_t *)buf.buf, base, slot_num, index_count, index_key_hash((uint32_t)key_hash),
                      (int64_t)phy_offset, (int32_t)time_diff);
    PyBuffer_Release(&buf);
    return PyBool_FromLong(empty);
}

static PyObject *index_put_keys(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t slot_num, index_count, max_index, base, n, i, count;
    PyObject *keys, *seq;
    long long phy_offset;
    int time_diff;
    long new_slots = 0;

    (void)module;
    if (!PyArg_ParseTuple(args, "w*nnnOLi:index_put_keys", &buf, &slot_num, &index_count, &max_index, &keys,
                          &phy_offset, &time_diff))
        return NULL;
    seq = PySequence_Fast(keys, "keys must be a sequence of str");
    if (seq == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if (index_count >= 0) { /* (index_count < 0 is refused below) */
        if (max_index <= index_count)
            n = 0;
        else if (max_index - index_count < n) /* no overflow: both non-negative here */
            n = max_index - index_count;
    }
    base = check_index_args(buf.len, slot_num, index_count, index_count + n - 1);
    if (base < 0)
        goto fail;
    /* every key is checked before the first write: an error leaves the file untouched */
    for (i = 0; i < n; i++) {
        if (check_str(PySequence_Fast_GET_ITEM(seq, i)) < 0)
            goto fail;
    }
    count = index_count;
    for (i = 0; i < n; i++, count++) {
        uint32_t h = index_key_hash(hash_str(PySequence_Fast_GET_ITEM(seq, i)));
        new_slots += put_entry((uint8_t *)buf.buf, base, slot_num, count, h, (int64_t)phy_offset,
                               (int32_t)time_diff);
        if (count <= 1) /* that entry sets the header's beginTimestamp to this record's */
            time_diff = 0;
    }
    Py_DECREF(seq);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nl)", n, new_slots);
fail:
    Py_DECREF(seq);
    PyBuffer_Release(&buf);
    return NULL;
}

/*
 * String.hashCode() continued from h over the code units of s[start:end] (a ready str);
 * same walk as hash_str.
 */
static uint32_t hash_str_from(uint32_t h, PyObject *s, Py_ssize_t start, Py_ssize_t end)
{
    const void *data = PyUnicode_DATA(s);
    int kind = PyUnicode_KIND(s);
    Py_ssize_t i;

    for (i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            h = 31u * h + (0xD800u + (c >> 10));
            h = 31u * h + (0xDC00u + (c & 0x3FF));
        } else {
            h = 31u * h + c;
        }
    }
    return h;
}

/* Non-empty space-separated pieces of a ready str (Java's keys.split(" ") without empties). */
static Py_ssize_t count_keys(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), i, pieces = 0;
    const void *data = PyUnicode_DATA(s);
    int kind = PyUnicode_KIND(s), in_piece = 0;

    for (i = 0; i < n; i++) {
        if (PyUnicode_READ(kind, data, i) == ' ') {
            in_piece = 0;
        } else if (!in_piece) {
            in_piece = 1;
            pieces++;
        }
    }
    return pieces;
}

/* Indices into DR_SLOTS (DispatchRequest's slots in positional order, defined below). */
enum { DR_TOPIC = 0, DR_QUEUE_ID = 1, DR_OFFSET = 2, DR_SIZE = 3, DR_TAGS_CODE = 4, DR_TS = 5, DR_CQ_OFFSET = 6, DR_KEYS = 7,
       DR_UNIQ = 8, DR_SYS_FLAG = 9 };

/* Attribute `name` (slot `idx`) of a DispatchRequest: read straight from the slot when o is of the class
 * whose slot offsets are known (see dr_offsets), else by the attribute protocol. New reference. */
static PyObject *req_attr(const speedups_state *st, PyObject *o, PyObject *name, int idx)
{
    if (st->dr_cls != NULL && (PyObject *)Py_TYPE(o) == st->dr_cls) {
        PyObject *v = *(PyObject **)((char *)o + st->dr_offs[idx]);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(o, name);
}

/* A str attribute that may be None or missing-as-empty: new ref to a ready str, or Py_None; NULL on error. */
static PyObject *str_attr(const speedups_state *st, PyObject *o, PyObject *name, int idx)
{
    PyObject *v = req_attr(st, o, name, idx);

    if (v == NULL || v == Py_None)
        return v;
    if (check_str(v) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

static int int64_attr(const speedups_state *st, PyObject *o, PyObject *name, int idx, int64_t *out)
{
    PyObject *v = req_attr(st, o, name, idx);
    long long x;

    if (v == NULL)
        return -1;
    x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)x;
    return 0;
}

/* Seconds from begin_ts (0 before the first entry), clamped to int32, as IndexFile._time_diff. */
static int32_t index_time_diff(int64_t ts, int64_t begin_ts)
{
    int64_t delta;

    if (begin_ts <= 0)
        return 0;
    delta = ts - begin_ts;
    if (delta < 0)
        return 0;
    return delta < 2147483647000LL ? (int32_t)(delta / 1000) : 0x7FFFFFFF;
}

static PyObject *index_build_many(PyObject *module, PyObject *args)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    Py_buffer buf;
    Py_ssize_t slot_num, max_index, start, n, i, base;
    PyObject *requests, *seq = NULL, *res = NULL;
    long long begin_ts, end_ts, begin_phy, end_phy, slots_count, count;
    uint8_t *b;

    if (!PyArg_ParseTuple(args, "w*nnOn(LLLLLL):index_build_many", &buf, &slot_num, &max_index, &requests, &start,
                          &begin_ts, &end_ts, &begin_phy, &end_phy, &slots_count, &count))
        return NULL;
    seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL)
        goto done;
    n = PySequence_Fast_GET_SIZE(seq);
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the requests");
        goto done;
    }
    if (count < 1 || count > PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "index_count must be positive");
        goto done;
    }
    /* every entry number below max_index must fit: checked once for the run */
    base = check_index_args(buf.len, slot_num, (Py_ssize_t)count, max_index - 1);
    if (base < 0)
        goto done;
    b = (uint8_t *)buf.buf;
    for (i = start; i < n; i++) {
        PyObject *req = PySequence_Fast_GET_ITEM(seq, i), *uniq = NULL, *keys = NULL, *topic = NULL;
        int64_t offset, sys_flag, ts;
        Py_ssize_t nkeys, klen, k, piece;
        uint32_t th;
        int32_t td;

        if (count >= max_index)
            break; /* full: the caller rolls before anything else, as build_index does */
        if (int64_attr(st, req, st->n_offset, DR_OFFSET, &offset) < 0)
            goto done;
        if (offset < end_phy)
            continue; /* already indexed (re-dispatch after recovery) */
        if (int64_attr(st, req, st->n_sys_flag, DR_SYS_FLAG, &sys_flag) < 0)
            goto done;
        if ((sys_flag & 0xC) == 0xC)
            continue; /* ROLLBACK */
        uniq = str_attr(st, req, st->n_uniq, DR_UNIQ);
        if (uniq == NULL)
            goto done;
        keys = str_attr(st, req, st->n_keys, DR_KEYS);
        if (keys == NULL) {
            Py_DECREF(uniq);
            goto done;
        }
        if (uniq != Py_None && PyUnicode_GET_LENGTH(uniq) == 0)
            Py_SETREF(uniq, Py_NewRef(Py_None));
        nkeys = (uniq != Py_None) + (keys != Py_None ? count_keys(keys) : 0);
        if (nkeys == 0 || count + nkeys > max_index) {
            Py_DECREF(uniq);
            Py_DECREF(keys);
            if (nkeys == 0)
                continue;
            break; /* does not fit whole: the caller splits it over the roll */
        }
        topic = str_attr(st, req, st->n_topic, DR_TOPIC);
        if (topic == NULL || topic == Py_None || int64_attr(st, req, st->n_ts, DR_TS, &ts) < 0) {
            if (topic == Py_None)
                PyErr_SetString(PyExc_TypeError, "topic must be a str");
            Py_XDECREF(topic);
            Py_DECREF(uniq);
            Py_DECREF(keys);
            goto done;
        }
        th = 31u * hash_str(topic) + '#';
        td = index_time_diff(ts, (int64_t)begin_ts);
        if (count <= 1) {
            begin_phy = offset;
            begin_ts = ts;
        }
        if (uniq != Py_None) {
            uint32_t h = index_key_hash(hash_str_from(th, uniq, 0, PyUnicode_GET_LENGTH(uniq)));
            slots_count += put_entry(b, base, slot_num, (Py_ssize_t)count, h, offset, td);
            if (count <= 1)
                td = 0;
            count++;
        }
        if (keys != Py_None) {
            const void *data = PyUnicode_DATA(keys);
            int kind = PyUnicode_KIND(keys);

            klen = PyUnicode_GET_LENGTH(keys);
            piece = -1;
            for (k = 0; k <= klen; k++) {
                if (k == klen || PyUnicode_READ(kind, data, k) == ' ') {
                    if (piece >= 0) {
                        uint32_t h = index_key_hash(hash_str_from(th, keys, piece, k));
                        slots_count += put_entry(b, base, slot_num, (Py_ssize_t)count, h, offset, td);
                        if (count <= 1)
                            td = 0;
                        count++;
                        piece = -1;
                    }
                } else if (piece < 0) {
                    piece = k;
                }
            }
        }
        end_phy = offset;
        end_ts = ts;
        Py_DECREF(topic);
        Py_DECREF(uniq);
        Py_DECREF(keys);
    }
    res = Py_BuildValue("(n(LLLLLL))", i, begin_ts, end_ts, begin_phy, end_phy, slots_count, count);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&buf);
    return res;
}

/* -- ConsumeQueue ---------------------------------------------------------------------------- */

#define CQ_UNIT_SIZE 20

/*
 * cq_put_units(buf, pos, file_size, file_from_offset, allow_at_zero, max_physic_offset, requests, start)
 * -> (next, pos, max_physic_offset): ConsumeQueue.put_requests' fast path over requests[start:].
 */
static PyObject *cq_put_units(PyObject *module, PyObject *args)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    Py_buffer buf;
    Py_ssize_t pos, file_size, n, i, start;
    long long file_from, max_phy;
    int allow_zero;
    PyObject *requests, *seq = NULL, *res = NULL;
    uint8_t *b;

    if (!PyArg_ParseTuple(args, "w*nnLpLOn:cq_put_units", &buf, &pos, &file_size, &file_from, &allow_zero, &max_phy,
                          &requests, &start))
        return NULL;
    seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL)
        goto done;
    n = PySequence_Fast_GET_SIZE(seq);
    if (start < 0 || start > n || pos < 0) {
        PyErr_SetString(PyExc_IndexError, "start or pos out of range");
        goto done;
    }
    if (file_size > buf.len)
        file_size = buf.len; /* never write past the mapping */
    b = (uint8_t *)buf.buf;
    for (i = start; i < n; i++) {
        PyObject *req = PySequence_Fast_GET_ITEM(seq, i);
        int64_t offset, size, cqo, tags;

        if (int64_attr(st, req, st->n_offset, DR_OFFSET, &offset) < 0 || int64_attr(st, req, st->n_size, DR_SIZE, &size) < 0)
            goto done;
        if (offset + size <= max_phy)
            continue; /* re-dispatch of a record already in the queue */
        if (int64_attr(st, req, st->n_cq_offset, DR_CQ_OFFSET, &cqo) < 0)
            goto done;
        if (pos + CQ_UNIT_SIZE > file_size || file_from + pos != cqo * CQ_UNIT_SIZE || (pos == 0 && !allow_zero))
            break; /* not the next unit at the end of this file: the caller's general path */
        if (int64_attr(st, req, st->n_tags_code, DR_TAGS_CODE, &tags) < 0)
            goto done;
        if (size < INT32_MIN || size > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "msg_size is not a 32-bit value");
            goto done;
        }
        wr_u64(b + pos, (uint64_t)offset);
        wr_u32(b + pos + 8, (uint32_t)size);
        wr_u64(b + pos + 12, (uint64_t)tags);
        pos += CQ_UNIT_SIZE;
        max_phy = offset + size;
    }
    res = Py_BuildValue("(nnL)", i, pos, max_phy);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&buf);
    return res;
}

/*
 * queue_groups(requests) -> [(topic, queue_id, [request, ...]), ...]: the requests whose transaction type
 * is NOT or COMMIT (those that get a consume-queue unit), grouped by (topic, queue_id) in order, groups
 * in the order of their first request.
 */
static PyObject *queue_groups(PyObject *module, PyObject *requests)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    PyObject *seq, *out = NULL, *index = NULL, *cur = NULL, *cur_topic = NULL, *cur_qid = NULL;
    Py_ssize_t n, i;

    seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(0);
    index = PyDict_New(); /* (topic, queue_id) -> its group's list */
    if (out == NULL || index == NULL)
        goto fail;
    for (i = 0; i < n; i++) {
        PyObject *req = PySequence_Fast_GET_ITEM(seq, i), *topic, *qid;
        int64_t sys_flag;
        int same;

        if (int64_attr(st, req, st->n_sys_flag, DR_SYS_FLAG, &sys_flag) < 0)
            goto fail;
        if ((sys_flag & 0xC) == 0x4 || (sys_flag & 0xC) == 0xC)
            continue; /* PREPARED, ROLLBACK: no unit */
        topic = req_attr(st, req, st->n_topic, DR_TOPIC);
        if (topic == NULL)
            goto fail;
        qid = req_attr(st, req, st->n_queue_id, DR_QUEUE_ID);
        if (qid == NULL) {
            Py_DECREF(topic);
            goto fail;
        }
        /* the usual case: the same queue as the request before (a batch's records) */
        same = 0;
        if (cur != NULL) {
            same = PyObject_RichCompareBool(topic, cur_topic, Py_EQ);
            if (same == 1)
                same = PyObject_RichCompareBool(qid, cur_qid, Py_EQ);
        }
        if (same < 0) {
            Py_DECREF(topic);
            Py_DECREF(qid);
            goto fail;
        }
        if (!same) {
            PyObject *key = PyTuple_Pack(2, topic, qid), *g;

            if (key == NULL) {
                Py_DECREF(topic);
                Py_DECREF(qid);
                goto fail;
            }
            g = PyDict_GetItemWithError(index, key); /* borrowed */
            if (g == NULL) {
                PyObject *entry;

                if (PyErr_Occurred() || (g = PyList_New(0)) == NULL) {
                    Py_DECREF(key);
                    Py_DECREF(topic);
                    Py_DECREF(qid);
                    goto fail;
                }
                entry = PyTuple_Pack(3, topic, qid, g);
                if (entry == NULL || PyDict_SetItem(index, key, g) < 0 || PyList_Append(out, entry) < 0) {
                    Py_XDECREF(entry);
                    Py_DECREF(g);
                    Py_DECREF(key);
                    Py_DECREF(topic);
                    Py_DECREF(qid);
                    goto fail;
                }
                Py_DECREF(entry);
                Py_DECREF(g); /* the index and the entry hold it */
            }
            Py_DECREF(key);
            cur = g;
            Py_XSETREF(cur_topic, Py_NewRef(topic));
            Py_XSETREF(cur_qid, Py_NewRef(qid));
        }
        Py_DECREF(topic);
        Py_DECREF(qid);
        if (PyList_Append(cur, req) < 0)
            goto fail;
    }
    Py_DECREF(index);
    Py_XDECREF(cur_topic);
    Py_XDECREF(cur_qid);
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(index);
    Py_XDECREF(cur_topic);
    Py_XDECREF(cur_qid);
    Py_DECREF(seq);
    return NULL;
}

/* -- client batch bodies ------------------------------------------------------------------ */

static PyObject *split_batch(PyObject *module, PyObject *arg)
{
    Py_buffer buf;
    const uint8_t *b;
    Py_ssize_t n, pos = 0;
    PyObject *out, *item;

    (void)module;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    b = (const uint8_t *)buf.buf;
    n = buf.len;
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    while (pos < n) {
        int32_t total, flag, blen;
        Py_ssize_t p, bstart, plen;

        if (pos + 22 > n) {
            Py_SETREF(out, PyUnicode_FromFormat("truncated batch entry at %zd", pos));
            goto done;
        }
        total = rd_i32(b + pos);
        flag = rd_i32(b + pos + 12);
        blen = rd_i32(b + pos + 16);
        p = pos + 20;
        if (blen < 0 || p + (Py_ssize_t)blen + 2 > n) {
            Py_SETREF(out, PyUnicode_FromFormat("bad body length in batch entry at %zd", pos));
            goto done;
        }
        bstart = p;
        p += blen;
        plen = ((Py_ssize_t)b[p] << 8) | b[p + 1];
        p += 2;
        if (p + plen > n || (Py_ssize_t)total != p + plen - pos) {
            Py_SETREF(out, PyUnicode_FromFormat("bad size in batch entry at %zd", pos));
            goto done;
        }
        item = Py_BuildValue("(ninni)", bstart, (int)blen, p, plen, (int)flag);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(item);
        pos = p + plen;
    }
done:
    PyBuffer_Release(&buf);
    return out;
}

/* -- CommitLog records ---------------------------------------------------------------------- */

/* One property value: UTF-8 with replacement, or None when absent/empty. */
static PyObject *prop_value(const uint8_t *v, Py_ssize_t len)
{
    if (v == NULL || len == 0)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)v, len, "replace");
}

static PyObject *blank_tuple(int32_t total)
{
    return Py_BuildValue("(iiiiiLLiLLLnnsnnOOOO)", (int)total, (int)BLANK_MAGIC_CODE, 0, 0, 0, 0LL, 0LL, 0, 0LL,
                         0LL, 0LL, (Py_ssize_t)0, (Py_ssize_t)0, "", (Py_ssize_t)0, (Py_ssize_t)0, Py_None,
                         Py_None, Py_None, Py_None);
}

struct prop_name {
    const char *name; /* with its trailing \x01 */
    Py_ssize_t len;
};

static const struct prop_name PROP_NAMES[4] = {
    {"TAGS\x01", 5},
    {"KEYS\x01", 5},
    {"UNIQ_KEY\x01", 9},
    {"DELAY\x01", 6},
};

static PyObject *parse_record(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "pos", "strict", NULL};
    Py_buffer buf;
    Py_ssize_t pos, n, p, end, body_start, tlen, plen, props_start;
    int strict = 0, i;
    const uint8_t *b;
    int32_t total, magic, crc, qid, flag, sys_flag, body_len;
    int64_t qoff, phys, born_ts, store_ts, prepared;
    const uint8_t *vals[4] = {NULL, NULL, NULL, NULL};
    Py_ssize_t val_lens[4] = {0, 0, 0, 0};
    PyObject *topic = NULL, *res = NULL;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*n|p:parse_record", kwlist, &buf, &pos, &strict))
        return NULL;
    b = (const uint8_t *)buf.buf;
    n = buf.len;
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_IndexError, "record position outside the buffer");
        goto done;
    }
    if (n - pos < HEAD_SIZE + 40) { /* shorter than the smallest header: only a BLANK head fits */
        if (n - pos < 8)
            goto invalid;
        total = rd_i32(b + pos);
        if (rd_i32(b + pos + 4) != BLANK_MAGIC_CODE)
            goto invalid;
        res = blank_tuple(total);
        goto done;
    }
    total = rd_i32(b + pos);
    magic = rd_i32(b + pos + 4);
    if (magic != MESSAGE_MAGIC_CODE && magic != MESSAGE_MAGIC_CODE_V2) {
        if (magic != BLANK_MAGIC_CODE)
            goto invalid;
        res = blank_tuple(total);
        goto done;
    }
    if (total < MIN_RECORD || (Py_ssize_t)total > n - pos)
        goto invalid;
    crc = rd_i32(b + pos + 8);
    qid = rd_i32(b + pos + 12);
    flag = rd_i32(b + pos + 16);
    qoff = rd_i64(b + pos + 20);
    phys = rd_i64(b + pos + 28);
    sys_flag = rd_i32(b + pos + 36);
    born_ts = rd_i64(b + pos + 40);
    p = pos + HEAD_SIZE + ((sys_flag & BORN_V6) ? 20 : 8);
    if (p + 8 > n)
        goto invalid;
    store_ts = rd_i64(b + p);
    p += 8 + ((sys_flag & STORE_V6) ? 20 : 8);
    if (p + 16 > n)
        goto invalid;
    prepared = rd_i64(b + p + 4); /* after RECONSUMETIMES */
    body_len = rd_i32(b + p + 12);
    p += 16;
    end = pos + total;
    if (body_len < 0 || p + (Py_ssize_t)body_len > end)
        goto invalid;
    body_start = p;
    p += body_len;
    if (magic == MESSAGE_MAGIC_CODE) {
        if (p + 1 > end)
            goto invalid;
        tlen = b[p];
        p += 1;
    } else {
        if (p + 2 > end)
            goto invalid;
        tlen = (int16_t)(((uint16_t)b[p] << 8) | b[p + 1]);
        p += 2;
    }
    if (tlen <= 0 || p + tlen + 2 > end)
        goto invalid;
    props_start = p + tlen + 2;
    plen = ((Py_ssize_t)b[p + tlen] << 8) | b[p + tlen + 1];
    if (props_start + plen != end)
        goto invalid;
    if (strict && (memchr(b + p, 0, (size_t)tlen) != NULL || (plen && memchr(b + props_start, 0, (size_t)plen))))
        goto invalid;
    topic = PyUnicode_DecodeUTF8((const char *)(b + p), tlen, NULL);
    if (topic == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            goto done;
        PyErr_Clear();
        goto invalid;
    }
    /* walk NAME\x01VALUE\x02 entries; the last entry of a name wins */
    {
        const uint8_t *q = b + props_start, *stop = b + end;
        while (q < stop) {
            const uint8_t *sep = memchr(q, 0x02, (size_t)(stop - q));
            const uint8_t *e = sep != NULL ? sep : stop;
            for (i = 0; i < 4; i++) {
                Py_ssize_t nl = PROP_NAMES[i].len;
                if (e - q >= nl && memcmp(q, PROP_NAMES[i].name, (size_t)nl) == 0) {
                    vals[i] = q + nl;
                    val_lens[i] = (e - q) - nl;
                    break;
                }
            }
            q = e + 1;
        }
    }
    {
        PyObject *items[20];
        items[0] = PyLong_FromLong(total);
        items[1] = PyLong_FromLong(magic);
        items[2] = PyLong_FromLong(crc);
        items[3] = PyLong_FromLong(qid);
        items[4] = PyLong_FromLong(flag);
        items[5] = PyLong_FromLongLong(qoff);
        items[6] = PyLong_FromLongLong(phys);
        items[7] = PyLong_FromLong(sys_flag);
        items[8] = PyLong_FromLongLong(born_ts);
        items[9] = PyLong_FromLongLong(store_ts);
        items[10] = PyLong_FromLongLong(prepared);
        items[11] = PyLong_FromSsize_t(body_start);
        items[12] = PyLong_FromLong(body_len);
        items[13] = topic;
        topic = NULL;
        items[14] = PyLong_FromSsize_t(props_start);
        items[15] = PyLong_FromSsize_t(plen);
        for (i = 0; i < 4; i++)
            items[16 + i] = prop_value(vals[i], val_lens[i]);
        res = PyTuple_New(20);
        for (i = 0; i < 20; i++) {
            if (items[i] == NULL || res == NULL) {
                Py_CLEAR(res);
                Py_XDECREF(items[i]);
            } else {
                PyTuple_SET_ITEM(res, i, items[i]);
            }
        }
    }
    goto done;
invalid:
    res = Py_NewRef(Py_None);
done:
    Py_XDECREF(topic);
    PyBuffer_Release(&buf);
    return res;
}

/*
 * The TAGS, KEYS, UNIQ_KEY, DELAY values of a ready properties str into out[0..3] (new references;
 * None when absent or empty, the last entry of a name wins). Returns 0, 1 when s contains NUL
 * (out untouched), -1 on error.
 */
static int scan_props(PyObject *s, PyObject *out[4])
{
    Py_ssize_t n, q, e, i, starts[4] = {-1, -1, -1, -1}, ends[4] = {0, 0, 0, 0};
    const void *data;
    int kind;

    n = PyUnicode_GET_LENGTH(s);
    data = PyUnicode_DATA(s);
    kind = PyUnicode_KIND(s);
    if (kind == PyUnicode_1BYTE_KIND) {
        const char *c = (const char *)data;
        if (memchr(c, 0, (size_t)n) != NULL)
            return 1;
        for (q = 0; q < n; q = e + 1) {
            const char *sep = memchr(c + q, 0x02, (size_t)(n - q));
            e = sep != NULL ? sep - c : n;
            for (i = 0; i < 4; i++) {
                Py_ssize_t nl = PROP_NAMES[i].len;
                if (e - q >= nl && memcmp(c + q, PROP_NAMES[i].name, (size_t)nl) == 0) {
                    starts[i] = q + nl;
                    ends[i] = e;
                    break;
                }
            }
        }
    } else {
        for (q = 0; q < n; q++) {
            if (PyUnicode_READ(kind, data, q) == 0)
                return 1;
        }
        for (q = 0; q < n; q = e + 1) {
            for (e = q; e < n && PyUnicode_READ(kind, data, e) != 0x02; e++)
                ;
            for (i = 0; i < 4; i++) {
                Py_ssize_t nl = PROP_NAMES[i].len, k;
                if (e - q < nl)
                    continue;
                for (k = 0; k < nl && PyUnicode_READ(kind, data, q + k) == (Py_UCS4)(uint8_t)PROP_NAMES[i].name[k];
                     k++)
                    ;
                if (k == nl) {
                    starts[i] = q + nl;
                    ends[i] = e;
                    break;
                }
            }
        }
    }
    for (i = 0; i < 4; i++) {
        if (starts[i] < 0 || ends[i] == starts[i]) {
            out[i] = Py_NewRef(Py_None);
        } else {
            out[i] = PyUnicode_Substring(s, starts[i], ends[i]);
            if (out[i] == NULL) {
                while (i-- > 0)
                    Py_CLEAR(out[i]);
                return -1;
            }
        }
    }
    return 0;
}

/* parse_properties(text) -> dict: record_codec.parse_properties (MessageDecoder.string2messageProperties):
 * entries split by \x02, each split at its first \x01; kept when key and value are both non-empty; the
 * last of a key wins. None or "" gives an empty dict. */
static PyObject *parse_properties(PyObject *module, PyObject *text)
{
    PyObject *out, *k, *v;
    Py_ssize_t n, start, end, eq;
    int rc;

    (void)module;
    out = PyDict_New();
    if (out == NULL || text == Py_None)
        return out;
    if (!PyUnicode_Check(text)) {
        Py_DECREF(out);
        PyErr_Format(PyExc_TypeError, "expected str, got %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    for (start = 0; start < n; start = end + 1) {
        end = PyUnicode_FindChar(text, 2, start, n, 1);
        if (end == -2)
            goto fail;
        if (end < 0)
            end = n;
        eq = PyUnicode_FindChar(text, 1, start, end, 1);
        if (eq == -2)
            goto fail;
        if (eq <= start || eq + 1 >= end)
            continue; /* no separator, empty key or empty value */
        k = PyUnicode_Substring(text, start, eq);
        if (k == NULL)
            goto fail;
        v = PyUnicode_Substring(text, eq + 1, end);
        if (v == NULL) {
            Py_DECREF(k);
            goto fail;
        }
        rc = PyDict_SetItem(out, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (rc < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* dispatch_props(s) -> (TAGS, KEYS, UNIQ_KEY, DELAY), or None when s contains NUL. */
static PyObject *dispatch_props(PyObject *module, PyObject *s)
{
    PyObject *vals[4], *out;
    int r, i;

    (void)module;
    if (check_str(s) < 0)
        return NULL;
    r = scan_props(s, vals);
    if (r < 0)
        return NULL;
    if (r == 1)
        Py_RETURN_NONE;
    out = PyTuple_New(4);
    if (out == NULL) {
        for (i = 0; i < 4; i++)
            Py_DECREF(vals[i]);
        return NULL;
    }
    for (i = 0; i < 4; i++)
        PyTuple_SET_ITEM(out, i, vals[i]);
    return out;
}

#define MAX_PROPERTIES_BYTES 32767

/*
 * batch_properties(src, items, batch_props) -> ([(text, tags, keys, uniq, delay), ...], var_bytes)
 * or (status, message) for the first entry that cannot be stored (status 1: illegal, 2: too long).
 * text is the entry's stored properties (its own, then \x02 and the batch's when both exist).
 */
static PyObject *batch_properties(PyObject *module, PyObject *args)
{
    Py_buffer src, bp;
    PyObject *items, *seq = NULL, *out = NULL, *res = NULL;
    Py_ssize_t n, i, var_bytes = 0, cap = 0;
    char *tmp = NULL;

    (void)module;
    if (!PyArg_ParseTuple(args, "y*Oy*:batch_properties", &src, &items, &bp))
        return NULL;
    seq = PySequence_Fast(items, "items must be a sequence of tuples");
    if (seq == NULL)
        goto done;
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i), *text, *vals[4], *t;
        Py_ssize_t bstart, blen, pstart, plen, full;
        int flag, r, k;
        const char *start;

        if (!PyTuple_Check(it)) {
            PyErr_SetString(PyExc_TypeError, "items must be tuples");
            goto done;
        }
        if (!PyArg_ParseTuple(it, "nnnni", &bstart, &blen, &pstart, &plen, &flag))
            goto done;
        if (bstart < 0 || blen < 0 || bstart > src.len - blen || pstart < 0 || plen < 0 || pstart > src.len - plen) {
            PyErr_SetString(PyExc_IndexError, "item outside src");
            goto done;
        }
        if (plen) {
            if (memchr((const char *)src.buf + pstart, 0, (size_t)plen) != NULL) {
                res = Py_BuildValue("(is)", 1, "batch properties contain NUL");
                goto done;
            }
            full = plen + (bp.len ? 1 + bp.len : 0);
            if (full == plen) {
                start = (const char *)src.buf + pstart;
            } else {
                if (full > cap) {
                    char *grown = PyMem_Realloc(tmp, (size_t)full);
                    if (grown == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    tmp = grown;
                    cap = full;
                }
                memcpy(tmp, (const char *)src.buf + pstart, (size_t)plen);
                tmp[plen] = 0x02;
                memcpy(tmp + plen + 1, bp.buf, (size_t)bp.len);
                start = tmp;
            }
        } else {
            full = bp.len;
            start = (const char *)bp.buf;
        }
        text = PyUnicode_DecodeUTF8(start, full, NULL);
        if (text == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                goto done;
            PyErr_Clear();
            res = Py_BuildValue("(is)", 1, "batch properties not UTF-8");
            goto done;
        }
        if (full > MAX_PROPERTIES_BYTES) {
            Py_DECREF(text);
            res = Py_BuildValue("(is)", 2, "properties of a batch message exceed 32767 bytes");
            goto done;
        }
        r = scan_props(text, vals);
        if (r != 0) {
            Py_DECREF(text);
            if (r == 1) /* NUL in the batch's own properties */
                res = Py_BuildValue("(is)", 1, "properties contain NUL");
            goto done;
        }
        t = PyTuple_New(5);
        if (t == NULL) {
            Py_DECREF(text);
            for (k = 0; k < 4; k++)
                Py_DECREF(vals[k]);
            goto done;
        }
        PyTuple_SET_ITEM(t, 0, text);
        for (k = 0; k < 4; k++)
            PyTuple_SET_ITEM(t, k + 1, vals[k]);
        PyList_SET_ITEM(out, i, t);
        var_bytes += blen + full;
    }
    res = Py_BuildValue("(On)", out, var_bytes);
done:
    PyMem_Free(tmp);
    Py_XDECREF(out);
    Py_XDECREF(seq);
    PyBuffer_Release(&src);
    PyBuffer_Release(&bp);
    return res;
}

/* msg_ids(prefix, base, positions) -> ",".join(f"{prefix}{base + p:016X}" for p in positions) */
static PyObject *msg_ids(PyObject *module, PyObject *args)
{
    static const char HEX[] = "0123456789ABCDEF";
    PyObject *prefix, *positions, *seq, *res = NULL;
    long long base;
    Py_ssize_t n, i, plen, len;
    const char *pre;
    char *buf, *w;

    (void)module;
    if (!PyArg_ParseTuple(args, "ULO:msg_ids", &prefix, &base, &positions))
        return NULL;
    pre = PyUnicode_AsUTF8AndSize(prefix, &plen);
    if (pre == NULL)
        return NULL;
    if (!PyUnicode_IS_ASCII(prefix)) {
        PyErr_SetString(PyExc_ValueError, "prefix must be ASCII");
        return NULL;
    }
    seq = PySequence_Fast(positions, "positions must be a sequence of int");
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n == 0) {
        Py_DECREF(seq);
        return PyUnicode_New(0, 127);
    }
    if (plen > (PY_SSIZE_T_MAX / 2 - 17) || n > (PY_SSIZE_T_MAX / 2) / (plen + 17)) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    len = n * (plen + 17) - 1;
    res = PyUnicode_New(len, 127);
    if (res == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    buf = (char *)PyUnicode_DATA(res);
    w = buf;
    for (i = 0; i < n; i++) {
        long long p = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        uint64_t v;
        int k;

        if (p == -1 && PyErr_Occurred()) {
            Py_CLEAR(res);
            break;
        }
        v = (uint64_t)base + (uint64_t)p;
        if (i)
            *w++ = ',';
        memcpy(w, pre, (size_t)plen);
        w += plen;
        for (k = 15; k >= 0; k--) {
            w[k] = HEX[v & 0xF];
            v >>= 4;
        }
        w += 16;
    }
    Py_DECREF(seq);
    return res;
}

/* -- writing records ------------------------------------------------------------------------- */


static void crc_init(speedups_state *st)
{
    uint32_t i, c;
    int k;

    for (i = 0; i < 256; i++) {
        c = i;
        for (k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        st->crc[0][i] = c;
    }
    for (i = 0; i < 256; i++) {
        c = st->crc[0][i];
        for (k = 1; k < 8; k++) {
            c = st->crc[0][c & 0xFF] ^ (c >> 8);
            st->crc[k][i] = c;
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CLMUL 1
#include <immintrin.h>

/* CRC-32 (reflected 0xEDB88320) of len bytes (len >= 64, a multiple of 16) by carry-less multiply
 * folding, as in Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ": four
 * 128-bit lanes folded 64 bytes at a time, folded into one, then 16 bytes at a time, reduced to
 * 64 and 32 bits and finished with a Barrett reduction. c is the running (inverted) CRC state,
 * returned updated. The constants are x^k mod P for the fold distances, bit-reflected. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(uint32_t c, const uint8_t *p, size_t len)
{
    const __m128i k12 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL); /* fold by 512 bits */
    const __m128i k34 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL); /* fold by 128 bits */
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);               /* 64 -> 32 bits */
    const __m128i poly = _mm_set_epi64x(0x1F7011641LL, 0x1DB710641LL); /* Barrett: mu, P */
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1 = _mm_loadu_si128((const __m128i *)p);
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    __m128i t;
#define CLMUL_FOLD(x, k, d) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x00), _mm_clmulepi64_si128((x), (k), 0x11)), (d))
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    p += 64;
    len -= 64;
    while (len >= 64) {
        x1 = CLMUL_FOLD(x1, k12, _mm_loadu_si128((const __m128i *)p));
        x2 = CLMUL_FOLD(x2, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = CLMUL_FOLD(x3, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = CLMUL_FOLD(x4, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        len -= 64;
    }
    x1 = CLMUL_FOLD(x1, k34, x2);
    x1 = CLMUL_FOLD(x1, k34, x3);
    x1 = CLMUL_FOLD(x1, k34, x4);
    while (len >= 16) {
        x1 = CLMUL_FOLD(x1, k34, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        len -= 16;
    }
#undef CLMUL_FOLD
    t = _mm_clmulepi64_si128(k34, x1, 0x01);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
    x1 = _mm_xor_si128(x1, t);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static uint32_t crc32_tail(const speedups_state *st, uint32_t crc, const uint8_t *p, Py_ssize_t n);

/* zlib.crc32(data, crc): the folding above for the bulk where the CPU has it, the rest (and
 * everything elsewhere) by zlib's own when linked (setup.py found it), else the slice-by-8 tables */
static uint32_t crc32_update(const speedups_state *st, uint32_t crc, const uint8_t *p, Py_ssize_t n)
{
#ifdef HAVE_CLMUL
    if (st->use_clmul && n >= 64) {
        size_t m = (size_t)n & ~(size_t)15;
        crc = ~crc32_clmul(~crc, p, m);
        p += m;
        n -= (Py_ssize_t)m;
    }
#endif
    return crc32_tail(st, crc, p, n);
}

static uint32_t crc32_of(const speedups_state *st, const uint8_t *p, Py_ssize_t n)
{
    return crc32_update(st, 0, p, n);
}

static uint32_t crc32_tail(const speedups_state *st, uint32_t crc, const uint8_t *p, Py_ssize_t n)
{
#ifdef HAVE_ZLIB
    uLong z = crc;

    (void)st;
    while (n > 0) {
        uInt chunk = n > 0x40000000 ? 0x40000000u : (uInt)n;
        z = crc32(z, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)z;
#else
    uint32_t c = ~crc;

    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) | ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        c = st->crc[7][lo & 0xFF] ^ st->crc[6][(lo >> 8) & 0xFF] ^ st->crc[5][(lo >> 16) & 0xFF] ^
            st->crc[4][lo >> 24] ^ st->crc[3][hi & 0xFF] ^ st->crc[2][(hi >> 8) & 0xFF] ^
            st->crc[1][(hi >> 16) & 0xFF] ^ st->crc[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = st->crc[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
#endif
}

typedef struct {
    Py_ssize_t bstart, blen, pstart, plen, size, at;
    int flag;
} rec_item;

static PyObject *encode_records(PyObject *module, PyObject *args)
{
    Py_buffer buf, src, bprops, topic, baddr, saddr;
    Py_ssize_t pos, nitems, i, fixed, hsize, total_all = 0, p;
    PyObject *items, *seq = NULL, *positions = NULL, *res = NULL;
    int queue_id, sys_flag, born_port, store_port, reconsume;
    long long first_qoff, file_base, born_ts, store_ts, prepared;
    rec_item *recs = NULL;
    uint32_t *crcs = NULL;
    uint8_t *b;
    const uint8_t *s;
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);

    if (!PyArg_ParseTuple(args, "w*ny*Oy*y*iLLiLy*iLy*iiL:encode_records", &buf, &pos, &src, &items, &bprops,
                          &topic, &queue_id, &first_qoff, &file_base, &sys_flag, &born_ts, &baddr, &born_port,
                          &store_ts, &saddr, &store_port, &reconsume, &prepared))
        return NULL;
    if (pos < 0 || pos > buf.len) {
        PyErr_SetString(PyExc_IndexError, "record position outside the buffer");
        goto done;
    }
    if (topic.len < 1 || topic.len > 127) {
        PyErr_SetString(PyExc_ValueError, "topic must be 1..127 bytes");
        goto done;
    }
    if ((baddr.len != 4 && baddr.len != 16) || (saddr.len != 4 && saddr.len != 16)) {
        PyErr_SetString(PyExc_ValueError, "host addresses must be 4 or 16 bytes");
        goto done;
    }
    if (((sys_flag & BORN_V6) != 0) != (baddr.len == 16) || ((sys_flag & STORE_V6) != 0) != (saddr.len == 16)) {
        PyErr_SetString(PyExc_ValueError, "sys_flag host bits do not match the address lengths");
        goto done;
    }
    seq = PySequence_Fast(items, "items must be a sequence of tuples");
    if (seq == NULL)
        goto done;
    nitems = PySequence_Fast_GET_SIZE(seq);
    recs = PyMem_New(rec_item, nitems > 0 ? nitems : 1);
    crcs = PyMem_New(uint32_t, nitems > 0 ? nitems : 1);
    if (recs == NULL || crcs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* TOTAL MAGIC CRC QID FLAG QOFF PHYS SYSFLAG BORNTS | BORNHOST STORETS STOREHOST | RECONSUME PREPARED BODYLEN */
    hsize = HEAD_SIZE + baddr.len + 4 + 8 + saddr.len + 4 + 16;
    fixed = hsize + 1 + topic.len + 2;
    for (i = 0; i < nitems; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        rec_item *r = &recs[i];
        Py_ssize_t full;

        if (!PyTuple_Check(it)) {
            PyErr_SetString(PyExc_TypeError, "items must be tuples");
            goto done;
        }
        if (!PyArg_ParseTuple(it, "nnnni", &r->bstart, &r->blen, &r->pstart, &r->plen, &r->flag))
            goto done;
        if (r->bstart < 0 || r->blen < 0 || r->bstart > src.len - r->blen || r->pstart < 0 || r->plen < 0 ||
            r->pstart > src.len - r->plen) {
            PyErr_SetString(PyExc_IndexError, "item outside src");
            goto done;
        }
        full = r->plen ? r->plen + (bprops.len ? 1 + bprops.len : 0) : bprops.len;
        if (full > 0xFFFF) {
            PyErr_SetString(PyExc_ValueError, "properties longer than 65535 bytes");
            goto done;
        }
        r->size = fixed + r->blen + full;
        if (r->size > PY_SSIZE_T_MAX - total_all) {
            PyErr_SetString(PyExc_IndexError, "records do not fit in the buffer");
            goto done;
        }
        total_all += r->size;
    }
    if (total_all > buf.len - pos) {
        PyErr_SetString(PyExc_IndexError, "records do not fit in the buffer");
        goto done;
    }
    positions = PyList_New(nitems);
    if (positions == NULL)
        goto done;
    b = (uint8_t *)buf.buf;
    s = (const uint8_t *)src.buf;
    /* payloads first */
    p = pos;
    for (i = 0; i < nitems; i++) {
        rec_item *r = &recs[i];
        uint8_t *q = b + p + hsize;
        PyObject *po = PyLong_FromSsize_t(p);

        if (po == NULL)
            goto done;
        PyList_SET_ITEM(positions, i, po);
        r->at = p;
        crcs[i] = crc32_of(st, s + r->bstart, r->blen) & 0x7FFFFFFFu;
        memmove(q, s + r->bstart, (size_t)r->blen);
        q += r->blen;
        *q++ = (uint8_t)topic.len;
        memcpy(q, topic.buf, (size_t)topic.len);
        q += topic.len;
        if (r->plen) {
            Py_ssize_t full = r->plen + (bprops.len ? 1 + bprops.len : 0);
            q[0] = (uint8_t)(full >> 8);
            q[1] = (uint8_t)full;
            q += 2;
            memmove(q, s + r->pstart, (size_t)r->plen);
            q += r->plen;
            if (bprops.len) {
                *q++ = 0x02;
                memcpy(q, bprops.buf, (size_t)bprops.len);
            }
        } else {
            q[0] = (uint8_t)(bprops.len >> 8);
            q[1] = (uint8_t)bprops.len;
            memcpy(q + 2, bprops.buf, (size_t)bprops.len);
        }
        p += r->size;
    }
    /* then the headers, newest record first */
    for (i = nitems - 1; i >= 0; i--) {
        const rec_item *r = &recs[i];
        Py_ssize_t at = r->at;
        uint8_t *h = b + at;

        const record_head head = {
            (uint32_t)r->size, crcs[i], (uint32_t)queue_id, (uint32_t)r->flag, (uint32_t)sys_flag,
            (uint32_t)born_port, (uint32_t)store_port, (uint32_t)reconsume, (uint32_t)r->blen,
            (uint64_t)first_qoff + (uint64_t)i, (uint64_t)file_base + (uint64_t)at, (uint64_t)born_ts,
            (uint64_t)store_ts, (uint64_t)prepared, &baddr, &saddr,
        };
        write_record_head(h, &head);
        wr_u32(b + at + 4, (uint32_t)MESSAGE_MAGIC_CODE); /* the magic last */
    }
    res = Py_BuildValue("(nO)", pos + total_all, positions);
done:
    Py_XDECREF(positions);
    Py_XDECREF(seq);
    PyMem_Free(recs);
    PyMem_Free(crcs);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&src);
    PyBuffer_Release(&bprops);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&baddr);
    PyBuffer_Release(&saddr);
    return res;
}

/*
 * write_record(buf, pos, body, topic, props, queue_id, flag, queue_offset, phys_offset, sys_flag, born_ts,
 *              born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset,
 *              body_crc) -> end: one v1 record at pos (a single put), payload first and the magic last;
 * body_crc < 0 computes it.
 */
static int fast_ll(PyObject *o, long long *out, long long lo, long long hi, const char *what)
{
    long long v = PyLong_AsLongLong(o);

    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_OverflowError, "%s out of range", what);
        return -1;
    }
    *out = v;
    return 0;
}

#define I32 (-2147483647LL - 1), 2147483647LL
#define I64 (-9223372036854775807LL - 1), 9223372036854775807LL

static PyObject *write_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    Py_buffer bufs[6];
    int got = 0, k;
    long long pos, qid, flag, qoff, phys, sys_flag, born_ts, born_port, store_ts, store_port, reconsume, prepared,
        crc;
    Py_ssize_t hsize, total;
    PyObject *res = NULL;
    static const int BUF_ARG[6] = {0, 2, 3, 4, 11, 14};

    if (nargs != 19) {
        PyErr_Format(PyExc_TypeError, "write_record expected 19 arguments, got %zd", nargs);
        return NULL;
    }
    if (fast_ll(args[1], &pos, 0, PY_SSIZE_T_MAX, "pos") < 0 || fast_ll(args[5], &qid, I32, "queue_id") < 0 ||
        fast_ll(args[6], &flag, I32, "flag") < 0 || fast_ll(args[7], &qoff, I64, "queue_offset") < 0 ||
        fast_ll(args[8], &phys, I64, "phys_offset") < 0 || fast_ll(args[9], &sys_flag, I32, "sys_flag") < 0 ||
        fast_ll(args[10], &born_ts, I64, "born_ts") < 0 || fast_ll(args[12], &born_port, I32, "born_port") < 0 ||
        fast_ll(args[13], &store_ts, I64, "store_ts") < 0 || fast_ll(args[15], &store_port, I32, "store_port") < 0 ||
        fast_ll(args[16], &reconsume, I32, "reconsume_times") < 0 ||
        fast_ll(args[17], &prepared, I64, "prepared_offset") < 0 || fast_ll(args[18], &crc, I32, "body_crc") < 0)
        return NULL;
    for (k = 0; k < 6; k++) {
        if (PyObject_GetBuffer(args[BUF_ARG[k]], &bufs[k], k == 0 ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
            goto done;
        got++;
    }
    {
        Py_buffer *buf = &bufs[0], *body = &bufs[1], *topic = &bufs[2], *props = &bufs[3], *baddr = &bufs[4],
                  *saddr = &bufs[5];
        uint8_t *b, *h, *q;

        if (topic->len < 1 || topic->len > 127) {
            PyErr_SetString(PyExc_ValueError, "topic must be 1..127 bytes");
            goto done;
        }
        if (props->len > 32767) {
            PyErr_SetString(PyExc_ValueError, "properties longer than 32767 bytes");
            goto done;
        }
        if ((baddr->len != 4 && baddr->len != 16) || (saddr->len != 4 && saddr->len != 16)) {
            PyErr_SetString(PyExc_ValueError, "host addresses must be 4 or 16 bytes");
            goto done;
        }
        if (((sys_flag & BORN_V6) != 0) != (baddr->len == 16) || ((sys_flag & STORE_V6) != 0) != (saddr->len == 16)) {
            PyErr_SetString(PyExc_ValueError, "sys_flag host bits do not match the address lengths");
            goto done;
        }
        if (body->len > 0x7FFFFFFF - 0x20000) {
            PyErr_SetString(PyExc_ValueError, "body too large");
            goto done;
        }
        hsize = HEAD_SIZE + baddr->len + 4 + 8 + saddr->len + 4 + 16;
        total = hsize + body->len + 1 + topic->len + 2 + props->len;
        if (pos > buf->len || total > buf->len - pos) {
            PyErr_SetString(PyExc_IndexError, "record does not fit in the buffer");
            goto done;
        }
        if (crc < 0)
            crc = (long long)(crc32_of(st, (const uint8_t *)body->buf, body->len) & 0x7FFFFFFFu);
        b = (uint8_t *)buf->buf + pos;
        q = b + hsize;
        memmove(q, body->buf, (size_t)body->len);
        q += body->len;
        *q++ = (uint8_t)topic->len;
        memcpy(q, topic->buf, (size_t)topic->len);
        q += topic->len;
        q[0] = (uint8_t)(props->len >> 8);
        q[1] = (uint8_t)props->len;
        memcpy(q + 2, props->buf, (size_t)props->len);
        h = b;
        {
            const record_head head = {
                (uint32_t)total, (uint32_t)crc, (uint32_t)qid, (uint32_t)flag, (uint32_t)sys_flag,
                (uint32_t)born_port, (uint32_t)store_port, (uint32_t)reconsume, (uint32_t)body->len,
                (uint64_t)qoff, (uint64_t)phys, (uint64_t)born_ts, (uint64_t)store_ts, (uint64_t)prepared,
                baddr, saddr,
            };
            write_record_head(h, &head);
        }
        wr_u32(b + 4, (uint32_t)MESSAGE_MAGIC_CODE); /* the magic last */
        res = PyLong_FromSsize_t((Py_ssize_t)pos + total);
    }
done:
    for (k = 0; k < got; k++)
        PyBuffer_Release(&bufs[k]);
    return res;
}

/* -- prepared DispatchRequests of a batch ------------------------------------------------------ */

/* The slots dispatch_requests fills, in DispatchRequest's positional order. */
static const char *const DR_SLOTS[15] = {
    "topic", "queue_id", "commit_log_offset", "msg_size", "tags_code", "store_timestamp", "consume_queue_offset",
    "keys", "uniq_key", "sys_flag", "prepared_transaction_offset", "_properties", "success", "bit_map",
    "properties_string",
};

/*
 * The slot offsets of DR_SLOTS in cls (cached for the last class seen), or NULL with TypeError when cls
 * is not a direct object subclass whose __slots__ are exactly those.
 */
static const Py_ssize_t *dr_offsets(speedups_state *st, PyTypeObject *cls)
{
    Py_ssize_t offs[15];
    int k;

    if (st->dr_cls == (PyObject *)cls)
        return st->dr_offs;
    for (k = 0; k < 15; k++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)cls, DR_SLOTS[k]);
        if (d == NULL)
            return NULL;
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type) || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX ||
            ((PyMemberDescrObject *)d)->d_common.d_type != cls) {
            Py_DECREF(d);
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot of that class", cls->tp_name, DR_SLOTS[k]);
            return NULL;
        }
        offs[k] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
    }
    /* every slot of the class is one of ours (a slot left NULL would read as a missing attribute) */
    if (cls->tp_base != &PyBaseObject_Type || cls->tp_itemsize != 0 || cls->tp_dictoffset != 0 ||
        cls->tp_basicsize - PyBaseObject_Type.tp_basicsize !=
            15 * (Py_ssize_t)sizeof(PyObject *) + (cls->tp_weaklistoffset ? (Py_ssize_t)sizeof(PyObject *) : 0)) {
        PyErr_Format(PyExc_TypeError, "%s does not have exactly the DispatchRequest slots", cls->tp_name);
        return NULL;
    }
    memcpy(st->dr_offs, offs, sizeof(offs));
    Py_XSETREF(st->dr_cls, Py_NewRef((PyObject *)cls));
    return st->dr_offs;
}

/* A prepared DispatchRequest holds only ints, strings, None and a dict of strings: it can never be
 * part of a reference cycle, so the cyclic collector need not track it. One is made per stored
 * message; untracked, they no longer trigger and lengthen young-generation collections. */
static void untrack_request(PyObject *obj)
{
    if (PyObject_IS_GC(obj) && Py_TYPE(obj)->tp_dictoffset == 0) /* no __dict__: the slots are all there is */
        PyObject_GC_UnTrack(obj);
}

/*
 * new_dispatch_request(cls, topic, queue_id, commit_log_offset, msg_size, tags_code, store_timestamp,
 *                      consume_queue_offset, keys, uniq_key, sys_flag, prepared_transaction_offset,
 *                      properties_string) -> cls instance equal to cls(those..., None, True, None, properties_string)
 * with the positional order of DispatchRequest (properties None, success True, bit_map None).
 */
static PyObject *new_dispatch_request(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    speedups_state *st = (speedups_state *)PyModule_GetState(module);
    const Py_ssize_t *offs;
    PyObject *obj, *props, *text;
    int k;

    if (nargs != 13) {
        PyErr_Format(PyExc_TypeError, "new_dispatch_request expected 13 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "cls must be a class");
        return NULL;
    }
    offs = dr_offsets(st, (PyTypeObject *)args[0]);
    if (offs == NULL)
        return NULL;
    text = args[12];
    props = (PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) > 0) ? Py_NewRef(Py_None) : PyDict_New();
    if (props == NULL)
        return NULL;
    obj = ((PyTypeObject *)args[0])->tp_alloc((PyTypeObject *)args[0], 0);
    if (obj == NULL) {
        Py_DECREF(props);
        return NULL;
    }
    for (k = 0; k < 11; k++) /* topic .. prepared_transaction_offset */
        *(PyObject **)((char *)obj + offs[k]) = Py_NewRef(args[k + 1]);
    *(PyObject **)((char *)obj + offs[11]) = props;
    *(PyObject **)((char *)obj + offs[12]) = Py_NewRef(Py_True);
    *(PyObject **)((char *)obj + offs[13]) = Py_NewRef(Py_None);
    *(PyObject **)((char *)obj + offs[14]) = Py_NewRef(text);
    untrack_request(obj);
    return obj;
}

/*
 * dispatch_requests(cls, topic, queue_id, file_base, positions, end, store_ts, first_qoff, sys_flag,
 *                   prepared_offset, fields) -> list of cls instances, one per record of a batch, equal to
 * cls(topic, queue_id, file_base + positions[i], next_position - positions[i], java_hash(tags) or 0,
 *     store_ts, first_qoff + i, keys or "", uniq, sys_flag, prepared_offset, None, True, None, text)
 * for fields[i] = (text, tags, keys, uniq, delay) (batch_properties); __init__ is not run: cls must
 * be a __slots__ class whose slots include exactly the fifteen above.
 */
static PyObject *dispatch_requests(PyObject *module, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *topic, *positions, *fields, *pseq = NULL, *fseq = NULL, *out = NULL, *res = NULL, *empty_str = NULL;
    long long qid, file_base, end, store_ts, first_qoff, sys_flag, prepared;
    const Py_ssize_t *offs;
    Py_ssize_t n, i;
    int k;
    speedups_state *st = (speedups_state *)PyModule_GetState(module);

    if (!PyArg_ParseTuple(args, "O!ULLOLLLLLO:dispatch_requests", &PyType_Type, &cls, &topic, &qid, &file_base,
                          &positions, &end, &store_ts, &first_qoff, &sys_flag, &prepared, &fields))
        return NULL;
    offs = dr_offsets(st, cls);
    if (offs == NULL)
        return NULL;
    pseq = PySequence_Fast(positions, "positions must be a sequence");
    fseq = pseq != NULL ? PySequence_Fast(fields, "fields must be a sequence") : NULL;
    if (fseq == NULL)
        goto done;
    n = PySequence_Fast_GET_SIZE(pseq);
    if (PySequence_Fast_GET_SIZE(fseq) != n) {
        PyErr_SetString(PyExc_ValueError, "positions and fields differ in length");
        goto done;
    }
    empty_str = PyUnicode_New(0, 127);
    out = PyList_New(n);
    if (out == NULL || empty_str == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *f = PySequence_Fast_GET_ITEM(fseq, i), *obj, *vals[15];
        long long pos, next;
        int32_t tags_code = 0;

        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 5) {
            PyErr_SetString(PyExc_TypeError, "fields must be 5-tuples");
            goto done;
        }
        pos = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(pseq, i));
        if (pos == -1 && PyErr_Occurred())
            goto done;
        if (i + 1 < n) {
            next = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(pseq, i + 1));
            if (next == -1 && PyErr_Occurred())
                goto done;
        } else {
            next = end;
        }
        {
            PyObject *tags = PyTuple_GET_ITEM(f, 1), *keys = PyTuple_GET_ITEM(f, 2);
            PyObject *text = PyTuple_GET_ITEM(f, 0);
            if (tags != Py_None) {
                if (check_str(tags) < 0)
                    goto done;
                tags_code = (int32_t)hash_str(tags);
            }
            vals[0] = Py_NewRef(topic);
            vals[1] = PyLong_FromLongLong(qid);
            vals[2] = PyLong_FromLongLong(file_base + pos);
            vals[3] = PyLong_FromLongLong(next - pos);
            vals[4] = PyLong_FromLong(tags_code);
            vals[5] = PyLong_FromLongLong(store_ts);
            vals[6] = PyLong_FromLongLong(first_qoff + i);
            vals[7] = Py_NewRef(keys == Py_None ? empty_str : keys);
            vals[8] = Py_NewRef(PyTuple_GET_ITEM(f, 3));
            vals[9] = PyLong_FromLongLong(sys_flag);
            vals[10] = PyLong_FromLongLong(prepared);
            /* DispatchRequest.__init__: properties parsed lazily from a non-empty text, else {} */
            vals[11] = (PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) > 0) ? Py_NewRef(Py_None) : PyDict_New();
            vals[12] = Py_NewRef(Py_True);
            vals[13] = Py_NewRef(Py_None);
            vals[14] = Py_NewRef(text);
        }
        obj = cls->tp_alloc(cls, 0);
        for (k = 0; k < 15; k++) {
            if (vals[k] == NULL || obj == NULL) {
                for (k = 0; k < 15; k++)
                    Py_XDECREF(vals[k]);
                Py_XDECREF(obj);
                if (!PyErr_Occurred())
                    PyErr_NoMemory();
                goto done;
            }
        }
        for (k = 0; k < 15; k++)
            *(PyObject **)((char *)obj + offs[k]) = vals[k]; /* fresh object: the slots are NULL */
        untrack_request(obj);
        PyList_SET_ITEM(out, i, obj);
    }
    res = Py_NewRef(out);
done:
    Py_XDECREF(out);
    Py_XDECREF(empty_str);
    Py_XDECREF(pseq);
    Py_XDECREF(fseq);
    return res;
}

/* -- a client batch in one pass ---------------------------------------------------------------- */

typedef struct {
    Py_ssize_t bstart, blen, pstart, plen, full, size, at;
    int flag;
    uint32_t crc;
    PyObject *text, *vals[4]; /* stored properties text; TAGS KEYS UNIQ_KEY DELAY (scan_props) */
} batch_entry;

static void free_entries(batch_entry *e, Py_ssize_t n)
{
    Py_ssize_t i;
    int k;

    for (i = 0; i < n; i++) {
        Py_XDECREF(e[i].text);
        for (k = 0; k < 4; k++)
            Py_XDECREF(e[i].vals[k]);
    }
}

/* The entries of a client batch body into *out (PyMem, caller frees), or -1 with *err set to the
 * refusal text (a new str) or an exception raised (err NULL). Same checks and texts as split_batch. */
static Py_ssize_t split_entries(const uint8_t *b, Py_ssize_t n, batch_entry **out, PyObject **err)
{
    Py_ssize_t pos = 0, count = 0, cap = 16;
    batch_entry *e = PyMem_New(batch_entry, cap);

    *out = NULL;
    *err = NULL;
    if (e == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    while (pos < n) {
        int32_t total = 0, blen = 0;
        Py_ssize_t p = 0, plen = 0;
        const char *what = NULL;

        if (pos + 22 > n) {
            what = "truncated batch entry";
        } else {
            total = rd_i32(b + pos);
            blen = rd_i32(b + pos + 16);
            p = pos + 20;
            if (blen < 0 || p + (Py_ssize_t)blen + 2 > n) {
                what = "bad body length in batch entry";
            } else {
                plen = ((Py_ssize_t)b[p + blen] << 8) | b[p + blen + 1];
                if (p + blen + 2 + plen > n || (Py_ssize_t)total != p + blen + 2 + plen - pos)
                    what = "bad size in batch entry";
            }
        }
        if (what != NULL) {
            *err = PyUnicode_FromFormat("bad batch body: %s at %zd", what, pos);
            PyMem_Free(e);
            return -1;
        }
        if (count == cap) {
            batch_entry *grown = PyMem_Resize(e, batch_entry, cap * 2);
            if (grown == NULL) {
                PyMem_Free(e);
                PyErr_NoMemory();
                return -1;
            }
            e = grown;
            cap *= 2;
        }
        memset(&e[count], 0, sizeof(batch_entry));
        e[count].flag = rd_i32(b + pos + 12);
        e[count].bstart = p;
        e[count].blen = blen;
        e[count].pstart = p + blen + 2;
        e[count].plen = plen;
        count++;
        pos = p + blen + 2 + plen;
    }
    *out = e;
    return count;
}

/*
 * encode_batch(buf, pos, limit, src, batch_props, topic, queue_id, first_qoff, file_base, sys_flag, born_ts,
 *              born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset,
 *              prefix, cls, topic_str)
 * split_batch + batch_properties + encode_records + msg_ids + dispatch_requests of one client batch in one
 * pass over its body (see common.speedups.Speedups.encode_batch for the contract).
 */
static PyObject *encode_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    speedups_state *st = (speedups_state *)PyModule_GetState(module);
    Py_buffer bufs[6];
    static const int BUF_ARG[6] = {0, 3, 4, 5, 11, 14};
    int got = 0, k;
    long long pos, limit, qid, first_qoff, file_base, sys_flag, born_ts, born_port, store_ts, store_port, reconsume,
        prepared;
    PyObject *prefix, *cls, *topic_str, *res = NULL, *err = NULL, *ids = NULL, *reqs = NULL;
    batch_entry *e = NULL;
    Py_ssize_t n = 0, i, hsize, fixed, total = 0, p;
    const Py_ssize_t *offs = NULL;
    char *tmp = NULL;
    Py_ssize_t cap = 0;

    if (nargs != 21) {
        PyErr_Format(PyExc_TypeError, "encode_batch expected 21 arguments, got %zd", nargs);
        return NULL;
    }
    if (fast_ll(args[1], &pos, 0, PY_SSIZE_T_MAX, "pos") < 0 || fast_ll(args[2], &limit, I64, "limit") < 0 ||
        fast_ll(args[6], &qid, I32, "queue_id") < 0 || fast_ll(args[7], &first_qoff, I64, "first_qoff") < 0 ||
        fast_ll(args[8], &file_base, I64, "file_base") < 0 || fast_ll(args[9], &sys_flag, I32, "sys_flag") < 0 ||
        fast_ll(args[10], &born_ts, I64, "born_ts") < 0 || fast_ll(args[12], &born_port, I32, "born_port") < 0 ||
        fast_ll(args[13], &store_ts, I64, "store_ts") < 0 || fast_ll(args[15], &store_port, I32, "store_port") < 0 ||
        fast_ll(args[16], &reconsume, I32, "reconsume_times") < 0 ||
        fast_ll(args[17], &prepared, I64, "prepared_offset") < 0)
        return NULL;
    prefix = args[18];
    cls = args[19];
    topic_str = args[20];
    if (check_str(prefix) < 0 || check_str(topic_str) < 0)
        return NULL;
    if (!PyUnicode_IS_ASCII(prefix)) {
        PyErr_SetString(PyExc_ValueError, "prefix must be ASCII");
        return NULL;
    }
    if (cls != Py_None) {
        if (!PyType_Check(cls)) {
            PyErr_SetString(PyExc_TypeError, "cls must be a class or None");
            return NULL;
        }
        offs = dr_offsets(st, (PyTypeObject *)cls);
        if (offs == NULL)
            return NULL;
    }
    for (k = 0; k < 6; k++) {
        if (PyObject_GetBuffer(args[BUF_ARG[k]], &bufs[k], k == 0 ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
            goto done;
        got++;
    }
    {
        Py_buffer *buf = &bufs[0], *src = &bufs[1], *bp = &bufs[2], *topic = &bufs[3], *baddr = &bufs[4],
                  *saddr = &bufs[5];
        const uint8_t *s = (const uint8_t *)src->buf;
        uint8_t *b = (uint8_t *)buf->buf;

        if (topic->len < 1 || topic->len > 127) {
            PyErr_SetString(PyExc_ValueError, "topic must be 1..127 bytes");
            goto done;
        }
        if ((baddr->len != 4 && baddr->len != 16) || (saddr->len != 4 && saddr->len != 16)) {
            PyErr_SetString(PyExc_ValueError, "host addresses must be 4 or 16 bytes");
            goto done;
        }
        if (((sys_flag & BORN_V6) != 0) != (baddr->len == 16) || ((sys_flag & STORE_V6) != 0) != (saddr->len == 16)) {
            PyErr_SetString(PyExc_ValueError, "sys_flag host bits do not match the address lengths");
            goto done;
        }
        if (pos > buf->len) {
            PyErr_SetString(PyExc_IndexError, "record position outside the buffer");
            goto done;
        }
        if (limit > buf->len - pos)
            limit = buf->len - pos; /* never past the mapping */
        n = split_entries(s, src->len, &e, &err);
        if (n < 0) {
            n = 0;
            if (err != NULL)
                res = Py_BuildValue("(iN)", 1, err);
            goto done;
        }
        if (n == 0) {
            res = Py_BuildValue("(is)", 1, "empty batch");
            goto done;
        }
        if (bp->len && memchr(bp->buf, 0, (size_t)bp->len) != NULL) {
            res = Py_BuildValue("(is)", 1, "properties contain NUL");
            goto done;
        }
        hsize = HEAD_SIZE + baddr->len + 4 + 8 + saddr->len + 4 + 16;
        fixed = hsize + 1 + topic->len + 2;
        /* each entry's stored properties: its own, then \x02 and the batch's when both exist */
        for (i = 0; i < n; i++) {
            batch_entry *r = &e[i];
            const char *start;
            int sr;

            if (r->plen) {
                if (memchr(s + r->pstart, 0, (size_t)r->plen) != NULL) {
                    res = Py_BuildValue("(is)", 1, "batch properties contain NUL");
                    goto done;
                }
                r->full = r->plen + (bp->len ? 1 + bp->len : 0);
                if (r->full == r->plen) {
                    start = (const char *)s + r->pstart;
                } else {
                    if (r->full > cap) {
                        char *grown = PyMem_Realloc(tmp, (size_t)r->full);
                        if (grown == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        tmp = grown;
                        cap = r->full;
                    }
                    memcpy(tmp, s + r->pstart, (size_t)r->plen);
                    tmp[r->plen] = 0x02;
                    memcpy(tmp + r->plen + 1, bp->buf, (size_t)bp->len);
                    start = tmp;
                }
            } else {
                r->full = bp->len;
                start = (const char *)bp->buf;
            }
            r->text = PyUnicode_DecodeUTF8(start, r->full, NULL);
            if (r->text == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                    goto done;
                PyErr_Clear();
                res = Py_BuildValue("(is)", 1, "batch properties not UTF-8");
                goto done;
            }
            if (r->full > MAX_PROPERTIES_BYTES) {
                res = Py_BuildValue("(is)", 2, "properties of a batch message exceed 32767 bytes");
                goto done;
            }
            sr = scan_props(r->text, r->vals);
            if (sr < 0)
                goto done;
            if (sr == 1) { /* cannot happen: both parts were checked for NUL */
                res = Py_BuildValue("(is)", 1, "properties contain NUL");
                goto done;
            }
            r->size = fixed + r->blen + r->full;
            total += r->size;
        }
        if (total > limit) {
            res = Py_BuildValue("(in)", 3, total);
            goto done;
        }
        /* payloads first (with each body's CRC), then the headers newest first, each magic last */
        p = (Py_ssize_t)pos;
        for (i = 0; i < n; i++) {
            batch_entry *r = &e[i];
            uint8_t *q = b + p + hsize;

            r->at = p;
            r->crc = crc32_of(st, s + r->bstart, r->blen) & 0x7FFFFFFFu;
            memmove(q, s + r->bstart, (size_t)r->blen);
            q += r->blen;
            *q++ = (uint8_t)topic->len;
            memcpy(q, topic->buf, (size_t)topic->len);
            q += topic->len;
            q[0] = (uint8_t)(r->full >> 8);
            q[1] = (uint8_t)r->full;
            q += 2;
            if (r->plen) {
                memmove(q, s + r->pstart, (size_t)r->plen);
                q += r->plen;
                if (bp->len) {
                    *q++ = 0x02;
                    memcpy(q, bp->buf, (size_t)bp->len);
                }
            } else if (bp->len) {
                memcpy(q, bp->buf, (size_t)bp->len);
            }
            p += r->size;
        }
        for (i = n - 1; i >= 0; i--) {
            const batch_entry *r = &e[i];
            uint8_t *h = b + r->at;

            const record_head head = {
                (uint32_t)r->size, r->crc, (uint32_t)qid, (uint32_t)r->flag, (uint32_t)sys_flag,
                (uint32_t)born_port, (uint32_t)store_port, (uint32_t)reconsume, (uint32_t)r->blen,
                (uint64_t)first_qoff + (uint64_t)i, (uint64_t)file_base + (uint64_t)r->at, (uint64_t)born_ts,
                (uint64_t)store_ts, (uint64_t)prepared, baddr, saddr,
            };
            write_record_head(h, &head);
            wr_u32(b + r->at + 4, (uint32_t)MESSAGE_MAGIC_CODE);
        }
        /* the put's msgIds: prefix + 16 hex digits of each record's offset, comma-joined */
        {
            static const char HEX[] = "0123456789ABCDEF";
            Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
            const char *pre = (const char *)PyUnicode_DATA(prefix);
            char *w;

            if (plen > (PY_SSIZE_T_MAX / 2 - 17) || n > (PY_SSIZE_T_MAX / 2) / (plen + 17)) {
                PyErr_NoMemory();
                goto done;
            }
            ids = PyUnicode_New(n * (plen + 17) - 1, 127);
            if (ids == NULL)
                goto done;
            w = (char *)PyUnicode_DATA(ids);
            for (i = 0; i < n; i++) {
                uint64_t v = (uint64_t)file_base + (uint64_t)e[i].at;
                if (i)
                    *w++ = ',';
                memcpy(w, pre, (size_t)plen);
                w += plen;
                for (k = 15; k >= 0; k--) {
                    w[k] = HEX[v & 0xF];
                    v >>= 4;
                }
                w += 16;
            }
        }
        if (offs != NULL) {
            /* the prepared DispatchRequests: what dispatch_requests makes of these records */
            PyObject *shared[5] = {NULL, NULL, NULL, NULL, NULL}; /* queue id, store time, sys flag, prepared, "" */
            PyObject *last_size = NULL;
            Py_ssize_t last_size_v = -1;

            shared[0] = PyLong_FromLongLong(qid);
            shared[1] = PyLong_FromLongLong(store_ts);
            shared[2] = PyLong_FromLongLong(sys_flag);
            shared[3] = PyLong_FromLongLong(prepared);
            shared[4] = PyUnicode_New(0, 127);
            reqs = PyList_New(n);
            for (k = 0; k < 5; k++) {
                if (shared[k] == NULL)
                    Py_CLEAR(reqs);
            }
            for (i = 0; reqs != NULL && i < n; i++) {
                batch_entry *r = &e[i];
                PyObject *obj, *vals[15];
                PyObject *tags = r->vals[0], *keys = r->vals[1];

                if (r->size != last_size_v) { /* records of one batch are mostly of one size: one int for them */
                    Py_XSETREF(last_size, PyLong_FromSsize_t(r->size));
                    last_size_v = r->size;
                }
                vals[0] = Py_NewRef(topic_str);
                vals[1] = Py_NewRef(shared[0]);
                vals[2] = PyLong_FromLongLong(file_base + r->at);
                vals[3] = Py_XNewRef(last_size);
                vals[4] = PyLong_FromLong(tags != Py_None ? (long)(int32_t)hash_str(tags) : 0L);
                vals[5] = Py_NewRef(shared[1]);
                vals[6] = PyLong_FromLongLong(first_qoff + i);
                vals[7] = Py_NewRef(keys == Py_None ? shared[4] : keys);
                vals[8] = Py_NewRef(r->vals[2]);
                vals[9] = Py_NewRef(shared[2]);
                vals[10] = Py_NewRef(shared[3]);
                /* DispatchRequest.__init__: properties parsed lazily from a non-empty text, else {} */
                vals[11] = PyUnicode_GET_LENGTH(r->text) > 0 ? Py_NewRef(Py_None) : PyDict_New();
                vals[12] = Py_NewRef(Py_True);
                vals[13] = Py_NewRef(Py_None);
                vals[14] = Py_NewRef(r->text);
                obj = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
                for (k = 0; k < 15; k++) {
                    if (vals[k] == NULL || obj == NULL)
                        break;
                }
                if (k < 15) {
                    for (k = 0; k < 15; k++)
                        Py_XDECREF(vals[k]);
                    Py_XDECREF(obj);
                    if (!PyErr_Occurred())
                        PyErr_NoMemory();
                    Py_CLEAR(reqs);
                    break;
                }
                for (k = 0; k < 15; k++)
                    *(PyObject **)((char *)obj + offs[k]) = vals[k]; /* fresh object: the slots are NULL */
                untrack_request(obj);
                PyList_SET_ITEM(reqs, i, obj);
            }
            Py_XDECREF(last_size);
            for (k = 0; k < 5; k++)
                Py_XDECREF(shared[k]);
            if (reqs == NULL)
                goto done;
        } else {
            reqs = Py_NewRef(Py_None);
        }
        res = Py_BuildValue("(innNN)", 0, (Py_ssize_t)pos + total, n, ids, reqs);
        ids = reqs = NULL;
    }
done:
    Py_XDECREF(ids);
    Py_XDECREF(reqs);
    if (e != NULL) {
        free_entries(e, n);
        PyMem_Free(e);
    }
    PyMem_Free(tmp);
    for (k = 0; k < got; k++)
        PyBuffer_Release(&bufs[k]);
    return res;
}

static int speedups_exec(PyObject *module)
{
    speedups_state *st = (speedups_state *)PyModule_GetState(module);

    crc_init(st);
    {
        const char *impl;
#ifdef HAVE_CLMUL
        const char *off = getenv("ROCKETMQ_PY_NO_PCLMUL");
        __builtin_cpu_init();
        st->use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
                        !(off != NULL && strcmp(off, "1") == 0);
        if (st->use_clmul)
            impl = "pclmul";
        else
#endif
#ifdef HAVE_ZLIB
            impl = "zlib";
#else
            impl = "table";
#endif
        if (PyModule_AddStringConstant(module, "CRC_IMPL", impl) < 0)
            return -1;
    }
    st->n_topic = PyUnicode_InternFromString("topic");
    st->n_offset = PyUnicode_InternFromString("commit_log_offset");
    st->n_sys_flag = PyUnicode_InternFromString("sys_flag");
    st->n_keys = PyUnicode_InternFromString("keys");
    st->n_uniq = PyUnicode_InternFromString("uniq_key");
    st->n_ts = PyUnicode_InternFromString("store_timestamp");
    st->n_size = PyUnicode_InternFromString("msg_size");
    st->n_tags_code = PyUnicode_InternFromString("tags_code");
    st->n_cq_offset = PyUnicode_InternFromString("consume_queue_offset");
    st->n_queue_id = PyUnicode_InternFromString("queue_id");
    if (!st->n_topic || !st->n_offset || !st->n_sys_flag || !st->n_keys || !st->n_uniq || !st->n_ts || !st->n_size ||
        !st->n_tags_code || !st->n_cq_offset || !st->n_queue_id)
        return -1;
    return 0;
}

static int speedups_traverse(PyObject *module, visitproc visit, void *arg)
{
    speedups_state *st = (speedups_state *)PyModule_GetState(module);

    if (st == NULL)
        return 0;
    Py_VISIT(st->n_topic);
    Py_VISIT(st->n_offset);
    Py_VISIT(st->n_sys_flag);
    Py_VISIT(st->n_keys);
    Py_VISIT(st->n_uniq);
    Py_VISIT(st->n_ts);
    Py_VISIT(st->n_size);
    Py_VISIT(st->n_tags_code);
    Py_VISIT(st->n_cq_offset);
    Py_VISIT(st->n_queue_id);
    Py_VISIT(st->dr_cls);
    return 0;
}

static int speedups_clear(PyObject *module)
{
    speedups_state *st = (speedups_state *)PyModule_GetState(module);

    if (st == NULL)
        return 0;
    Py_CLEAR(st->n_topic);
    Py_CLEAR(st->n_offset);
    Py_CLEAR(st->n_sys_flag);
    Py_CLEAR(st->n_keys);
    Py_CLEAR(st->n_uniq);
    Py_CLEAR(st->n_ts);
    Py_CLEAR(st->n_size);
    Py_CLEAR(st->n_tags_code);
    Py_CLEAR(st->n_cq_offset);
    Py_CLEAR(st->n_queue_id);
    Py_CLEAR(st->dr_cls);
    return 0;
}

static void speedups_free(void *module)
{
    (void)speedups_clear((PyObject *)module);
}

/* -- recovery scans -------------------------------------------------------------------------- */

/*
 * walk_records(buf, pos, base_offset, check_crc) -> (end, count, blank): validate the records of one
 * CommitLog file from pos as recovery does (parse_record(strict=True) accepts it, its PHYSICALOFFSET is
 * base_offset + its position, and with check_crc its BODYCRC matches) and stop at the first that is not
 * valid. end is that position, count the records passed, blank whether a BLANK head stops the walk.
 */
static PyObject *walk_records(PyObject *module, PyObject *args)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    Py_buffer buf;
    Py_ssize_t pos, n, p, end, tlen, plen, props_start, count = 0, last_tpos = -1, last_tlen = 0;
    long long base;
    int check_crc = 0, blank = 0;
    const uint8_t *b;
    int32_t total, magic, sys_flag, body_len;

    if (!PyArg_ParseTuple(args, "y*nLp:walk_records", &buf, &pos, &base, &check_crc))
        return NULL;
    b = (const uint8_t *)buf.buf;
    n = buf.len;
    if (pos < 0 || pos > n) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_IndexError, "record position outside the buffer");
        return NULL;
    }
    for (;;) {
        if (n - pos < 8)
            break;
        total = rd_i32(b + pos);
        magic = rd_i32(b + pos + 4);
        if (magic == BLANK_MAGIC_CODE) {
            blank = 1;
            break;
        }
        if (n - pos < HEAD_SIZE + 40)
            break;
        if (magic != MESSAGE_MAGIC_CODE && magic != MESSAGE_MAGIC_CODE_V2)
            break;
        if (total < MIN_RECORD || (Py_ssize_t)total > n - pos)
            break;
        if (rd_i64(b + pos + 28) != (int64_t)base + (int64_t)pos)
            break;
        sys_flag = rd_i32(b + pos + 36);
        p = pos + HEAD_SIZE + ((sys_flag & BORN_V6) ? 20 : 8);
        p += 8 + ((sys_flag & STORE_V6) ? 20 : 8);
        if (p + 16 > n)
            break;
        body_len = rd_i32(b + p + 12);
        p += 16;
        end = pos + total;
        if (body_len < 0 || p + (Py_ssize_t)body_len > end)
            break;
        if (check_crc && (int32_t)(crc32_of(st, b + p, body_len) & 0x7FFFFFFFu) != rd_i32(b + pos + 8))
            break;
        p += body_len;
        if (magic == MESSAGE_MAGIC_CODE) {
            if (p + 1 > end)
                break;
            tlen = b[p];
            p += 1;
        } else {
            if (p + 2 > end)
                break;
            tlen = (int16_t)(((uint16_t)b[p] << 8) | b[p + 1]);
            p += 2;
        }
        if (tlen <= 0 || p + tlen + 2 > end)
            break;
        props_start = p + tlen + 2;
        plen = ((Py_ssize_t)b[p + tlen] << 8) | b[p + tlen + 1];
        if (props_start + plen != end)
            break;
        if (memchr(b + p, 0, (size_t)tlen) != NULL || (plen && memchr(b + props_start, 0, (size_t)plen)))
            break;
        /* the topic must be UTF-8: decode it only when it differs from the last one checked */
        if (tlen != last_tlen || memcmp(b + p, b + last_tpos, (size_t)tlen) != 0) {
            PyObject *t = PyUnicode_DecodeUTF8((const char *)(b + p), tlen, NULL);
            if (t == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    PyBuffer_Release(&buf);
                    return NULL;
                }
                PyErr_Clear();
                break;
            }
            Py_DECREF(t);
            last_tpos = p;
            last_tlen = tlen;
        }
        count++;
        pos = end;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nnO)", pos, count, blank ? Py_True : Py_False);
}

/*
 * cq_scan(buf, pos, end) -> (stop, max_physic_offset): ConsumeQueue recovery over one file's units
 * (int64 offset, int32 size, int64 tags code) from pos: stop at the first unit with offset < 0 or
 * size <= 0 or when fewer than 20 bytes are left before end; max_physic_offset is offset + size of the
 * last unit passed that is not a pre-fill unit (offset 0, size 0x7FFFFFFF), -1 when none.
 */
static PyObject *cq_scan(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t pos, end;
    long long max_phy = -1;
    const uint8_t *b;

    (void)module;
    if (!PyArg_ParseTuple(args, "y*nn:cq_scan", &buf, &pos, &end))
        return NULL;
    if (end > buf.len)
        end = buf.len;
    if (pos < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_IndexError, "unit position outside the buffer");
        return NULL;
    }
    b = (const uint8_t *)buf.buf;
    while (pos + 20 <= end) {
        int64_t off = rd_i64(b + pos);
        int32_t sz = rd_i32(b + pos + 8);
        if (off < 0 || sz <= 0)
            break;
        if (sz != 0x7FFFFFFF || off != 0)
            max_phy = (long long)off + sz;
        pos += 20;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nL)", pos, max_phy);
}

/* -- base64 (DLedger PUSH entry bodies) ---------------------------------------------------------- */

static const char B64_ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The padded base64 of n bytes of s into d, which has room for ((n + 2) / 3) * 4 bytes. */
static void b64_write(uint8_t *d, const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *d++ = B64_ALPHABET[v >> 18];
        *d++ = B64_ALPHABET[(v >> 12) & 63];
        *d++ = B64_ALPHABET[(v >> 6) & 63];
        *d++ = B64_ALPHABET[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *d++ = B64_ALPHABET[v >> 18];
        *d++ = B64_ALPHABET[(v >> 12) & 63];
        *d++ = '=';
        *d++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *d++ = B64_ALPHABET[v >> 18];
        *d++ = B64_ALPHABET[(v >> 12) & 63];
        *d++ = B64_ALPHABET[(v >> 6) & 63];
        *d++ = '=';
    }
}

/* b64encode(data) -> str: standard alphabet with '=' padding, no newline. */
static PyObject *b64encode(PyObject *module, PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t n = b.len;
    if (n > (PY_SSIZE_T_MAX / 4) * 3 - 3) {
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    PyObject *out = PyUnicode_New(((n + 2) / 3) * 4, 127);
    if (out == NULL) {
        PyBuffer_Release(&b);
        return NULL;
    }
    const uint8_t *s = (const uint8_t *)b.buf;
    uint8_t *d = PyUnicode_1BYTE_DATA(out);
    b64_write(d, s, n);
    PyBuffer_Release(&b);
    return out;
}

/* 0..63 for the standard alphabet, 64 for '=', 255 for anything else */
static const uint8_t B64_VALUES[256] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 62, 255, 255, 255, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 255, 255, 255, 64, 255, 255,
    255, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 255, 255, 255, 255, 255,
    255, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};
#define b64_value(c) (B64_VALUES[(uint8_t)(c)])

/* b64decode(s) -> bytes, or None unless ``s`` (an ASCII str or a bytes-like object) is canonical
 * base64: standard alphabet, length a multiple of 4, at most two '=' and only at the end. */
static PyObject *b64decode(PyObject *module, PyObject *arg)
{
    const uint8_t *s;
    Py_ssize_t n;
    Py_buffer b;
    int have_buf = 0;
    if (PyUnicode_Check(arg)) {
        if (PyUnicode_READY(arg) < 0)
            return NULL;
        if (!PyUnicode_IS_ASCII(arg))
            Py_RETURN_NONE;
        s = PyUnicode_1BYTE_DATA(arg);
        n = PyUnicode_GET_LENGTH(arg);
    } else {
        if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
            return NULL;
        have_buf = 1;
        s = (const uint8_t *)b.buf;
        n = b.len;
    }
    PyObject *out = NULL;
    if (n % 4 != 0)
        goto none;
    Py_ssize_t pad = 0;
    if (n >= 1 && s[n - 1] == '=') pad++;
    if (n >= 2 && s[n - 2] == '=') pad++;
    if (n && pad == 2 && s[n - 3] == '=')
        goto none;
    out = PyBytes_FromStringAndSize(NULL, (n / 4) * 3 - pad);
    if (out == NULL)
        goto fail;
    uint8_t *d = (uint8_t *)PyBytes_AS_STRING(out);
    Py_ssize_t full = pad ? n - 4 : n;
    for (Py_ssize_t i = 0; i < full; i += 4) {
        uint8_t a = b64_value(s[i]), c1 = b64_value(s[i + 1]), c2 = b64_value(s[i + 2]), c3 = b64_value(s[i + 3]);
        if ((a | c1 | c2 | c3) & 0xC0)
            goto none; /* outside the alphabet, or '=' before the end */
        uint32_t v = ((uint32_t)a << 18) | ((uint32_t)c1 << 12) | ((uint32_t)c2 << 6) | c3;
        *d++ = (uint8_t)(v >> 16);
        *d++ = (uint8_t)(v >> 8);
        *d++ = (uint8_t)v;
    }
    if (pad) {
        const uint8_t *q = s + n - 4;
        uint8_t a = b64_value(q[0]), c1 = b64_value(q[1]);
        uint8_t c2 = pad == 2 ? 0 : b64_value(q[2]);
        if ((a | c1 | c2) & 0xC0)
            goto none;
        uint32_t v = ((uint32_t)a << 18) | ((uint32_t)c1 << 12) | ((uint32_t)c2 << 6);
        *d++ = (uint8_t)(v >> 16);
        if (pad == 1)
            *d++ = (uint8_t)(v >> 8);
    }
    if (have_buf)
        PyBuffer_Release(&b);
    return out;
none:
    Py_XDECREF(out);
    if (have_buf)
        PyBuffer_Release(&b);
    Py_RETURN_NONE;
fail:
    if (have_buf)
        PyBuffer_Release(&b);
    return NULL;
}

/* crc32(data, value=0) -> zlib.crc32(data, value) */
static PyObject *crc32_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const speedups_state *st = (const speedups_state *)PyModule_GetState(module);
    Py_buffer buf;
    uint32_t value = 0;
    uint32_t c;

    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32(data, value=0)");
        return NULL;
    }
    if (nargs == 2) {
        unsigned long long v = PyLong_AsUnsignedLongLongMask(args[1]);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
        value = (uint32_t)v;
    }
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    c = crc32_update(st, value, (const uint8_t *)buf.buf, buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(c);
}

/* -- ACL 1.0 request signature ------------------------------------------------------------------ */

#ifdef HAVE_LIBCRYPTO
/* The one-call SHA-1 of libcrypto (the one hashlib wraps): deprecated in OpenSSL 3 for EVP, but a
 * keyed HMAC state is then a plain struct to copy, with no object, lookup or allocation per request. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#define ACL_RAW_PADS ((Py_ssize_t)(2 * sizeof(SHA_CTX)))

/* acl_pads(block: bytes of 64) -> bytes: the SHA-1 states after the HMAC inner (0x36) and outer (0x5c)
 * pad blocks of a key already hashed/padded to 64 bytes, as one bytes object acl_mac copies from. */
static PyObject *acl_pads(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) != 64) {
        PyErr_SetString(PyExc_ValueError, "acl_pads: want the 64-byte key block");
        return NULL;
    }
    const uint8_t *k = (const uint8_t *)PyBytes_AS_STRING(arg);
    uint8_t pad[64];
    SHA_CTX ctx[2];
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 64; i++)
            pad[i] = k[i] ^ (j == 0 ? 0x36 : 0x5c);
        SHA1_Init(&ctx[j]);
        SHA1_Update(&ctx[j], pad, 64);
    }
    return PyBytes_FromStringAndSize((const char *)ctx, sizeof(ctx));
}
#else
static PyObject *acl_pads(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) != 64) {
        PyErr_SetString(PyExc_ValueError, "acl_pads: want the 64-byte key block");
        return NULL;
    }
    Py_RETURN_NONE; /* built without libcrypto: the caller keeps hashlib states */
}
#endif

/* Base64 (padded) of n bytes as a bytes object. */
static PyObject *b64_bytes(const uint8_t *s, Py_ssize_t n)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, ((n + 2) / 3) * 4);
    if (out == NULL)
        return NULL;
    uint8_t *d = (uint8_t *)PyBytes_AS_STRING(out);
    b64_write(d, s, n);
    return out;
}

/* hashlib object -> its copy updated with data (a new reference), NULL on error */
static PyObject *hash_copy_update(PyObject *state, PyObject *data, PyObject *data2)
{
    static PyObject *s_copy = NULL, *s_update = NULL;
    if (s_copy == NULL) {
        s_copy = PyUnicode_InternFromString("copy");
        s_update = PyUnicode_InternFromString("update");
        if (s_copy == NULL || s_update == NULL)
            return NULL;
    }
    PyObject *h = PyObject_CallMethodNoArgs(state, s_copy);
    if (h == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethodOneArg(h, s_update, data);
    if (r == NULL)
        goto fail;
    Py_DECREF(r);
    if (data2 != NULL) {
        r = PyObject_CallMethodOneArg(h, s_update, data2);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    return h;
fail:
    Py_DECREF(h);
    return NULL;
}

static PyObject *hash_digest(PyObject *h)
{
    static PyObject *s_digest = NULL;
    if (s_digest == NULL && (s_digest = PyUnicode_InternFromString("digest")) == NULL)
        return NULL;
    return PyObject_CallMethodNoArgs(h, s_digest);
}

#define ACL_MAX_FIELDS 64

/* acl_mac's answer: the Base64 MAC, or with `expect` (the request's Signature) whether it matches,
 * compared in constant time (a non-ASCII or non-str signature cannot match) */
static PyObject *acl_answer(const uint8_t *mac, Py_ssize_t n, PyObject *expect)
{
    PyObject *b64 = b64_bytes(mac, n);
    if (b64 == NULL || expect == NULL)
        return b64;
    int ok = 0;
    if (PyUnicode_Check(expect) && PyUnicode_IS_ASCII(expect)
        && PyUnicode_GET_LENGTH(expect) == PyBytes_GET_SIZE(b64)) {
        const uint8_t *a = (const uint8_t *)PyBytes_AS_STRING(b64), *b = PyUnicode_1BYTE_DATA(expect);
        uint8_t diff = 0;
        for (Py_ssize_t i = 0; i < PyBytes_GET_SIZE(b64); i++)
            diff |= a[i] ^ b[i];
        ok = diff == 0;
    }
    Py_DECREF(b64);
    return PyBool_FromLong(ok);
}

static PyObject *acl_mac(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 5 || nargs > 6 || !PyDict_Check(args[1])
        || !PyTuple_Check(args[2]) || !PyTuple_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "acl_mac(pads, ext: dict, order: tuple, others: tuple, body, expect=None)");
        return NULL;
    }
    PyObject *pads = args[0], *ext = args[1], *order = args[2], *others = args[3], *body = args[4];
    PyObject *expect = nargs == 6 && args[5] != Py_None ? args[5] : NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(order), m = PyTuple_GET_SIZE(others);
    if (n > ACL_MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "acl_mac: too many signed fields");
        return NULL;
    }
    /* the key set must be exactly order + others: a key the shape does not know changes the content */
    if (PyDict_GET_SIZE(ext) != n + m)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(others, i)) == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
    }
    PyObject *held[ACL_MAX_FIELDS]; /* values (or their surrogatepass bytes), owned */
    const char *ptr[ACL_MAX_FIELDS];
    Py_ssize_t len[ACL_MAX_FIELDS];
    Py_ssize_t got = 0, total = 0;
    PyObject *head = NULL, *inner = NULL, *d = NULL, *outer = NULL, *mac = NULL, *result = NULL;
    for (; got < n; got++) {
        PyObject *v = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(order, got));
        if (v == NULL) {
            if (!PyErr_Occurred())
                result = Py_NewRef(Py_None);
            goto done;
        }
        if (v == Py_None) { /* StringBuilder.append(null) */
            held[got] = Py_NewRef(v);
            ptr[got] = "null";
            len[got] = 4;
        } else if (PyUnicode_Check(v)) {
            held[got] = Py_NewRef(v);
            ptr[got] = PyUnicode_AsUTF8AndSize(v, &len[got]);
            if (ptr[got] == NULL) { /* a lone surrogate: encoded as Java's getBytes does, like the pure twin */
                if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                    got++;
                    goto done;
                }
                PyErr_Clear();
                Py_SETREF(held[got], PyUnicode_AsEncodedString(v, "utf-8", "surrogatepass"));
                if (held[got] == NULL)
                    goto done;
                ptr[got] = PyBytes_AS_STRING(held[got]);
                len[got] = PyBytes_GET_SIZE(held[got]);
            }
        } else {
            PyErr_Format(PyExc_TypeError, "sequence item %zd: expected str instance, %.80s found", got,
                         Py_TYPE(v)->tp_name);
            goto done;
        }
        total += len[got];
    }
#ifdef HAVE_LIBCRYPTO
    if (PyBytes_Check(pads) && PyBytes_GET_SIZE(pads) == ACL_RAW_PADS) {
        /* raw keyed states: hash the fields where they lie, then the body, with no object made */
        const SHA_CTX *keyed = (const SHA_CTX *)PyBytes_AS_STRING(pads);
        SHA_CTX c = keyed[0];
        uint8_t dig[SHA_DIGEST_LENGTH];
        uint8_t blk[512]; /* the (short) field values gathered: one update instead of one per field */
        size_t fill = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            size_t l = (size_t)len[i];
            if (fill + l > sizeof(blk)) {
                SHA1_Update(&c, blk, fill);
                fill = 0;
                if (l > sizeof(blk)) {
                    SHA1_Update(&c, ptr[i], l);
                    continue;
                }
            }
            memcpy(blk + fill, ptr[i], l);
            fill += l;
        }
        SHA1_Update(&c, blk, fill);
        if (body != Py_None) {
            Py_buffer view;
            if (PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0)
                goto done;
            SHA1_Update(&c, view.buf, (size_t)view.len);
            PyBuffer_Release(&view);
        }
        SHA1_Final(dig, &c);
        c = keyed[1];
        SHA1_Update(&c, dig, sizeof(dig));
        SHA1_Final(dig, &c);
        result = acl_answer(dig, sizeof(dig), expect);
        goto done;
    }
#endif
    if (!PyTuple_Check(pads) || PyTuple_GET_SIZE(pads) != 2) {
        PyErr_SetString(PyExc_TypeError, "acl_mac: pads must be acl_pads() bytes or two hashlib states");
        goto done;
    }
    head = PyBytes_FromStringAndSize(NULL, total);
    if (head == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(head);
    for (Py_ssize_t i = 0; i < n; i++) {
        memcpy(w, ptr[i], (size_t)len[i]);
        w += len[i];
    }
    int has_body = body != Py_None && PyObject_IsTrue(body);
    if (has_body < 0)
        goto done;
    inner = hash_copy_update(PyTuple_GET_ITEM(pads, 0), head, has_body ? body : NULL);
    if (inner == NULL || (d = hash_digest(inner)) == NULL)
        goto done;
    outer = hash_copy_update(PyTuple_GET_ITEM(pads, 1), d, NULL);
    if (outer == NULL || (mac = hash_digest(outer)) == NULL)
        goto done;
    if (!PyBytes_Check(mac)) {
        PyErr_SetString(PyExc_TypeError, "acl_mac: digest() did not return bytes");
        goto done;
    }
    result = acl_answer((const uint8_t *)PyBytes_AS_STRING(mac), PyBytes_GET_SIZE(mac), expect);
done:
    for (Py_ssize_t i = 0; i < got && i < n; i++)
        Py_XDECREF(held[i]);
    Py_XDECREF(head);
    Py_XDECREF(inner);
    Py_XDECREF(d);
    Py_XDECREF(outer);
    Py_XDECREF(mac);
    return result;
}

/* -- module ---------------------------------------------------------------------------------- */

/* common/_json_header.c */
PyObject *json_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *json_head(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* common/_send_header.c */
PyObject *send_header_v2(PyObject *module, PyObject *ext);
/* common/_put_single.c */
PyObject *put_single(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* common/_new_slotted.c */
PyObject *new_slotted(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* for common/_put_single.c: the record writer and the dispatch fields are this file's, not copies */
PyObject *speedups_write_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return write_record(module, args, nargs);
}

PyObject *speedups_dispatch_props(PyObject *module, PyObject *s)
{
    return dispatch_props(module, s);
}

PyObject *speedups_new_dispatch_request(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return new_dispatch_request(module, args, nargs);
}

static PyMethodDef methods[] = {
    {"b64encode", b64encode, METH_O, "b64encode(data) -> str (standard base64, padded)"},
    {"b64decode", b64decode, METH_O, "b64decode(s) -> bytes, or None unless s is canonical padded base64"},
    {"java_hash", java_hash, METH_O, "Java String.hashCode() of a str (signed 32-bit)."},
    {"index_put", index_put, METH_VARARGS,
     "index_put(buf, slot_num, index_count, key_hash, phy_offset, time_diff) -> slot was empty"},
    {"index_put_keys", index_put_keys, METH_VARARGS,
     "index_put_keys(buf, slot_num, index_count, max_index, keys, phy_offset, time_diff) -> (written, new_slots)"},
    {"index_build_many", index_build_many, METH_VARARGS,
     "index_build_many(buf, slot_num, max_index, requests, start, header) -> (next, header)"},
    {"parse_properties", parse_properties, METH_O,
     "parse_properties(text) -> dict of a properties string (entries with a non-empty key and value; last wins)"},
    {"dispatch_props", dispatch_props, METH_O,
     "dispatch_props(properties) -> (tags, keys, uniq_key, delay), or None when it contains NUL"},
    {"batch_properties", batch_properties, METH_VARARGS,
     "batch_properties(src, items, batch_props) -> ([(text, tags, keys, uniq, delay)], var_bytes) or (status, message)"},
    {"msg_ids", msg_ids, METH_VARARGS, "msg_ids(prefix, base, positions) -> comma-joined offset msgIds"},
    {"cq_put_units", cq_put_units, METH_VARARGS,
     "cq_put_units(buf, pos, file_size, file_from_offset, allow_at_zero, max_physic_offset, requests, start) -> "
     "(next, pos, max_physic_offset)"},
    {"queue_groups", queue_groups, METH_O,
     "queue_groups(requests) -> [(topic, queue_id, [request, ...])]: the consume-queue requests by queue, in order"},
    {"write_record", (PyCFunction)(void (*)(void))write_record, METH_FASTCALL,
     "write_record(buf, pos, body, topic, props, queue_id, flag, queue_offset, phys_offset, sys_flag, born_ts, "
     "born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset, body_crc) -> end"},
    {"dispatch_requests", dispatch_requests, METH_VARARGS,
     "dispatch_requests(cls, topic, queue_id, file_base, positions, end, store_ts, first_qoff, sys_flag, "
     "prepared_offset, fields) -> [cls instance per record]"},
    {"new_dispatch_request", (PyCFunction)(void (*)(void))new_dispatch_request, METH_FASTCALL,
     "new_dispatch_request(cls, topic, queue_id, commit_log_offset, msg_size, tags_code, store_timestamp, "
     "consume_queue_offset, keys, uniq_key, sys_flag, prepared_transaction_offset, properties_string) -> cls instance"},
    {"split_batch", split_batch, METH_O, "split_batch(body) -> list of (bstart, blen, pstart, plen, flag) or error"},
    {"parse_record", (PyCFunction)(void (*)(void))parse_record, METH_VARARGS | METH_KEYWORDS,
     "parse_record(buf, pos, strict=False) -> 20-tuple, or None when not a valid record"},
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(buf, pos, src, items, batch_props, topic, queue_id, first_qoff, file_base, sys_flag, born_ts, "
     "born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset) -> (end, positions)"},
    {"encode_batch", (PyCFunction)(void (*)(void))encode_batch, METH_FASTCALL,
     "encode_batch(buf, pos, limit, src, batch_props, topic, queue_id, first_qoff, file_base, sys_flag, born_ts, "
     "born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset, prefix, cls, "
     "topic_str) -> (0, end, count, msg_ids, requests) | (1 or 2, refusal) | (3, total)"},
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(buf, pos, base_offset, check_crc) -> (end, count, blank): recovery's check of one file"},
    {"crc32", (PyCFunction)(void (*)(void))crc32_fn, METH_FASTCALL, "crc32(data, value=0) -> zlib.crc32(data, value)"},
    {"cq_scan", cq_scan, METH_VARARGS,
     "cq_scan(buf, pos, end) -> (stop, max_physic_offset): ConsumeQueue recovery over one file"},
    {"acl_pads", acl_pads, METH_O,
     "acl_pads(key_block) -> bytes of the keyed SHA-1 states for acl_mac, or None without libcrypto"},
    {"acl_mac", (PyCFunction)(void (*)(void))acl_mac, METH_FASTCALL,
     "acl_mac(pads, ext, order, others, body, expect=None) -> Base64 HmacSHA1 bytes (with expect: whether it "
     "matches, in constant time), or None when ext's keys are not "
     "exactly order + others"},
    {"json_header", (PyCFunction)(void (*)(void))json_header, METH_FASTCALL,
     "json_header(raw, languages) -> (code, language, version, opaque, flag, remark, ext_fields), or None "
     "unless raw is the usual JSON remoting header"},
    {"json_head", (PyCFunction)(void (*)(void))json_head, METH_FASTCALL,
     "json_head(code, language, version, opaque, flag, remark, ext_fields, lang_names, body_len) -> frame "
     "prefix + JSON header bytes, or None unless the fields have the usual types"},
    {"put_single", (PyCFunction)(void (*)(void))put_single, METH_FASTCALL,
     "put_single(log, msg, now, kit) -> CommitLog.put_message's result for its usual case, or None (nothing "
     "written: the general path takes the message)"},
    {"new_slotted", (PyCFunction)(void (*)(void))new_slotted, METH_FASTCALL,
     "new_slotted(cls, values) -> an instance of a plain slotted class with its slots set from values, in "
     "__slots__ order"},
    {"send_header_v2", send_header_v2, METH_O,
     "send_header_v2(ext) -> the 13 SEND_MESSAGE_V2 header fields a..m, or None unless they have the usual form"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)speedups_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "common._speedups",
    "Compiled twin of common.speedups (see there for the contracts).",
    sizeof(speedups_state),
    methods,
    slots,
    speedups_traverse,
    speedups_clear,
    speedups_free,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModuleDef_Init(&module_def); }
