/* The common path of every annotation, in C: the call that repeats its site's previous call.
 *
 * Between two annotations of a running program its kernels evict the runtime's code from the caches, so
 * every line of machine code an annotation runs is fetched again (bench/annotation_instructions.py
 * --in-situ counts them). Cython's code for the same steps spans about twice the lines: argument
 * parsing, reference and error checks around every field. This file does the common case in a few
 * straight functions and hands everything else, untouched, to the Cython code it replaces:
 *
 * - a factory (ma.flop & co.) whose site keeps a free object from its previous call reuses it;
 * - __enter__ on the main thread, for a site whose node exists with the same class, expression and count,
 *   whose prediction is cached, that tracks no CPU time and has no counter to read;
 * - __exit__ without exception, for the innermost annotation, with nothing to restore: it pops the
 *   annotation, adds the time and, when the call repeats the previous one (same prediction object, same
 *   measured integers), counts its verdict again. Anything else calls annotations.py's complete().
 *
 * The fields are those of annotations.pxd, tree.pxd and threadstate.pxd (public there: Cython writes their
 * structs into annotations.h, tree.h and threadstate.h). The rules are annotations.py's; a change there
 * must be made here too (tests/test_fast_region.py runs the same calls both ways).
 */
#include <Python.h>
#include <string.h>
#include <time.h>

#define CYTHON_EXTERN_C extern /* the three headers below each define __PYX_EXTERN_C otherwise */
#include "tree.h"
#include "threadstate.h"
#include "annotations.h"
#include "fast_region.h"

/* annotations.py's codes (checked at install against the values it passes). */
enum { PLAIN, SUBROUTINE, LOOP, COUNTER, MPI };
enum { NOT_REPORTED = -1, FROM_RANGE = -2 };
enum { NO_VERDICT = 0, PASS = 1 };
enum { LAST_PREDICTED = 1, LAST_COUNTED = 2, LAST_MPI = 3, LAST_MPI_MEASURED = 4 };

typedef struct MaRegionObject Region;
typedef struct MaNodeObject Node;
typedef struct MaThreadStateObject State;

static unsigned long main_thread;
static State *main_state;          /* borrowed: annotations.py's _main_state holds it for good */
static ma_complete_fn slow_complete;
static PyObject *slow_enter, *slow_exit, *empty_tuple, *one;

static inline long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* *slot = value, with the references moved (the old value is released last: it may run arbitrary code). */
static inline void set_field(void *slot, PyObject *value)
{
    PyObject **field = (PyObject **)slot;
    PyObject *old = *field;
    Py_INCREF(value);
    *field = value;
    Py_DECREF(old);
}

/* The state of this thread when the fast path may serve it: the main thread's, once made. */
static inline State *fast_state(void)
{
    return main_state && PyThread_get_thread_ident() == main_thread ? main_state : NULL;
}

/* The node below the current one under `id` (a str, so its hash is cached), or NULL. */
static inline Node *child_of(State *state, PyObject *id)
{
    if (!PyUnicode_CheckExact(id))
        return NULL;
    PyObject *node = PyDict_GetItemWithError(state->current->children, id);
    if (!node && PyErr_Occurred())
        PyErr_Clear(); /* the Cython path raises it again, with its message */
    return (Node *)node;
}

/* Code that only the uncommon calls run stays out of the common path's cache lines. */
#define COLD __attribute__((cold, noinline))
#define RARELY(x) __builtin_expect(!!(x), 0)

/* ---- the factories --------------------------------------------------------------------------------- */
/* m_self of each factory: (class, the Cython factory it stands in front of). */
static PyObject *value_name, *count_name; /* interned: keyword names from code objects are too */

static COLD PyObject *make_slow(PyObject *spec, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return PyObject_Vectorcall(PyTuple_GET_ITEM(spec, 1), args, (size_t)nargs, kwnames);
}

static COLD PyObject *new_region(PyTypeObject *cls)
{
    return cls->tp_new(cls, empty_tuple, NULL);
}

