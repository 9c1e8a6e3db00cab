/*
 * json_header / json_head: the usual JSON remoting header decoded, and encoded with its frame prefix, in
 * one pass (part of common._speedups).
 *
 * The contract is common/json_header_pure.py's: a header whose keys are all among code, language,
 * version, opaque, flag, remark, extFields and serializeTypeCurrentRPC, with int32 numbers, a
 * language name found in ``languages`` (or an int32), a string or null remark, an object of strings
 * or null as extFields and a string serializeTypeCurrentRPC, gives
 * (code, language, version, opaque, flag, remark, extFields); anything else (other keys, other
 * types, malformed JSON, text that is not UTF-8, a lone surrogate escape) gives None and the caller
 * takes its general path, which knows every other case and its error.
 * Strings are decoded as JSON says (all escapes, surrogate pairs); whitespace is JSON's four.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} jcur;

/* NULL without an exception: not the usual shape (the caller answers None) */
#define BAIL NULL

static inline void skip_ws(jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hex4(const uint8_t *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9')
            v |= (uint32_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v |= (uint32_t)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            v |= (uint32_t)(ch - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* A UTF-8 str from raw bytes; BAIL (error cleared) when they are not UTF-8. */
static PyObject *utf8_str(const char *s, Py_ssize_t n)
{
    PyObject *r;
    Py_ssize_t i;
    for (i = 0; i < n && !(s[i] & 0x80); i++)
        ;
    if (i == n && n <= 1) /* the interpreter's own one-character (and empty) strings, hash included: V2 keys */
        return PyUnicode_FromStringAndSize(s, n);
    if (i == n) { /* ASCII (the usual header): copied as is */
        r = PyUnicode_New(n, 127);
        if (r != NULL)
            memcpy(PyUnicode_1BYTE_DATA(r), s, (size_t)n);
        return r;
    }
    r = PyUnicode_DecodeUTF8(s, n, NULL);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        return BAIL;
    }
    return r;
}

/* The JSON string at c->p (on its opening quote); c->p moves past the closing quote. */
static PyObject *jstring(jcur *c)
{
    const uint8_t *s, *q;
    char small[512], *buf, *w;
    PyObject *r;

    if (c->p >= c->end || *c->p != '"')
        return BAIL;
    s = ++c->p;
    for (q = s; q < c->end && *q != '"' && *q != '\\'; q++)
        if (*q < 0x20)
            return BAIL; /* a raw control character: not JSON */
    if (q >= c->end)
        return BAIL;
    if (*q == '"') { /* no escapes: the bytes themselves */
        c->p = q + 1;
        return utf8_str((const char *)s, q - s);
    }
    /* escapes: decoded into a buffer no longer than the source (\uXXXX is 6 bytes, its UTF-8 at most 4) */
    if (c->end - s < (Py_ssize_t)sizeof(small)) {
        buf = small;
    } else {
        buf = PyMem_Malloc((size_t)(c->end - s) + 1);
        if (buf == NULL)
            return PyErr_NoMemory();
    }
    w = buf;
    memcpy(w, s, (size_t)(q - s));
    w += q - s;
    while (q < c->end && *q != '"') {
        uint8_t ch = *q;
        if (ch < 0x20)
            goto bail;
        if (ch != '\\') {
            *w++ = (char)ch;
            q++;
            continue;
        }
        if (q + 1 >= c->end)
            goto bail;
        switch (q[1]) {
        case '"': *w++ = '"'; q += 2; continue;
        case '\\': *w++ = '\\'; q += 2; continue;
        case '/': *w++ = '/'; q += 2; continue;
        case 'b': *w++ = '\b'; q += 2; continue;
        case 'f': *w++ = '\f'; q += 2; continue;
        case 'n': *w++ = '\n'; q += 2; continue;
        case 'r': *w++ = '\r'; q += 2; continue;
        case 't': *w++ = '\t'; q += 2; continue;
        case 'u': break;
        default: goto bail;
        }
        {
            uint32_t cp, lo;
            if (c->end - q < 6 || hex4(q + 2, &cp) < 0)
                goto bail;
            q += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                goto bail; /* a low surrogate first */
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* must pair with a low surrogate escape */
                if (c->end - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) < 0 || lo < 0xDC00 ||
                    lo > 0xDFFF)
                    goto bail;
                q += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) {
                *w++ = (char)cp;
            } else if (cp < 0x800) {
                *w++ = (char)(0xC0 | (cp >> 6));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xE0 | (cp >> 12));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (char)(0xF0 | (cp >> 18));
                *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            }
        }
    }
    if (q >= c->end)
        goto bail;
    c->p = q + 1;
    r = utf8_str(buf, w - buf);
    if (buf != small)
        PyMem_Free(buf);
    return r;
bail:
    if (buf != small)
        PyMem_Free(buf);
    return BAIL;
}

