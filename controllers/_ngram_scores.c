/* The classifier's hashed n-grams and weight sums in one pass over the text (optional accelerator).
 *
 * controllers/classifier.py computes the same buckets with numpy (about twenty array calls of a microsecond each,
 * then a gather over a 1.8 MB weight table); this does the rolling hash, the three hash spaces, the weight sums and
 * the marked-bucket test per character, with the weights laid out one row of labels per bucket (one cache line per
 * feature instead of one per label). Bucket for bucket the same features: tests/controllers/test_classifier_native.py
 * checks the sums against the numpy path on every labelled prompt and on generated text. Built when a C compiler is
 * there (setuptools marks it optional); without it the numpy path runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Same constants as controllers/classifier.py. */
static const uint64_t PRIME = 1099511628211ULL;
static const uint64_t MIX = 0x9E3779B97F4A7C15ULL;
static const unsigned SHIFT = 29;
static const uint64_t ASK_SALT = 0x27D4EB2FULL;
static const uint64_t SYSTEM_SALT = 0x5BD1E995ULL;

#define MAX_SIZE 16   /* n-gram sizes above this are refused (the model uses 3-5) */
#define MAX_LABELS 64 /* the accumulators live on the stack */

typedef struct {
    const float *rows; /* (dim, stride) float32, row-major: the labels' weights, then zeros up to the stride */
    Py_ssize_t stride;
    const uint8_t *marks; /* (dim,) 0/1: a task-word or traceback literal may start with an n-gram in this bucket */
    const uint64_t *keys; /* sorted rolling hashes (unsalted, unmixed) of those literals' leading n-grams */
    Py_ssize_t n_keys;
    uint64_t mask;
    Py_ssize_t labels;
    double sums[MAX_LABELS];
    Py_ssize_t count;
} Scorer;

/* Adds a bucket's row to float accumulators: a row of 8 (7 labels padded) is two SSE adds. Each text's sum is
 * carried into the double sums at its end (a few thousand float additions: relative error ~1e-6). */
static inline void add_row(const Scorer *s, float *restrict acc, uint64_t bucket) {
    const float *restrict row = s->rows + bucket * (uint64_t)s->stride;
    if (s->stride == 8) {
        for (int l = 0; l < 8; l++) acc[l] += row[l];
    } else {
        for (Py_ssize_t l = 0; l < s->stride; l++) acc[l] += row[l];
    }
}

static void carry(Scorer *s, const float *acc) {
    for (Py_ssize_t l = 0; l < s->labels; l++) s->sums[l] += acc[l];
}

static inline uint64_t bucket_of(uint64_t h, uint64_t mask) { return ((h * MIX) >> SHIFT) & mask; }