static inline __attribute__((always_inline)) PyObject *
make(int kind, PyObject *spec, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *given[2] = {Py_None, kind == MPI ? one : Py_None}; /* value, count */
    Py_ssize_t most = kind == MPI ? 4 : 3, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (RARELY(nargs < 2 || nargs > most))
        return make_slow(spec, args, nargs, kwnames); /* the Cython factory says what is wrong */
    for (Py_ssize_t i = 2; i < nargs; i++)
        given[i - 2] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        Py_ssize_t slot = name == value_name ? 0 : name == count_name && kind == MPI ? 1 : -1;
        if (RARELY(slot < 0 || 2 + slot < nargs))
            return make_slow(spec, args, nargs, kwnames); /* unknown or repeated: the Cython factory */
        given[slot] = args[nargs + i];
    }

    PyTypeObject *cls = (PyTypeObject *)PyTuple_GET_ITEM(spec, 0);
    State *state = fast_state();
    Node *node = state ? child_of(state, args[0]) : NULL;
    Region *region;
    if (node && Py_TYPE(node->region) == cls && Py_REFCNT(node->region) == 1) {
        region = (Region *)node->region; /* the site's own object, free again */
        Py_INCREF(region);
    } else if (!(region = (Region *)new_region(cls))) {
        return NULL;
    }
    region->kind = kind;
    set_field(&region->id, args[0]);
    set_field(&region->expr, args[1]);
    set_field(&region->value, given[0]);
    set_field(&region->count, given[1]);
    set_field(&region->undo, Py_None);
    region->n = NOT_REPORTED;
    return (PyObject *)region;
}

#define FACTORY(KIND)                                                                                     \
    static PyObject *make_##KIND(PyObject *spec, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                                     \
        return make(KIND, spec, args, nargs, kwnames);                                                    \
    }
FACTORY(LOOP)
FACTORY(COUNTER)
FACTORY(MPI)

/* ---- __enter__ ------------------------------------------------------------------------------------- */
static COLD PyObject *enter_slow(PyObject *self)
{
    return PyObject_CallOneArg(slow_enter, self);
}

static PyObject *fast_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Region *region = (Region *)self;
    State *state = fast_state();
    if (RARELY(!state || !state->enabled))
        return enter_slow(self);
    Node *node = child_of(state, region->id);
    int kind = region->kind;
    if (RARELY(!node || node->owner != (PyObject *)Py_TYPE(self) || node->expr_text != region->expr
               || node->count_raw != region->count || node->track_cpu))
        return enter_slow(self); /* a new site, a changed expression or a timed one */
    if (RARELY(node->expression != Py_None
               && (node->cache_version != state->version || region->value != Py_None)))
        return enter_slow(self); /* the prediction to evaluate again, or a value to check */
    if (RARELY((kind == COUNTER && node->reader != Py_None) || (kind == MPI && !node->totals)))
        return enter_slow(self); /* a counter to read, or MPI totals not known yet */

    if (node->region == Py_None)
        set_field(&node->region, self); /* kept for the site's next call */
    set_field(&region->node, (PyObject *)node);
    set_field(&region->state, (PyObject *)state);
    set_field(&region->outer, state->top);
    set_field(&state->top, self);
    set_field(&state->current, (PyObject *)node);
    if (kind == COUNTER) {
        set_field(&region->reader, Py_None);
    } else if (kind == MPI) {
        region->measured = 1;
        region->calls0 = (long long)node->totals[node->group];
        region->bytes0 = (long long)node->totals[node->group + 1];
    }
    region->t0 = now_ns();
    Py_INCREF(self);
    return self;
}

/* ---- __exit__ -------------------------------------------------------------------------------------- */
static inline void count_verdict(Node *node)
{
    node->pending += 1;
    if (node->verdict == PASS)
        node->passed += 1;
    else
        node->failed += 1;
}

static COLD int complete_slow(Region *region, Node *node)
{
    slow_complete(region, node);
    return PyErr_Occurred() ? -1 : 0;
}

/* Fold the call into `node`: a repeat of the previous call is only counted; anything else is
 * annotations.py's complete(). -1 with an exception set on error. */