/* An int32 JSON number (no fraction or exponent, no leading zero) at c->p; -1 when it is not one. */
static int jint32(jcur *c, int32_t *out)
{
    const uint8_t *p = c->p;
    int neg = 0;
    int64_t v = 0;
    int digits = 0;

    if (p < c->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p < c->end && *p == '0' && p + 1 < c->end && p[1] >= '0' && p[1] <= '9')
        return -1;
    while (p < c->end && *p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (++digits > 10)
            return -1;
        p++;
    }
    if (digits == 0 || (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')))
        return -1;
    if (neg)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    c->p = p;
    return 0;
}

static int literal(jcur *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

/* extFields: an object of strings (or null: Py_None). */
static PyObject *jext(jcur *c)
{
    PyObject *d, *k = NULL, *v = NULL;

    if (literal(c, "null"))
        return Py_NewRef(Py_None);
    if (c->p >= c->end || *c->p != '{')
        return BAIL;
    c->p++;
    d = _PyDict_NewPresized(13); /* a V2 send header's keys without a resize */
    if (d == NULL)
        return NULL;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return d;
    }
    for (;;) {
        skip_ws(c);
        k = jstring(c);
        if (k == NULL)
            goto fail;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            goto fail;
        c->p++;
        skip_ws(c);
        v = jstring(c);
        if (v == NULL)
            goto fail;
        if (PyDict_SetItem(d, k, v) < 0)
            goto fail;
        Py_CLEAR(k);
        Py_CLEAR(v);
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return d;
        }
        goto fail;
    }
fail:
    Py_XDECREF(k);
    Py_XDECREF(v);
    Py_DECREF(d);
    return NULL;
}

enum { K_CODE, K_LANGUAGE, K_VERSION, K_OPAQUE, K_FLAG, K_REMARK, K_EXT, K_STYPE, K_OTHER };

/* The top-level key at c->p (on its opening quote): which of the usual ones, K_OTHER for another,
 * -1 when it is not a string. Compared as raw bytes unless it has an escape. */
static int jkey(jcur *c)
{
    static const char *const names[] = {"code", "language", "version", "opaque", "flag", "remark", "extFields",
                                        "serializeTypeCurrentRPC"};
    const uint8_t *s, *q;
    int i;

    if (c->p >= c->end || *c->p != '"')
        return -1;
    s = c->p + 1;
    for (q = s; q < c->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q < 0x80; q++)
        ;
    if (q < c->end && *q == '"') { /* plain ASCII */
        c->p = q + 1;
        for (i = 0; i < K_OTHER; i++)
            if ((size_t)(q - s) == strlen(names[i]) && memcmp(s, names[i], (size_t)(q - s)) == 0)
                return i;
        return K_OTHER;
    }
    {
        PyObject *k = jstring(c);
        if (k == NULL)
            return -1;
        for (i = 0; i < K_OTHER; i++)
            if (PyUnicode_CompareWithASCIIString(k, names[i]) == 0)
                break;
        Py_DECREF(k);
        return i;
    }
}

/* json_header(raw, languages) -> (code, language, version, opaque, flag, remark, ext_fields) or None */
PyObject *json_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    jcur c;
    int32_t ints[5] = {0, 0, 0, 0, 0}; /* code, (language), version, opaque, flag */
    PyObject *lang = NULL, *remark = NULL, *ext = NULL, *res = NULL;
    int done = 0;

    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "json_header expected 2 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "languages must be a dict");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    c.p = (const uint8_t *)view.buf;
    c.end = c.p + view.len;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        goto out;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
        done = 1;
    }
    while (!done) {
        int id;
        skip_ws(&c);
        id = jkey(&c);
        if (id < 0)
            goto out;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':')
            goto out;
        c.p++;
        skip_ws(&c);
        switch (id) {
        case K_CODE: case K_VERSION: case K_OPAQUE: case K_FLAG:
            if (jint32(&c, &ints[id]) < 0)
                goto out;
            break;
        case K_LANGUAGE: {
            Py_CLEAR(lang);
            if (c.p < c.end && *c.p == '"') {
                PyObject *name = jstring(&c), *code;
                if (name == NULL)
                    goto out;
                code = PyDict_GetItemWithError(args[1], name);
                Py_DECREF(name);
                if (code == NULL)
                    goto out; /* an unknown name (or an error): the general path */
                lang = Py_NewRef(code);
            } else {
                int32_t n;
                if (jint32(&c, &n) < 0)
                    goto out;
                lang = PyLong_FromLong(n);
                if (lang == NULL)
                    goto out;
            }
            break;
        }
        case K_REMARK:
            Py_CLEAR(remark);
            if (literal(&c, "null")) {
                remark = Py_NewRef(Py_None);
            } else if ((remark = jstring(&c)) == NULL) {
                goto out;
            }
            break;
        case K_EXT:
            Py_CLEAR(ext);
            if ((ext = jext(&c)) == NULL)
                goto out;
            break;
        case K_STYPE: {
            PyObject *s = jstring(&c);
            if (s == NULL)
                goto out;
            Py_DECREF(s);
            break;
        }
        default:
            goto out; /* a key the usual header does not have */
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        goto out;
    }
    skip_ws(&c);
    if (c.p != c.end || lang == NULL)
        goto out;
    res = PyTuple_New(7);
    if (res == NULL)
        goto out;
    {
        PyObject *items[7] = {PyLong_FromLong(ints[K_CODE]), Py_NewRef(lang), PyLong_FromLong(ints[K_VERSION]),
                              PyLong_FromLong(ints[K_OPAQUE]), PyLong_FromLong(ints[K_FLAG]),
                              Py_NewRef(remark ? remark : Py_None), Py_NewRef(ext ? ext : Py_None)};
        for (int i = 0; i < 7; i++) {
            if (items[i] == NULL) { /* (only an int can fail: MemoryError) */
                for (int j = 0; j < 7; j++)
                    Py_XDECREF(items[j]);
                Py_CLEAR(res);
                goto out;
            }
        }
        for (int i = 0; i < 7; i++)
            PyTuple_SET_ITEM(res, i, items[i]);
    }
