/*
 * send_header_v2: the usual SEND_MESSAGE_V2 request header read from its extFields in one call (part of
 * common._speedups). The contract is common/send_header_pure.py's: the one-letter fields as a 13-tuple
 * when every value has the usual form (exact str; numbers plain ASCII decimals of at most 19 digits
 * within their Java type; k and m "true" or "false"), None otherwise: the send processor's general
 * parse then takes the header and names what is wrong with it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* -1: not a plain decimal within [lo, hi] */
static int plain_decimal(PyObject *v, int64_t lo, int64_t hi, int64_t *out)
{
    const char *s;
    Py_ssize_t n, i = 0;
    uint64_t u = 0;
    int neg = 0;

    if (v == NULL || !PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v))
        return -1;
    s = (const char *)PyUnicode_1BYTE_DATA(v);
    n = PyUnicode_GET_LENGTH(v);
    if (n > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (n - i < 1 || n - i > 19)
        return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        u = u * 10 + (uint64_t)(s[i] - '0');
    }
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1 || (u && (int64_t)(0 - u) < lo) || (!u && lo > 0))
            return -1;
        *out = u ? (int64_t)(0 - u) : 0;
    } else {
        if (u > (uint64_t)INT64_MAX || (int64_t)u > hi || (int64_t)u < lo)
            return -1;
        *out = (int64_t)u;
    }
    return 0;
}

/* k, m: absent False, "true" True, "false" False; -1 otherwise */
static int flag_of(PyObject *v)
{
    if (v == NULL)
        return 0;
    if (!PyUnicode_CheckExact(v))
        return -1;
    if (PyUnicode_CompareWithASCIIString(v, "true") == 0)
        return 1;
    if (PyUnicode_CompareWithASCIIString(v, "false") == 0)
        return 0;
    return -1;
}

/* an optional int32 field (j, l): *out None when absent; -1 when present but not usual */
static int opt_int32(PyObject *v, PyObject **out)
{
    int64_t n;
    if (v == NULL) {
        *out = Py_NewRef(Py_None);
        return 0;
    }
    if (plain_decimal(v, INT32_MIN, INT32_MAX, &n) < 0)
        return -1;
    *out = PyLong_FromLongLong(n);
    return *out == NULL ? -2 : 0;
}

PyObject *send_header_v2(PyObject *module, PyObject *ext)
{
    PyObject *v[13], *res, *items[13] = {NULL};
    int64_t d, e, f, g, h;
    int unit, batch, k, r;

    if (!PyDict_Check(ext)) {
        PyErr_SetString(PyExc_TypeError, "ext must be a dict");
        return NULL;
    }
    for (k = 0; k < 13; k++) {
        /* the interpreter's own one-character strings (no allocation, hash cached) */
        PyObject *key = PyUnicode_FromOrdinal('a' + k);
        if (key == NULL)
            return NULL;
        v[k] = PyDict_GetItemWithError(ext, key); /* borrowed */
        Py_DECREF(key);
        if (v[k] == NULL && PyErr_Occurred())
            return NULL;
    }
    if (v[0] == NULL || v[1] == NULL || v[2] == NULL || !PyUnicode_CheckExact(v[0]) || !PyUnicode_CheckExact(v[1]) ||
        !PyUnicode_CheckExact(v[2]) || (v[8] != NULL && !PyUnicode_CheckExact(v[8])))
        Py_RETURN_NONE;
    if (plain_decimal(v[3], INT32_MIN, INT32_MAX, &d) < 0 || plain_decimal(v[4], INT32_MIN, INT32_MAX, &e) < 0 ||
        plain_decimal(v[5], INT32_MIN, INT32_MAX, &f) < 0 || plain_decimal(v[6], INT64_MIN, INT64_MAX, &g) < 0 ||
        plain_decimal(v[7], INT32_MIN, INT32_MAX, &h) < 0)
        Py_RETURN_NONE;
    unit = flag_of(v[10]);
    batch = flag_of(v[12]);
    if (unit < 0 || batch < 0)
        Py_RETURN_NONE;
    r = opt_int32(v[9], &items[9]);
    if (r == 0)
        r = opt_int32(v[11], &items[11]);
    if (r < 0) {
        Py_XDECREF(items[9]);
        Py_XDECREF(items[11]);
        if (r == -2)
            return NULL;
        Py_RETURN_NONE;
    }
    items[0] = Py_NewRef(v[0]);
    items[1] = Py_NewRef(v[1]);
    items[2] = Py_NewRef(v[2]);
    items[3] = PyLong_FromLongLong(d);
    items[4] = PyLong_FromLongLong(e);
    items[5] = PyLong_FromLongLong(f);
    items[6] = PyLong_FromLongLong(g);
    items[7] = PyLong_FromLongLong(h);
    items[8] = Py_NewRef(v[8] ? v[8] : Py_None);
    items[10] = Py_NewRef(unit ? Py_True : Py_False);
    items[12] = Py_NewRef(batch ? Py_True : Py_False);
    res = PyTuple_New(13);
    for (k = 0; k < 13; k++) {
        if (items[k] == NULL || res == NULL) {
            for (int j = 0; j < 13; j++)
                Py_XDECREF(items[j]);
            Py_XDECREF(res);
            return NULL;
        }
    }
    for (k = 0; k < 13; k++)
        PyTuple_SET_ITEM(res, k, items[k]);
    return res;
}