static inline int complete(Region *region, Node *node)
{
    int kind = region->kind;
    if (kind == SUBROUTINE)
        return 0;
    PyObject *value = node->expression != Py_None ? node->cache_value : Py_None;
    if (kind == LOOP) {
        long long n = region->n;
        if (n == FROM_RANGE) {
            Py_ssize_t left = PyObject_LengthHint(region->items, 0);
            if (RARELY(left < 0))
                return -1;
            n = region->length - left;
        }
        if (n >= 0 && node->last_kind == LAST_COUNTED && value == node->last_predicted && n == node->last_a
                && node->verdict != NO_VERDICT) {
            count_verdict(node);
            return 0;
        }
    } else if (kind == MPI) {
        if (region->measured && node->last_kind == LAST_MPI_MEASURED && value == node->last_predicted
                && node->cache_count == node->last_count && region->calls0 == node->last_a
                && region->bytes0 == node->last_b && node->verdict != NO_VERDICT) {
            count_verdict(node);
            return 0;
        }
    } else if (node->last_kind == LAST_PREDICTED && value == node->last_predicted) {
        node->pending += 1; /* a plain region, or a counter with no reader: nothing measured */
        node->unmeasured += 1;
        return 0;
    }
    return complete_slow(region, node);
}

static COLD PyObject *exit_slow(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *call[4] = {self, NULL, NULL, NULL};
    Py_ssize_t n = nargs < 3 ? nargs : 3;
    for (Py_ssize_t i = 0; i < n; i++)
        call[1 + i] = args[i];
    return PyObject_Vectorcall(slow_exit, call, (size_t)(1 + n), NULL);
}

/* A flush is due: Region.finish closes the call and writes the trace. */
static COLD PyObject *exit_and_flush(PyObject *self, long long t1)
{
    PyObject *done = PyObject_CallMethod(self, "finish", "OLL", Py_None, t1, 0LL);
    if (!done)
        return NULL;
    Py_DECREF(done);
    Py_RETURN_FALSE;
}

static PyObject *fast_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Region *region = (Region *)self;
    Node *node = region->node;
    if (RARELY((PyObject *)node == Py_None))
        Py_RETURN_FALSE; /* not entered, or already closed */
    State *state = region->state;
    int kind = region->kind;
    if (RARELY(nargs != 3 || args[0] != Py_None || state->top != self || region->undo != Py_None
               || node->track_cpu || (kind == COUNTER && region->reader != Py_None)
               || (kind == MPI && region->measured && !node->totals)))
        return exit_slow(self, args, nargs);
    if (kind == MPI && region->measured) {
        region->calls0 = (long long)node->totals[node->group] - region->calls0;
        region->bytes0 = (long long)node->totals[node->group + 1] - region->bytes0;
    }
    long long t1 = now_ns();
    if (RARELY(t1 > state->flush_deadline))
        return exit_and_flush(self, t1);

    Py_INCREF(node);
    set_field(&state->top, region->outer);
    set_field(&region->outer, Py_None);
    set_field(&region->node, Py_None);
    set_field(&state->current, (PyObject *)node->parent);
    node->calls += 1;
    node->wall_ns += t1 - region->t0;
    int failed = complete(region, node);
    Py_DECREF(node);
    if (RARELY(failed))
        return NULL;
    Py_RETURN_FALSE;
}

/* ---- installation ---------------------------------------------------------------------------------- */
static PyMethodDef enter_def = {"__enter__", (PyCFunction)fast_enter, METH_NOARGS,
                                "Open the annotation (the common case in C, fast_region.c)."};
static PyMethodDef exit_def = {"__exit__", (PyCFunction)(void (*)(void))fast_exit, METH_FASTCALL,
                               "Close the annotation (the common case in C, fast_region.c)."};

static int check_constants(PyObject *constants)
{
    static const long expected[] = {PLAIN, SUBROUTINE, LOOP, COUNTER, MPI, NOT_REPORTED, FROM_RANGE,
                                    NO_VERDICT, PASS, LAST_PREDICTED, LAST_COUNTED, LAST_MPI,
                                    LAST_MPI_MEASURED};
    Py_ssize_t n = (Py_ssize_t)(sizeof expected / sizeof expected[0]);
    if (!PyTuple_Check(constants) || PyTuple_GET_SIZE(constants) != n)
        goto differ;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyLong_AsLong(PyTuple_GET_ITEM(constants, i)) != expected[i])
            goto differ;
    return 0;