out:
    PyBuffer_Release(&view);
    Py_XDECREF(lang);
    Py_XDECREF(remark);
    Py_XDECREF(ext);
    if (res == NULL && !PyErr_Occurred())
        return Py_NewRef(Py_None);
    return res;
}

/* -- encoding: the JSON header of a command and its frame prefix -------------------------------- */

/* Bytes of s (n UTF-8 bytes) once written as a JSON string without its quotes, escaped as orjson
 * does: '"', '\\', \b \t \n \f \r, other control characters as \u00XX (lowercase hex), the rest raw. */
static Py_ssize_t escaped_len(const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t len = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t ch = s[i];
        if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\t' || ch == '\n' || ch == '\f' || ch == '\r')
            len += 1;
        else if (ch < 0x20)
            len += 5;
    }
    return len;
}

static char *write_escaped(char *w, const uint8_t *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t ch = s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            *w++ = (char)ch;
            continue;
        }
        *w++ = '\\';
        switch (ch) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\b': *w++ = 'b'; break;
        case '\t': *w++ = 't'; break;
        case '\n': *w++ = 'n'; break;
        case '\f': *w++ = 'f'; break;
        case '\r': *w++ = 'r'; break;
        default:
            *w++ = 'u';
            *w++ = '0';
            *w++ = '0';
            *w++ = hex[ch >> 4];
            *w++ = hex[ch & 0xF];
        }
    }
    *w++ = '"';
    return w;
}