/* Whether the n-gram's own 64-bit hash is a key's: most marked buckets are marked for another n-gram. */
static int is_key(const Scorer *s, uint64_t h) {
    Py_ssize_t lo = 0, hi = s->n_keys;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (s->keys[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n_keys && s->keys[lo] == h;
}

/* Appends (n, start) to `hits`; -1 on error. */
static int add_hit(PyObject *hits, int n, Py_ssize_t start) {
    PyObject *pair = Py_BuildValue("(in)", n, start);
    if (pair == NULL) return -1;
    int rc = PyList_Append(hits, pair);
    Py_DECREF(pair);
    return rc;
}

/* One text's n-grams. `salt`: XORed before mixing (0 for the user turn). `ask`: the user turn's first `ask` characters'
 * n-grams again, salted with ASK_SALT (0 for the system prompt). `hits`: where to record n-grams that are keys. */
static int score_text(Scorer *s, PyObject *text, uint64_t salt, Py_ssize_t ask, const int *want, int max_n,
                      PyObject *hits) {
    const Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    uint32_t stack[4096];
    uint32_t *codes = stack;
    if (len > 4096 && (codes = PyMem_Malloc((size_t)len * sizeof(uint32_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < len; i++) codes[i] = (uint32_t)PyUnicode_READ(kind, data, i);
    float acc[MAX_LABELS + 8] = {0};
    int rc = 0;
    for (Py_ssize_t i = 0; i < len && rc == 0; i++) {
        uint64_t h = 0;
        const Py_ssize_t top = len - i < max_n ? len - i : max_n;
        for (int n = 1; n <= top; n++) {
            h = n == 1 ? (uint64_t)codes[i] : h * PRIME + codes[i + n - 1];
            if (!want[n]) continue;
            uint64_t b = bucket_of(h ^ salt, s->mask);
            add_row(s, acc, b);
            s->count++;
            if (s->marks[b] && is_key(s, h) && add_hit(hits, n, i) < 0) {
                rc = -1;
                break;
            }
            if (i + n <= ask) {
                add_row(s, acc, bucket_of(h ^ ASK_SALT, s->mask));
                s->count++;
            }
        }
    }
    carry(s, acc);
    if (codes != stack) PyMem_Free(codes);
    return rc;
}

static int get_buffer(PyObject *obj, Py_buffer *view) { return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS); }

static PyObject *sums_tuple(const Scorer *s) {
    PyObject *sums = PyList_New(s->labels);
    if (sums == NULL) return NULL;
    for (Py_ssize_t l = 0; l < s->labels; l++) {
        PyObject *v = PyFloat_FromDouble(s->sums[l]);
        if (v == NULL) {
            Py_DECREF(sums);
            return NULL;
        }
        PyList_SET_ITEM(sums, l, v);
    }
    return sums;
}

/* Checks the tables against dim * labels and fills the scorer's pointers; the views are released by the caller. */
static int open_scorer(Scorer *s, Py_buffer *rows, Py_buffer *marks, Py_ssize_t labels) {
    if (labels < 1 || labels > MAX_LABELS) {
        PyErr_Format(PyExc_ValueError, "labels must be 1..%d", MAX_LABELS);
        return -1;
    }
    Py_ssize_t dim = marks->len;
    Py_ssize_t stride = dim ? rows->len / (dim * (Py_ssize_t)sizeof(float)) : 0;
    if (dim < 2 || (dim & (dim - 1)) || stride < labels || stride > MAX_LABELS + 8 ||
        rows->len != dim * stride * (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError,
                        "rows must be (dim, stride >= labels) float32 and marks (dim,) bytes, dim a power of 2");
        return -1;
    }
    memset(s, 0, sizeof(*s));
    s->rows = (const float *)rows->buf;
    s->stride = stride;
    s->marks = (const uint8_t *)marks->buf;
    s->mask = (uint64_t)dim - 1;
    s->labels = labels;
    return 0;
}

PyDoc_STRVAR(ngram_scores_doc,
             "ngram_scores(user, system, ask_chars, sizes, rows, labels, marks, keys) -> (sums, count, user_hits, "
             "system_hits)\n\n"
             "Weight sums per label over the n-grams of `user` (plain), of its first `ask_chars` characters (ask "
             "salt) and of `system` (system salt); `count` features; (n, start) of the user's and the system's "
             "n-grams whose bucket is marked and whose rolling hash is in the sorted uint64 `keys`.");

static PyObject *ngram_scores(PyObject *self, PyObject *args) {
    PyObject *user, *system, *sizes, *rows_obj, *marks_obj, *keys_obj;
    Py_ssize_t ask, labels;
    if (!PyArg_ParseTuple(args, "UUnOOnOO", &user, &system, &ask, &sizes, &rows_obj, &labels, &marks_obj, &keys_obj))
        return NULL;
    int want[MAX_SIZE + 1] = {0};
    int max_n = 0;
    PyObject *seq = PySequence_Fast(sizes, "sizes must be a sequence of ints");
    if (seq == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        long n = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (n == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (n < 1 || n > MAX_SIZE) {
            Py_DECREF(seq);
            return PyErr_Format(PyExc_ValueError, "n-gram sizes must be 1..%d", MAX_SIZE);
        }
        want[n] = 1;
        if (n > max_n) max_n = (int)n;
    }
    Py_DECREF(seq);
    if (max_n == 0) return PyErr_Format(PyExc_ValueError, "no n-gram sizes");
    Py_buffer rows, marks;
    if (get_buffer(rows_obj, &rows) < 0) return NULL;
    if (get_buffer(marks_obj, &marks) < 0) {
        PyBuffer_Release(&rows);
        return NULL;
    }
    Py_buffer keys;
    if (get_buffer(keys_obj, &keys) < 0) {
        PyBuffer_Release(&rows);
        PyBuffer_Release(&marks);
        return NULL;
    }
    Scorer s;
    PyObject *user_hits = NULL, *system_hits = NULL, *result = NULL;
    if (open_scorer(&s, &rows, &marks, labels) < 0) goto done;
    if (keys.len % (Py_ssize_t)sizeof(uint64_t)) {
        PyErr_SetString(PyExc_ValueError, "keys must be uint64");
        goto done;
    }
    s.keys = (const uint64_t *)keys.buf;
    s.n_keys = keys.len / (Py_ssize_t)sizeof(uint64_t);
    user_hits = PyList_New(0);
    system_hits = PyList_New(0);
    if (user_hits == NULL || system_hits == NULL) goto done;
    if (score_text(&s, user, 0, ask, want, max_n, user_hits) < 0) goto done;
    if (score_text(&s, system, SYSTEM_SALT, 0, want, max_n, system_hits) < 0) goto done;
    PyObject *sums = sums_tuple(&s);
    if (sums != NULL) result = Py_BuildValue("(NnOO)", sums, s.count, user_hits, system_hits);
done:
    Py_XDECREF(user_hits);
    Py_XDECREF(system_hits);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&marks);
    PyBuffer_Release(&keys);
    return result;
}

PyDoc_STRVAR(finish_doc,
             "finish(sums, count, cue_ids, repeat, rows, labels, marks, bias) -> (top, probability, logits): adds "
             "the cue buckets' rows (each `repeat` times) to the n-gram sums, scales by 1 / sqrt(all features), adds "
             "the float32 `bias`; the top label's index and softmax probability, and the logits.");

static PyObject *finish(PyObject *self, PyObject *args) {
    PyObject *sums_obj, *ids, *rows_obj, *marks_obj, *bias_obj;
    Py_ssize_t count, repeat, labels;
    if (!PyArg_ParseTuple(args, "OnOnOnOO", &sums_obj, &count, &ids, &repeat, &rows_obj, &labels, &marks_obj,
                          &bias_obj))
        return NULL;
    PyObject *sums = PySequence_Fast(sums_obj, "sums must be a sequence of floats");
    if (sums == NULL) return NULL;
    PyObject *seq = PySequence_Fast(ids, "cue ids must be a sequence of ints");
    if (seq == NULL) {
        Py_DECREF(sums);
        return NULL;
    }
    Py_buffer rows = {0}, marks = {0}, bias = {0};
    int have_rows = 0, have_marks = 0, have_bias = 0;
    PyObject *result = NULL, *logits = NULL;
    Scorer s;
    if (get_buffer(rows_obj, &rows) < 0) goto done;
    have_rows = 1;
    if (get_buffer(marks_obj, &marks) < 0) goto done;
    have_marks = 1;
    if (get_buffer(bias_obj, &bias) < 0) goto done;
    have_bias = 1;
    if (open_scorer(&s, &rows, &marks, labels) < 0) goto done;
    if (PySequence_Fast_GET_SIZE(sums) != labels || bias.len != labels * (Py_ssize_t)sizeof(float) || repeat < 1) {
        PyErr_SetString(PyExc_ValueError, "sums and bias need one value per label, repeat >= 1");
        goto done;
    }
    float acc[MAX_LABELS + 8] = {0};
    const Py_ssize_t n_ids = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n_ids; i++) {
        unsigned long long id = PyLong_AsUnsignedLongLongMask(PySequence_Fast_GET_ITEM(seq, i));
        if (id == (unsigned long long)-1 && PyErr_Occurred()) goto done;
        add_row(&s, acc, id & s.mask);
    }
    const double scale = 1.0 / sqrt((double)(count + repeat * n_ids));
    const float *b = (const float *)bias.buf;
    double z[MAX_LABELS];
    Py_ssize_t top = 0;
    for (Py_ssize_t l = 0; l < labels; l++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(sums, l));
        if (v == -1.0 && PyErr_Occurred()) goto done;
        z[l] = (v + (double)repeat * acc[l]) * scale + b[l];
        if (z[l] > z[top]) top = l;
    }
    double total = 0.0;
    for (Py_ssize_t l = 0; l < labels; l++) total += exp(z[l] - z[top]);
    logits = PyList_New(labels);
    if (logits == NULL) goto done;
    for (Py_ssize_t l = 0; l < labels; l++) {
        PyObject *v = PyFloat_FromDouble(z[l]);
        if (v == NULL) goto done;
        PyList_SET_ITEM(logits, l, v);
    }
    result = Py_BuildValue("(ndO)", top, 1.0 / total, logits);
done:
    Py_XDECREF(logits);
    if (have_rows) PyBuffer_Release(&rows);
    if (have_marks) PyBuffer_Release(&marks);
    if (have_bias) PyBuffer_Release(&bias);
    Py_DECREF(seq);
    Py_DECREF(sums);
    return result;
}

PyDoc_STRVAR(bin_counts_doc,
             "bin_counts(text, edges) -> counts: how many code points of `text` fall in each bin of the sorted "
             "uint32 `edges` (bin i + 1 holds edges[i] <= c < edges[i + 1]), as numpy's "
             "bincount(searchsorted(edges, codes, 'right'), minlength=len(edges) + 1).");

static PyObject *bin_counts(PyObject *self, PyObject *args) {
    PyObject *text, *edges_obj;
    if (!PyArg_ParseTuple(args, "UO", &text, &edges_obj)) return NULL;
    Py_buffer edges;
    if (get_buffer(edges_obj, &edges) < 0) return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n_edges = edges.len / (Py_ssize_t)sizeof(uint32_t);
    if (n_edges < 1 || n_edges > 64 || edges.len % (Py_ssize_t)sizeof(uint32_t)) {
        PyErr_SetString(PyExc_ValueError, "edges must be 1..64 uint32 values");
        goto done;
    }
    const uint32_t *e = (const uint32_t *)edges.buf;
    Py_ssize_t counts[65] = {0};
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < len; i++) {
        uint32_t c = (uint32_t)PyUnicode_READ(kind, data, i);
        Py_ssize_t lo = 0, hi = n_edges; /* the number of edges <= c */
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (e[mid] <= c) lo = mid + 1;
            else hi = mid;
        }
        counts[lo]++;
    }
    result = PyList_New(n_edges + 1);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i <= n_edges; i++) {
        PyObject *v = PyLong_FromSsize_t(counts[i]);
        if (v == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, v);
    }