differ:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "fast_region.c: annotations.py's kind and verdict codes changed");
    return -1;
}

/* Replace type.name by a method of this file; the Cython method it replaces is returned (new reference). */
static PyObject *take_over(PyTypeObject *type, PyMethodDef *def)
{
    PyObject *old = PyDict_GetItemString(type->tp_dict, def->ml_name);
    Py_XINCREF(old); /* before the dict lets go of it */
    PyObject *descr = old ? PyDescr_NewMethod(type, def) : NULL;
    if (!descr || PyDict_SetItemString(type->tp_dict, def->ml_name, descr) < 0) {
        Py_XDECREF(descr);
        Py_XDECREF(old);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "fast_region.c: %s has no %s", type->tp_name, def->ml_name);
        return NULL;
    }
    Py_DECREF(descr);
    return old;
}

/* The method definition of a factory: the Cython one's name and documentation (kept for good, as the
 * function object refers to it). */
static PyMethodDef *factory_def(PyObject *name, PyObject *slow, long kind)
{
    PyObject *doc = PyObject_GetAttrString(slow, "__doc__");
    const char *name_text = PyUnicode_AsUTF8(name);
    const char *doc_text = doc && PyUnicode_Check(doc) ? PyUnicode_AsUTF8(doc) : NULL;
    PyMethodDef *def = PyMem_Calloc(1, sizeof *def);
    char *name_copy = name_text ? PyMem_Malloc(strlen(name_text) + 1) : NULL;
    char *doc_copy = doc_text ? PyMem_Malloc(strlen(doc_text) + 1) : NULL;
    if (def && name_copy && doc_copy) { /* copied while `doc` still holds its text */
        def->ml_name = strcpy(name_copy, name_text);
        def->ml_doc = strcpy(doc_copy, doc_text);
        def->ml_meth = (PyCFunction)(void (*)(void))(kind == LOOP ? make_LOOP : kind == MPI ? make_MPI : make_COUNTER);
        def->ml_flags = METH_FASTCALL | METH_KEYWORDS;
    } else {
        PyMem_Free(def);
        PyMem_Free(name_copy);
        PyMem_Free(doc_copy);
        def = NULL;
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "fast_region.c: cannot copy the name and documentation of %R", slow);
    }
    Py_XDECREF(doc);
    return def;
}

int ma_fast_install(PyObject *module, PyTypeObject *region_type, unsigned long main_ident,
                    ma_complete_fn complete_fn, PyObject *factories, PyObject *constants)
{
    if (check_constants(constants) < 0)
        return -1;
    main_thread = main_ident;
    slow_complete = complete_fn;
    empty_tuple = PyTuple_New(0);
    one = PyLong_FromLong(1); /* the Cython factories' default count (a cached small int: same object) */
    value_name = PyUnicode_InternFromString("value");
    count_name = PyUnicode_InternFromString("count");
    if (!empty_tuple || !one || !value_name || !count_name || !(slow_enter = take_over(region_type, &enter_def))
            || !(slow_exit = take_over(region_type, &exit_def)))
        return -1;
    PyType_Modified(region_type);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(factories); i++) {
        PyObject *name, *cls, *kind;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(factories, i), "UOO", &name, &cls, &kind))
            return -1;
        PyObject *slow = PyObject_GetAttr(module, name);
        PyObject *spec = slow ? PyTuple_Pack(2, cls, slow) : NULL;
        PyMethodDef *def = spec ? factory_def(name, slow, PyLong_AsLong(kind)) : NULL;
        PyObject *fast = def ? PyCFunction_NewEx(def, spec, NULL) : NULL;
        int failed = !fast || PyObject_SetAttr(module, name, fast) < 0;
        Py_XDECREF(slow);
        Py_XDECREF(spec);
        Py_XDECREF(fast);
        if (failed)
            return -1;
    }
    return 0;
}

void ma_fast_adopt_main_state(State *state)
{
    main_state = state;
}