/* UTF-8 of a str: 0, or -1 (error cleared) when it has no UTF-8 form (a lone surrogate) */
static int utf8_of(PyObject *s, const uint8_t **out, Py_ssize_t *n)
{
    const char *p = PyUnicode_AsUTF8AndSize(s, n);
    if (p == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            PyErr_Clear();
        return -1;
    }
    *out = (const uint8_t *)p;
    return 0;
}

/* an int (not a bool) in the int64 range as decimal digits into buf (at least 21 bytes); -1 if not one */
static int int_text(PyObject *o, char *buf, Py_ssize_t *n)
{
    long long v;
    if (!PyLong_Check(o) || PyBool_Check(o))
        return -1;
    v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError))
            PyErr_Clear();
        return -1;
    }
    {
        char tmp[24];
        int k = 0;
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do {
            tmp[k++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        *n = 0;
        if (v < 0)
            buf[(*n)++] = '-';
        while (k)
            buf[(*n)++] = tmp[--k];
    }
    return 0;
}

#define JH_MAX_EXT 64 /* bigger extFields go the general way */
/* the header's fixed text, in fastjson's key order */
#define K_OPEN "{\"code\":"
#define K_EXT_ ",\"extFields\":{"
#define K_FLAG_ ",\"flag\":"
#define K_LANG_ ",\"language\":"
#define K_OPAQUE_ ",\"opaque\":"
#define K_REMARK_ ",\"remark\":"
#define K_TAIL ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":"

/*
 * json_head(code, language, version, opaque, flag, remark, ext_fields, lang_names, body_len) -> the frame
 * prefix and JSON header of a command with those fields as one bytes object,
 * what the remoting codec's general path writes for a JSON command (keys in fastjson's order, null
 * values left out), or None unless: code, version, opaque and flag are ints (not bools) in the int64
 * range, remark is None or a str, ext_fields None or a dict of exact str keys and values (at most
 * 64), every str has a UTF-8 form and the header and frame lengths fit the prefix.
 */
PyObject *json_head(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *f[7]; /* code, version, opaque, flag, language, remark, ext_fields */
    char nums[4][24];
    Py_ssize_t numlen[4];
    const uint8_t *lang_s, *remark_s = NULL;
    Py_ssize_t lang_n, remark_n = 0, body_len, hlen, i, n_ext = 0;
    const uint8_t *ks[JH_MAX_EXT], *vs[JH_MAX_EXT];
    Py_ssize_t kn[JH_MAX_EXT], vn[JH_MAX_EXT];
    PyObject *lang_name, *res = NULL;
    char *w;

    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "json_head expected 9 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyDict_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "lang_names must be a dict");
        return NULL;
    }
    body_len = PyLong_AsSsize_t(args[8]);
    if (body_len == -1 && PyErr_Occurred())
        return NULL;
    f[0] = args[0], f[1] = args[2], f[2] = args[3], f[3] = args[4], f[4] = args[1], f[5] = args[5], f[6] = args[6];
    for (i = 0; i < 4; i++)
        if (int_text(f[i], nums[i], &numlen[i]) < 0)
            goto done;
    lang_name = PyDict_GetItemWithError(args[7], f[4]);
    if (lang_name == NULL) {
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                goto done;
            PyErr_Clear(); /* unhashable: the general path says so */
            goto done;
        }
        lang_s = (const uint8_t *)"OTHER";
        lang_n = 5;
    } else if (!PyUnicode_Check(lang_name) || utf8_of(lang_name, &lang_s, &lang_n) < 0) {
        goto done;
    }
    /* {"code":N,["extFields":{...},]"flag":N,"language":"..","opaque":N,["remark":"..",]
     *  "serializeTypeCurrentRPC":"JSON","version":N} */