done:
    PyBuffer_Release(&edges);
    return result;
}

/* The keywords a code line may start with, as in controllers/classifier.py's _CODE_LINE_STARTS. */
static const char *const KEYWORDS[] = {"def", "class", "import", "from", "return", "if", "for",
                                       "while", "func", "fn", "let", "const", "var"};

static inline int is_word(Py_UCS4 c) { return Py_UNICODE_ISALNUM(c) || c == '_'; }

/* Whether the line text[start:end] (no newline in it) looks like code, as the regular expression decides:
 * indented then not blank, or its last non-blank character one of ";{}", or a keyword after the indentation. */
static int code_line(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    Py_ssize_t i = start;
    while (i < end && (PyUnicode_READ(kind, data, i) == ' ' || PyUnicode_READ(kind, data, i) == '\t')) i++;
    if (i > start && i < end && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) return 1;
    Py_ssize_t last = end;
    while (last > start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, last - 1))) last--;
    if (last > start) {
        Py_UCS4 c = PyUnicode_READ(kind, data, last - 1);
        if (c == ';' || c == '{' || c == '}') return 1;
    }
    i = start;
    while (i < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
    for (size_t k = 0; k < sizeof(KEYWORDS) / sizeof(KEYWORDS[0]); k++) {
        const char *w = KEYWORDS[k];
        Py_ssize_t j = 0;
        while (w[j] && i + j < end && PyUnicode_READ(kind, data, i + j) == (Py_UCS4)(unsigned char)w[j]) j++;
        if (!w[j] && (i + j >= end || !is_word(PyUnicode_READ(kind, data, i + j)))) return 1;
    }
    return 0;
}

PyDoc_STRVAR(code_lines_doc, "code_lines(text) -> lines that look like code, `text` split at \"\\n\" only (the "
                             "caller keeps texts with other line breaks).");

static PyObject *code_lines(PyObject *self, PyObject *args) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    Py_ssize_t found = 0, start = 0;
    while (start <= len) {
        Py_ssize_t end = start;
        while (end < len && PyUnicode_READ(kind, data, end) != '\n') end++;
        found += code_line(kind, data, start, end);
        start = end + 1;
    }
    return PyLong_FromSsize_t(found);
}

static PyMethodDef methods[] = {
    {"ngram_scores", ngram_scores, METH_VARARGS, ngram_scores_doc},
    {"finish", finish, METH_VARARGS, finish_doc},
    {"bin_counts", bin_counts, METH_VARARGS, bin_counts_doc},
    {"code_lines", code_lines, METH_VARARGS, code_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_ngram_scores",
    .m_doc = "The classifier's n-gram pass in C (see controllers/_ngram_scores.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__ngram_scores(void) { return PyModule_Create(&module); }