#define LIT(lit) ((Py_ssize_t)sizeof(lit) - 1)
    hlen = LIT(K_OPEN) + numlen[0] + LIT(K_FLAG_) + numlen[3] + LIT(K_LANG_) + 2 + escaped_len(lang_s, lang_n) +
           LIT(K_OPAQUE_) + numlen[2] + LIT(K_TAIL) + numlen[1] + 1;
    if (f[5] != Py_None) {
        if (!PyUnicode_Check(f[5]) || utf8_of(f[5], &remark_s, &remark_n) < 0)
            goto done;
        hlen += LIT(K_REMARK_) + 2 + escaped_len(remark_s, remark_n);
    }
    if (f[6] != Py_None) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        if (!PyDict_Check(f[6]) || PyDict_GET_SIZE(f[6]) > JH_MAX_EXT)
            goto done;
        hlen += LIT(K_EXT_) + 1; /* and '}' */
        while (PyDict_Next(f[6], &pos, &k, &v)) {
            if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v) || utf8_of(k, &ks[n_ext], &kn[n_ext]) < 0 ||
                utf8_of(v, &vs[n_ext], &vn[n_ext]) < 0)
                goto done;
            hlen += (n_ext ? 1 : 0) + 2 + escaped_len(ks[n_ext], kn[n_ext]) + 1 + 2 + escaped_len(vs[n_ext], vn[n_ext]);
            n_ext++;
        }
    }
    if (hlen > 0xFFFFFF || body_len < 0 || 4 + hlen + body_len > 0x7FFFFFFF)
        goto done;
    res = PyBytes_FromStringAndSize(NULL, 8 + hlen);
    if (res == NULL)
        goto done;
    w = PyBytes_AS_STRING(res);
    {
        uint32_t total = (uint32_t)(4 + hlen + body_len), word = (uint32_t)hlen; /* JSON: type 0 */
        uint8_t *p = (uint8_t *)w;
        p[0] = (uint8_t)(total >> 24), p[1] = (uint8_t)(total >> 16), p[2] = (uint8_t)(total >> 8), p[3] = (uint8_t)total;
        p[4] = (uint8_t)(word >> 24), p[5] = (uint8_t)(word >> 16), p[6] = (uint8_t)(word >> 8), p[7] = (uint8_t)word;
        w += 8;
    }
#define PUT(lit) (memcpy(w, lit, sizeof(lit) - 1), w += sizeof(lit) - 1)
    PUT(K_OPEN);
    memcpy(w, nums[0], (size_t)numlen[0]), w += numlen[0];
    if (f[6] != Py_None) {
        PUT(K_EXT_);
        for (i = 0; i < n_ext; i++) {
            if (i)
                *w++ = ',';
            w = write_escaped(w, ks[i], kn[i]);
            *w++ = ':';
            w = write_escaped(w, vs[i], vn[i]);
        }
        *w++ = '}';
    }
    PUT(K_FLAG_);
    memcpy(w, nums[3], (size_t)numlen[3]), w += numlen[3];
    PUT(K_LANG_);
    w = write_escaped(w, lang_s, lang_n);
    PUT(K_OPAQUE_);
    memcpy(w, nums[2], (size_t)numlen[2]), w += numlen[2];
    if (f[5] != Py_None) {
        PUT(K_REMARK_);
        w = write_escaped(w, remark_s, remark_n);
    }
    PUT(K_TAIL);
    memcpy(w, nums[1], (size_t)numlen[1]), w += numlen[1];
    *w++ = '}';
#undef PUT
#undef LIT
    if (w - PyBytes_AS_STRING(res) != 8 + hlen) { /* cannot be: the lengths above are the writes below */
        Py_CLEAR(res);
        PyErr_SetString(PyExc_SystemError, "json_head: length mismatch");
    }
done:
    if (res == NULL && !PyErr_Occurred())
        return Py_NewRef(Py_None);
    return res;
}
