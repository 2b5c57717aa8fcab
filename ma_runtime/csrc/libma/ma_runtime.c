/*
 * ma_runtime.c -- the C runtime of modeling assertions (libma): site tree, scoped variables, measurement.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * It follows the Python runtime (ma_runtime/mars.py, annotations.py, tree.py) rule for rule, so that
 * both write the same trace for the same annotations:
 *  - every annotation folds into the node keyed by (type, id) below the innermost open one;
 *  - variables use shallow binding: a declaration inside a loop or subroutine is undone when it ends,
 *    one outside every loop/subroutine is global;
 *  - a prediction is the expression evaluated on the variables in scope, cached until a variable changes;
 *  - PASS/FAIL under the per-type relative tolerance of MA_TOLERANCE (exact when 0).
 * C-specific: an MPI assertion is one call placed before the MPI call(s) it describes (paper, Figure 4);
 * it stays pending until the count-th call of its type (libmapmpi tells us through its watch hook),
 * the next assertion of the same type, the end of the enclosing annotation, or finalisation.
 * The runtime serves one thread (the first that calls it); other threads' calls are counted as an anomaly.
 */
#define _GNU_SOURCE
#define MA_NO_SOURCE_LOCATION /* define the real functions, not the location-passing macros */
#include "ma.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ma_internal.h"

#ifdef MA_HAVE_VGCOUNT
#include "ma_vgcount.h"
#endif
#define MA_NO_SOURCE_LOCATION /* the declarations of ma.h, checked against the definitions below */
#include "ma.h"

/* The SDK fence (ma_vgcount.h): every entry into libma, from the program (ma.h brackets its calls already,
 * this covers the plain-named functions, Fortran and -DMA_NO_VG_FENCE builds) or from libmapmpi's hooks, opens
 * it, and it closes when the function returns, whichever return (the cleanup attribute). Fences nest. */
#if defined(MA_HAVE_VGCOUNT) && (defined(__GNUC__) || defined(__clang__))
_Static_assert(MA__VG_SDK_ENTER_CODE == MA_VG_REQ_SDK_ENTER && MA__VG_SDK_LEAVE_CODE == MA_VG_REQ_SDK_LEAVE,
               "ma.h and ma_vgcount.h disagree on the fence's request codes");
static inline void fence_close(int *unused)
{
    (void)unused;
    MA_VG_SDK_LEAVE();
}
#define FENCE_THIS_CALL() \
    int fence_ __attribute__((cleanup(fence_close), unused)) = __extension__({ MA_VG_SDK_ENTER(); 0; })
#else
#define FENCE_THIS_CALL() ((void)0)
#endif

/* ---- types ------------------------------------------------------------------------------------ */
static const char *const STRUCTURE_TYPES[] = {"root", "subroutine", "loop", "flop", "loadstore",
                                              "heap_memory", "stack_memory", "variable", "assign"};
#define N_STRUCTURE_TYPES (sizeof STRUCTURE_TYPES / sizeof *STRUCTURE_TYPES)
static const char *const MPI_TYPE_NAMES[MA_PMPI_NGROUPS - 1] = {
    "mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast", "mpi_reduce",
    "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather", "mpi_alltoall", "mpi_barrier"};

/* The static spelling of a type name (so nodes compare types by pointer), or NULL. */
static const char *canonical_type(const char *type)
{
    if (!type)
        return NULL;
    for (size_t i = 0; i < N_STRUCTURE_TYPES; i++)
        if (strcmp(STRUCTURE_TYPES[i], type) == 0)
            return STRUCTURE_TYPES[i];
    for (int g = 0; g < MA_PMPI_NGROUPS - 1; g++)
        if (strcmp(MPI_TYPE_NAMES[g], type) == 0)
            return MPI_TYPE_NAMES[g];
    return NULL;
}

static int kind_of_type(const char *type)
{
    for (int k = 0; k < MA_N_KINDS; k++)
        if (strcmp(ma_kind_names[k], type) == 0)
            return k;
    return -1;
}

/* ---- state ------------------------------------------------------------------------------------ */
typedef struct frame {
    ma_node *node;
    const char *type;
    int scope;          /* loop or subroutine: its declarations are undone at its end */
    size_t undo_base;
    int has_pred;
    ma_num pred;
    int kind;           /* counter kind measured, or -1 */
    ma_reader reader;
    long long m0;
    uint64_t t0, c0;
    int has_cache0;     /* the cache simulation's totals at the start (flop and loadstore sites under --cache) */
    unsigned long long cache0[MA_CACHE_VALUES];
    uint64_t iterations; /* a loop: its ma_loop_next calls so far (the iteration is iterations - 1) */
} frame;

typedef struct undo_entry {
    ma_var *var;
    int had;
    ma_num old;
} undo_entry;

typedef struct pending_mpi {
    int active;
    ma_node *node;
    size_t depth; /* stack depth when it was asserted */
    uint64_t calls0, bytes0;
    int has_pred;
    ma_num pred, pcount;
    long long want; /* calls after which it closes itself; 0: only by the other rules */
    uint64_t t0, c0;
    int has_peer; /* ma_mpi_peer named the partner: check every call's at the close */
} pending_mpi;

typedef struct cached_expr {
    char *text;
    ma_expr *expr;
    char *error;
    struct cached_expr *next;
} cached_expr;

#define VAR_BUCKETS 256
#define EXPR_BUCKETS 256

struct ma_runtime_state {
    ma_settings settings;
    ma_counters counters;
    pthread_t main_thread;
    int enabled, finished, writing;
    double start_time;
    int rank, size;
    ma_node *root, *current;
    frame *stack;
    size_t depth, stack_cap;
    undo_entry *undo;
    size_t n_undo, undo_cap;
    ma_var *vars[VAR_BUCKETS];
    uint64_t env_version;
    cached_expr *exprs[EXPR_BUCKETS];
    ma_varrec *variables, *variables_tail;
    ma_anomaly *anomalies, *anomalies_tail;
    pending_mpi pending[MA_PMPI_NGROUPS];
    int last_mpi_group; /* group of the latest MPI assertion + 1 (0: none), for ma_mpi_peer */
    ma_var *iter_var;   /* `iter`: bound to the innermost counting loop's iteration at every evaluation ... */
    int iter_declared;  /* ... unless the program declared a variable of that name */
    uint32_t watch;
    uint64_t flush_interval_ns, flush_deadline;
    uint64_t foreign_calls; /* annotation calls from other threads, ignored */
    int write_failed;
    const char *mpi_unmeasured; /* why MPI calls bypass libmapmpi (its assertions are then unmeasured), or NULL */
};

static ma_runtime_state *rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static int rt_disabled; /* MA_DISABLE=1 in the environment */

/* ---- small helpers ---------------------------------------------------------------------------- */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double ma_wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static unsigned hash_text(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void fail_memory(void)
{
    fputs("libma: out of memory\n", stderr);
    abort();
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        fail_memory();
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        fail_memory();
    return p;
}

/* Python's repr of a string, as used in the Python runtime's messages. */
static const char *quoted(const char *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "'%s'", s ? s : "");
    return buf;
}

/* ---- statistics ------------------------------------------------------------------------------- */
void ma_stats_add(ma_stats *s, ma_num x)
{
    if (s->n == 0) {
        s->min = s->max = x;
        s->sum = x;
    } else {
        if (ma_num_cmp(x, s->min) < 0)
            s->min = x;
        else if (ma_num_cmp(x, s->max) > 0)
            s->max = x;
        s->sum = ma_num_add(s->sum, x);
    }
    s->n++;
}

static int close_enough(ma_num predicted, ma_num measured, double tolerance)
{
    if (tolerance == 0)
        return ma_num_cmp(predicted, measured) == 0;
    double p = ma_num_as_double(predicted), m = ma_num_as_double(measured);
    return fabs(p - m) <= tolerance * fabs(m);
}

static int values_differ(ma_num given, ma_num evaluated)
{
    if (ma_num_cmp(given, evaluated) == 0)
        return 0;
    double g = ma_num_as_double(given), e = ma_num_as_double(evaluated);
    return fabs(g - e) > 1e-9 * fmax(fabs(e), 1.0);
}

/* ---- settings ------------------------------------------------------------------------------- */
static int env_true(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        return 0;
    char word[16];
    size_t n = 0;
    for (; *v && n + 1 < sizeof word; v++)
        if (!isspace((unsigned char)*v))
            word[n++] = (char)tolower((unsigned char)*v);
    word[n] = '\0';
    return !strcmp(word, "1") || !strcmp(word, "true") || !strcmp(word, "yes") || !strcmp(word, "on");
}

static void warn(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("libma: warning: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

/* "0.05", "flop=0.2,loadstore=0.1" or "0.01,flop=0.2" (as ma_runtime/config.py parse_tolerance). */
static void parse_tolerance(ma_settings *s, const char *spec)
{
    s->tolerance = 0.0;
    s->n_by_type = 0;
    if (!spec)
        return;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", spec);
    for (char *save = NULL, *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*part))
            part++;
        if (!*part)
            continue;
        char *eq = strrchr(part, '=');
        char *number = eq ? eq + 1 : part;
        char *end;
        double value = strtod(number, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == number || *end || value < 0) {
            warn("MA_TOLERANCE=%s: %s is not a non-negative number (expected e.g. 0.05 or flop=0.2,loadstore=0.1); "
                 "ignored", spec, number);
            continue;
        }
        if (!eq) {
            s->tolerance = value;
            continue;
        }
        *eq = '\0';
        char *name = part;
        for (char *t = name + strlen(name); t > name && isspace((unsigned char)t[-1]); *--t = '\0')
            ;
        if (s->n_by_type < 32) {
            snprintf(s->by_type_names[s->n_by_type], sizeof s->by_type_names[0], "%s", name);
            s->by_type_values[s->n_by_type++] = value;
        }
    }
}

static double tolerance_for(const ma_settings *s, const char *type)
{
    for (int i = s->n_by_type - 1; i >= 0; i--)
        if (strcmp(s->by_type_names[i], type) == 0)
            return s->by_type_values[i];
    return s->tolerance;
}

static void read_settings(ma_settings *s)
{
    memset(s, 0, sizeof *s);
    const char *dir = getenv("MA_TRACE_DIR");
    if (!dir || !*dir)
        dir = "ma-traces";
    char cwd[2048];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(s->trace_dir, sizeof s->trace_dir, "%s/%s", cwd, dir);
    else
        snprintf(s->trace_dir, sizeof s->trace_dir, "%s", dir);
    parse_tolerance(s, getenv("MA_TOLERANCE"));
    const char *flush = getenv("MA_FLUSH_SECONDS");
    s->flush_seconds = 5.0;
    if (flush && *flush) {
        char *end;
        double value = strtod(flush, &end);
        if (end == flush)
            warn("MA_FLUSH_SECONDS=%s is not a number of seconds; using 5", flush);
        else
            s->flush_seconds = value;
    }
    const char *run_id = getenv("MA_RUN_ID");
    if (run_id && *run_id) {
        s->has_run_id = 1;
        snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
    }
    const char *cpu = getenv("MA_CPU_TIME");
    s->cpu_time = 1;
    if (cpu && *cpu) {
        if (!strcmp(cpu, "all"))
            s->cpu_time = 2;
        else if (!strcmp(cpu, "none"))
            s->cpu_time = 0;
        else if (strcmp(cpu, "subroutines") != 0)
            warn("MA_CPU_TIME=%s: expected subroutines, all or none; using subroutines", cpu);
    }
    const char *counters = getenv("MA_COUNTERS");
    snprintf(s->counters, sizeof s->counters, "%s", counters && *counters ? counters : "auto");
}

/* Rank and size from the launcher's environment, before (or without) MPI (as mars._launcher_rank_size). */
static void launcher_rank_size(int *rank, int *size)
{
    static const char *const pairs[][2] = {{"PMI_RANK", "PMI_SIZE"},
                                           {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                           {"PMIX_RANK", "PMIX_SIZE"},
                                           {"SLURM_PROCID", "SLURM_NTASKS"}};
    *rank = 0;
    *size = 1;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        const char *r = getenv(pairs[i][0]), *s = getenv(pairs[i][1]);
        if (r && *r && strspn(r, "0123456789") == strlen(r)) {
            *rank = atoi(r);
            *size = s && *s && strspn(s, "0123456789") == strlen(s) ? atoi(s) : *rank + 1;
            return;
        }
    }
}

static void refresh_rank(void)
{
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rt->rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &rt->size);
    }
}

/* ---- creation --------------------------------------------------------------------------------- */
static void on_exit_handler(void);

/* Whether the expression text names the identifier `iter` (the iteration of the innermost loop). */
static int names_iter(const char *text)
{
    for (const char *p = text; p && (p = strstr(p, "iter")) != NULL; p += 4) {
        int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[4]) || p[4] == '_';
        if (!before && !after)
            return 1;
    }
    return 0;
}

static ma_node *new_node(ma_node *parent, const char *type, const char *id, const char *expr_text,
                         const char *count_text, const char *file, int line)
{
    ma_node *n = xcalloc(1, sizeof *n);
    n->parent = parent;
    n->type = type;
    n->id = xstrdup(id);
    n->id_len = strlen(n->id);
    if (!parent || !parent->path[0]) {
        n->path = xstrdup(id);
    } else {
        size_t length = strlen(parent->path) + strlen(id) + 2;
        n->path = xcalloc(1, length);
        snprintf(n->path, length, "%s/%s", parent->path, id);
    }
    n->expr_text = dup_or_null(expr_text);
    n->count_text = dup_or_null(count_text);
    n->uses_iter = names_iter(expr_text) || names_iter(count_text);
    n->seen_expr = expr_text;
    n->seen_count = count_text;
    n->file = dup_or_null(file);
    n->line = line;
    if (rt) {
        n->tolerance = tolerance_for(&rt->settings, type);
        n->track_cpu = rt->settings.cpu_time == 2 || (rt->settings.cpu_time == 1 && !strcmp(type, "subroutine"));
    }
    if (parent) {
        if (parent->last_child)
            parent->last_child->next_sibling = n;
        else
            parent->first_child = n;
        parent->last_child = n;
    }
    return n;
}

static void watch_hook(int group);
static void flush_now(const char *status);
static ma_var *intern_var(ma_var **table, const char *name, size_t length);

static void create_runtime(void)
{
    rt_disabled = env_true("MA_DISABLE");
    if (rt_disabled)
        return;
    ma_runtime_state *state = xcalloc(1, sizeof *state);
    read_settings(&state->settings);
    char warning[512];
    ma_counters_open(&state->counters, state->settings.counters, warning, sizeof warning);
    if (warning[0])
        warn("%s", warning);
    state->main_thread = pthread_self();
    state->enabled = 1;
    state->start_time = ma_wall_clock();
    launcher_rank_size(&state->rank, &state->size);
    state->env_version = 1;
    state->iter_var = intern_var(state->vars, "iter", 4);
    state->root = new_node(NULL, "root", "", NULL, NULL, NULL, 0);
    state->root->track_cpu = 1;
    state->current = state->root;
    state->flush_interval_ns =
        state->settings.flush_seconds > 0 ? (uint64_t)(state->settings.flush_seconds * 1e9) : 0;
    state->flush_deadline = state->flush_interval_ns ? mono_ns() + state->flush_interval_ns : UINT64_MAX;
    state->mpi_unmeasured = ma_pmpi_unmeasured_reason();
    if (state->mpi_unmeasured)
        warn("MPI assertions will be unmeasured: %s", state->mpi_unmeasured);
    rt = state;
    refresh_rank();
    atexit(on_exit_handler);
}

/* The runtime for an annotation call on the recording thread, or NULL (disabled, finished, foreign). */
static ma_runtime_state *runtime_for_call(void)
{
    if (!rt) {
        pthread_once(&rt_once, create_runtime);
        if (!rt)
            return NULL;
    }
    if (rt->finished)
        return NULL;
    if (!pthread_equal(pthread_self(), rt->main_thread)) {
        __atomic_fetch_add(&rt->foreign_calls, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return rt;
}

/* ---- anomalies -------------------------------------------------------------------------------- */
static void anomaly(const char *kind, const ma_node *node, const char *file, int line, const char *format, ...)
{
    const char *path = node ? node->path : "";
    ma_anomaly *a = rt->anomalies;
    for (; a; a = a->next)
        if (!strcmp(a->kind, kind) && !strcmp(a->path, path))
            break;
    if (!a) {
        char message[1024];
        va_list args;
        va_start(args, format);
        vsnprintf(message, sizeof message, format, args);
        va_end(args);
        a = xcalloc(1, sizeof *a);
        a->kind = xstrdup(kind);
        a->path = xstrdup(path);
        a->message = xstrdup(message);
        a->file = dup_or_null(node && node->file ? node->file : file);
        a->line = node && node->file ? node->line : line;
        if (rt->anomalies_tail)
            rt->anomalies_tail->next = a;
        else
            rt->anomalies = a;
        rt->anomalies_tail = a;
    }
    a->count++;
}

/* ---- variables and expressions ---------------------------------------------------------------- */
static ma_var *intern_var(ma_var **table, const char *name, size_t length)
{
    unsigned bucket = hash_text(name, length) % VAR_BUCKETS;
    for (ma_var *v = table[bucket]; v; v = v->next)
        if (strlen(v->name) == length && !strncmp(v->name, name, length))
            return v;
    ma_var *v = xcalloc(1, sizeof *v);
    v->name = xcalloc(1, length + 1);
    memcpy(v->name, name, length);
    v->next = table[bucket];
    table[bucket] = v;
    return v;
}

static ma_var *lookup_runtime_var(void *context, const char *name, size_t length)
{
    return intern_var((ma_var **)context, name, length);
}

/* Compiled expression for `text`, parsed once per distinct text; NULL with *error set when it is bad. */
static const ma_expr *compiled(const char *text, const char **error)
{
    unsigned bucket = hash_text(text, strlen(text)) % EXPR_BUCKETS;
    cached_expr *c = rt->exprs[bucket];
    for (; c; c = c->next)
        if (!strcmp(c->text, text))
            break;
    if (!c) {
        char message[1024];
        c = xcalloc(1, sizeof *c);
        c->text = xstrdup(text);
        c->expr = ma_expr_parse(text, lookup_runtime_var, rt->vars, message, sizeof message);
        if (!c->expr)
            c->error = xstrdup(message);
        c->next = rt->exprs[bucket];
        rt->exprs[bucket] = c;
    }
    *error = c->error;
    return c->expr;
}

/* The iteration (from 0) of the innermost open loop, when it counts its iterations (ma_loop_next); else -1. */
static long long current_iteration(void)
{
    for (size_t i = rt->depth; i > 0; i--)
        if (!strcmp(rt->stack[i - 1].type, "loop"))
            return (long long)rt->stack[i - 1].iterations - 1;
    return -1;
}

/* Evaluate `text` in the current scope, `iter` bound to the current iteration unless the program declared it;
 * on failure record an `evaluation` anomaly at `node`. */
static int evaluate(const char *text, const ma_node *node, const char *file, int line, ma_num *out)
{
    const char *error;
    const ma_expr *e = compiled(text, &error);
    char message[1024];
    if (!e) {
        anomaly("evaluation", node, file, line, "%s", error);
        return -1;
    }
    long long iteration = -1;
    if (!rt->iter_declared) {
        iteration = current_iteration();
        rt->iter_var->defined = iteration >= 0;
        rt->iter_var->value = ma_int(iteration);
    }
    if (ma_expr_eval(e, out, message, sizeof message)) {
        if (!rt->iter_declared && iteration < 0 && names_iter(text))
            anomaly("evaluation", node, file, line, "%s; iter is the iteration (from 0) of the innermost open loop "
                    "that counts its iterations (ma_loop_next); none is open here", message);
        else
            anomaly("evaluation", node, file, line, "%s", message);
        return -1;
    }
    return 0;
}

/* The node's prediction (and MPI count), cached until a variable changes (or, in `iter`, the iteration). */
static int predict(ma_node *node, const char *file, int line)
{
    long long iteration = node->uses_iter && !rt->iter_declared ? current_iteration() : 0;
    if (node->cache_version == rt->env_version && node->cache_ok && node->cache_iter == iteration)
        return 0;
    node->cache_iter = iteration;
    node->cache_ok = 0;
    if (evaluate(node->expr_text, node, file, line, &node->cache_value))
        return -1;
    node->cache_count = ma_int(1);
    if (node->count_text && evaluate(node->count_text, node, file, line, &node->cache_count))
        return -1;
    node->cache_version = rt->env_version;
    node->cache_ok = 1;
    return 0;
}

static frame *scope_frame(void)
{
    for (size_t i = rt->depth; i > 0; i--)
        if (rt->stack[i - 1].scope)
            return &rt->stack[i - 1];
    return NULL;
}

static void define(const char *name, ma_num value)
{
    ma_var *v = intern_var(rt->vars, name, strlen(name));
    if (v == rt->iter_var)
        rt->iter_declared = 1; /* the program's own `iter` wins from now on */
    if (scope_frame()) {
        if (rt->n_undo == rt->undo_cap) {
            rt->undo_cap = rt->undo_cap ? 2 * rt->undo_cap : 64;
            rt->undo = realloc(rt->undo, rt->undo_cap * sizeof *rt->undo);
            if (!rt->undo)
                fail_memory();
        }
        rt->undo[rt->n_undo++] = (undo_entry){v, v->defined, v->value};
    }
    v->defined = 1;
    v->value = value;
    rt->env_version++;
}

static void undo_to(size_t base)
{
    if (rt->n_undo == base)
        return;
    while (rt->n_undo > base) {
        undo_entry *u = &rt->undo[--rt->n_undo];
        u->var->defined = u->had;
        u->var->value = u->old;
    }
    rt->env_version++;
}

static int is_identifier(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* ---- nodes ------------------------------------------------------------------------------------ */
/* The node (type, id) below the current one, created on first use; NULL for an invalid id. */
static ma_node *child(const char *type, const char *id, const char *expr_text, const char *count_text,
                      int check_count, const char *file, int line)
{
    ma_node *parent = rt->current;
    if (!id || !*id || strchr(id, '/')) {
        anomaly("invalid", parent, file, line, "a site id must be a non-empty string without '/', not '%s' (%s "
                "ignored)", id ? id : "(null)", type);
        return NULL;
    }
    ma_node *n = parent->first_child;
    for (; n; n = n->next_sibling)
        if (n->type == type && (n->id == id || !strcmp(n->id, id)))
            break;
    if (!n)
        return new_node(parent, type, id, expr_text, count_text, file, line);
    if (expr_text != n->seen_expr) {
        if (same_text(expr_text, n->expr_text)) {
            n->seen_expr = expr_text;
        } else {
            char was[512], now[512];
            anomaly("expression_changed", n, file, line, "%s '%s' was first asserted as %s, now %s; the first "
                    "expression is kept", type, id, quoted(n->expr_text, was, sizeof was),
                    quoted(expr_text, now, sizeof now));
        }
    }
    if (check_count && count_text != n->seen_count) {
        if (same_text(count_text, n->count_text)) {
            n->seen_count = count_text;
        } else {
            char was[512], now[512];
            anomaly("expression_changed", n, file, line, "%s '%s' was first asserted with count %s, now %s; the "
                    "first count expression is kept in the trace (predictions use the count passed)", type, id,
                    quoted(n->count_text, was, sizeof was), quoted(count_text, now, sizeof now));
        }
    }
    return n;
}

static void set_first_fail(ma_node *n, ma_num predicted, ma_num measured)
{
    if (n->has_first_fail)
        return;
    n->has_first_fail = 1;
    n->first_fail_call = n->calls;
    n->first_fail_predicted = predicted;
    n->first_fail_measured = measured;
}

/* Fold one call (tree.py Node.record). A call whose prediction failed to evaluate counts as unmeasured. */
static void record(ma_node *n, int has_pred, ma_num pred, int has_meas, ma_num meas)
{
    if (has_pred)
        ma_stats_add(&n->predicted, pred);
    if (!has_meas) {
        n->unmeasured++;
        return;
    }
    ma_stats_add(&n->measured, meas);
    if (!has_pred) {
        n->unmeasured++;
        return;
    }
    if (close_enough(pred, meas, n->tolerance)) {
        n->pass++;
    } else {
        n->fail++;
        set_first_fail(n, pred, meas);
    }
}

/* Fold one MPI assertion (tree.py Node.record_mpi): bytes per message and number of calls must both pass. */
static void record_mpi(ma_node *n, int has_pred, ma_num size, ma_num count, uint64_t calls, uint64_t bytes)
{
    if (calls == 0 && ma_num_cmp(count, ma_int(0)) == 0)
        size = ma_int(0); /* no message asserted, none made: nothing to compare the size with */
    ma_stats_add(&n->count_predicted, count);
    ma_num measured_calls = ma_int((long long)calls);
    ma_stats_add(&n->count_measured, measured_calls);
    ma_num measured_size = calls ? ma_num_div(ma_int((long long)bytes), measured_calls) : ma_int(0);
    int had_fail = n->has_first_fail;
    uint64_t passed_before = n->pass;
    record(n, has_pred, size, 1, measured_size);
    if (!close_enough(count, measured_calls, n->tolerance) && n->pass > passed_before) {
        n->pass--;
        n->fail++;
        set_first_fail(n, size, measured_size);
    }
    if (n->has_first_fail && !had_fail) {
        n->first_fail_has_count = 1;
        n->first_fail_count_predicted = count;
        n->first_fail_count_measured = measured_calls;
    }
}

static void note_value(ma_node *n, ma_num given, ma_num evaluated)
{
    if (!values_differ(given, evaluated))
        return;
    n->mismatch++;
    if (!n->has_first_mismatch) {
        n->has_first_mismatch = 1;
        n->first_mismatch_given = given;
        n->first_mismatch_evaluated = evaluated;
    }
}

static void maybe_flush(uint64_t now)
{
    if (now > rt->flush_deadline && !rt->writing)
        flush_now("running");
}

/* ---- MPI assertions --------------------------------------------------------------------------- */
static void update_watch(void)
{
    ma_pmpi_set_watch(rt->watch, rt->watch ? watch_hook : NULL);
}

/* Compare the partner of the group's calls first..end-1 (libmapmpi's ring) with the node's peer expression. */
static void check_peer(ma_node *n, int group, uint64_t first, uint64_t end)
{
    if (end == first)
        return; /* no call: nothing to judge */
    ma_num expected;
    if (end - first > MA_PMPI_PEER_RING || evaluate(n->peer_text, n, n->file, n->line, &expected)) {
        n->peer_unmeasured++;
        return;
    }
    double want = ma_num_as_double(expected);
    for (uint64_t k = first; k < end; k++) {
        int actual = ma_pmpi_group_peers[group][k % MA_PMPI_PEER_RING];
        if ((double)actual != want) {
            n->peer_fail++;
            if (!n->has_peer_fail) {
                n->has_peer_fail = 1;
                n->peer_fail_call = n->calls;
                n->peer_fail_expected = (long long)want;
                n->peer_fail_actual = actual;
            }
            return;
        }
    }
    n->peer_pass++;
}

static void close_mpi(int group, uint64_t t1)
{
    pending_mpi *p = &rt->pending[group];
    if (!p->active)
        return;
    p->active = 0;
    uint64_t calls, bytes;
    ma_pmpi_read(group, &calls, &bytes);
    ma_node *n = p->node;
    n->calls++;
    n->wall_ns += t1 - p->t0;
    if (n->track_cpu)
        n->cpu_ns += cpu_ns() - p->c0;
    if (rt->mpi_unmeasured) { /* the calls did not all reach libmapmpi: its counts say nothing */
        ma_stats_add(&n->count_predicted, p->pcount);
        record(n, p->has_pred, p->pred, 0, ma_int(0));
        if (p->has_peer)
            n->peer_unmeasured++;
    } else {
        record_mpi(n, p->has_pred, p->pred, p->pcount, calls - p->calls0, bytes - p->bytes0);
        if (p->has_peer)
            check_peer(n, group, p->calls0, calls);
    }
    if (rt->watch & (1u << group)) {
        rt->watch &= ~(1u << group);
        update_watch();
    }
}

/* Close the MPI assertions made while the stack was at least `depth` deep. */
static void close_mpi_from(size_t depth, uint64_t t1)
{
    for (int g = 0; g < MA_PMPI_NGROUPS; g++)
        if (rt->pending[g].active && rt->pending[g].depth >= depth)
            close_mpi(g, t1);
}

/* libmapmpi calls this after each call of a watched group, inside the MPI wrapper. */
static void watch_hook(int group)
{
    FENCE_THIS_CALL();
    if (!rt || rt->finished || !pthread_equal(pthread_self(), rt->main_thread))
        return;
    pending_mpi *p = &rt->pending[group];
    if (!p->active || p->want <= 0)
        return;
    uint64_t calls, bytes;
    ma_pmpi_read(group, &calls, &bytes);
    if (calls - p->calls0 >= (uint64_t)p->want)
        close_mpi(group, mono_ns());
}

/* ---- frames ----------------------------------------------------------------------------------- */
/* Close frame `index` (and, as unbalanced, every frame above it). */
static void finish_frame(size_t index, int has_measured, ma_num measured, uint64_t t1, int unbalanced);

static void close_above(size_t index, uint64_t t1)
{
    while (rt->depth > index + 1) {
        frame *inner = &rt->stack[rt->depth - 1];
        frame *outer = &rt->stack[index];
        anomaly("unbalanced", inner->node, NULL, 0, "%s '%s' was still open when %s '%s' ended", inner->type,
                inner->node->id, outer->type, outer->node->id);
        finish_frame(rt->depth - 1, 0, ma_int(0), t1, 1);
    }
}

static void finish_frame(size_t index, int has_measured, ma_num measured, uint64_t t1, int unbalanced)
{
    close_above(index, t1);
    close_mpi_from(index + 1, t1);
    frame f = rt->stack[index];
    rt->depth = index;
    rt->current = f.node->parent;
    if (f.scope)
        undo_to(f.undo_base);
    ma_node *n = f.node;
    n->calls++;
    n->wall_ns += t1 - f.t0;
    if (n->track_cpu)
        n->cpu_ns += cpu_ns() - f.c0;
    if (!strcmp(f.type, "subroutine"))
        return; /* structure only: asserts nothing */
    if (unbalanced)
        record(n, f.has_pred, f.pred, 0, ma_int(0));
    else
        record(n, f.has_pred, f.pred, has_measured, measured);
}

/* ---- public API ------------------------------------------------------------------------------- */
void ma_init(void)
{
    FENCE_THIS_CALL();
    if (!rt)
        pthread_once(&rt_once, create_runtime);
    if (rt && !rt->finished)
        refresh_rank();
}

static void finish(const char *status, const char *reason)
{
    if (!rt || rt->finished)
        return;
    if (!pthread_equal(pthread_self(), rt->main_thread))
        return;
    uint64_t t1 = mono_ns();
    close_mpi_from(0, t1);
    while (rt->depth) {
        frame *top = &rt->stack[rt->depth - 1];
        if (reason)
            anomaly("unbalanced", top->node, NULL, 0, "%s '%s' was still open at exit (%s: %s)", top->type,
                    top->node->id, status, reason);
        else
            anomaly("unbalanced", top->node, NULL, 0, "%s '%s' was still open at exit", top->type, top->node->id);
        finish_frame(rt->depth - 1, 0, ma_int(0), t1, 1);
    }
    rt->finished = 1; /* before writing: nothing records after this point */
    rt->watch = 0;
    ma_pmpi_set_watch(0, NULL);
    refresh_rank();
    const char *layout = getenv("MA_TRACE_LAYOUT");
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!strcmp(status, "complete") && initialized && !finalized && rt->size > 1
        && !(layout && !strcmp(layout, "per-rank"))) {
        int written = 0; /* the merged trace of the job (docs/trace-format.md), collective: every rank is here */
        ma_trace_merge(rt, status, reason, &written);
        if (written && !(layout && !strcmp(layout, "both"))) {
            char flush[4200];
            snprintf(flush, sizeof flush, "%s/rank-%d.ma.json", rt->settings.trace_dir, rt->rank);
            unlink(flush); /* this rank's periodic flush, superseded */
            return;
        }
    }
    char *text = ma_trace_document(rt, status, reason, 1);
    if (text && ma_trace_write_atomic(rt->settings.trace_dir, rt->rank, text))
        warn("cannot write the trace into %s: %s", rt->settings.trace_dir, strerror(errno));
    free(text);
}

void ma_finalize(void)
{
    FENCE_THIS_CALL();
    if (!rt)
        pthread_once(&rt_once, create_runtime);
    finish("complete", NULL);
}

static void flush_now(const char *status)
{
    rt->writing = 1;
    refresh_rank();
    char *text = ma_trace_document(rt, status, NULL, 0);
    if (text && ma_trace_write_atomic(rt->settings.trace_dir, rt->rank, text) && !rt->write_failed) {
        rt->write_failed = 1;
        warn("cannot write the trace into %s: %s", rt->settings.trace_dir, strerror(errno));
    }
    free(text);
    rt->flush_deadline = rt->flush_interval_ns ? mono_ns() + rt->flush_interval_ns : UINT64_MAX;
    rt->writing = 0;
}

void ma_flush(void)
{
    FENCE_THIS_CALL();
    if (runtime_for_call())
        flush_now("running");
}

static void on_exit_handler(void)
{
    FENCE_THIS_CALL();
    if (!rt || rt->finished)
        return;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized)
        finish("terminated", "exit without MPI_Finalize");
    else
        finish("complete", NULL);
}

void ma_set_tracing(void)
{
    FENCE_THIS_CALL();
    if (runtime_for_call())
        rt->enabled = 1;
}

void ma_unset_tracing(void)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    if (rt->depth) {
        frame *top = &rt->stack[rt->depth - 1];
        anomaly("tracing", top->node, NULL, 0, "tracing switched off while %zu annotation%s open (innermost: %s "
                "'%s'); their ends are ignored until tracing is back on", rt->depth, rt->depth == 1 ? " was" : "s were",
                top->type, top->node->id);
    }
    close_mpi_from(0, mono_ns());
    rt->enabled = 0;
}

static int same_value(ma_num a, ma_num b)
{
    double x = ma_num_as_double(a), y = ma_num_as_double(b);
    return a.is_int && b.is_int ? a.i == b.i : x == y || (isnan(x) && isnan(y));
}

/* A variable declared again in the same scope with another value: both values, both places (the site keeps
 * the first declaration's file and line). */
static void redeclared(const ma_node *n, const ma_varrec *r, ma_num value, const char *file, int line)
{
    char now[64], before[64];
    ma_num_format(value, now, sizeof now);
    ma_num_format(r->last, before, sizeof before);
    anomaly("redeclared", n, file, line, "variable '%s' declared again with value %s at %s:%d; it was %s "
            "(first declared at %s:%d)", r->name, now, file ? file : "?", line, before,
            n->file ? n->file : "?", n->line);
}

static void declare(const char *type, const char *name, const char *expr, int has_value, ma_num value,
                    const char *file, int line)
{
    if (!runtime_for_call())
        return;
    if (!is_identifier(name)) {
        anomaly("invalid", rt->current, file, line, "variable name must be an identifier, not '%s' (ignored)",
                name ? name : "(null)");
        return;
    }
    const char *canonical = canonical_type(type);
    ma_node *n = rt->enabled ? child(canonical, name, expr, NULL, 0, file, line) : NULL;
    ma_num evaluated = value;
    int ok = 1;
    if (expr) {
        ok = evaluate(expr, n ? n : rt->current, file, line, &evaluated) == 0;
        if (!ok && has_value)
            evaluated = value; /* keep the program's value bound, so later expressions still evaluate */
    }
    frame *scope = scope_frame();
    const char *scope_path = scope ? scope->node->path : "";
    if (n) {
        n->calls++;
        if (!expr) {
            ma_stats_add(&n->predicted, evaluated); /* a declared input asserts nothing */
        } else {
            record(n, ok, evaluated, has_value, value);
            if (ok && has_value)
                note_value(n, value, evaluated);
        }
        if (ok || has_value) {
            ma_varrec *r = rt->variables;
            for (; r; r = r->next)
                if (!strcmp(r->name, name) && !strcmp(r->scope, scope_path))
                    break;
            if (!r) {
                r = xcalloc(1, sizeof *r);
                r->name = xstrdup(name);
                r->expr = dup_or_null(expr);
                r->scope = xstrdup(scope_path);
                r->derived = expr != NULL;
                if (rt->variables_tail)
                    rt->variables_tail->next = r;
                else
                    rt->variables = r;
                rt->variables_tail = r;
            }
            else if (r->stats.n && !same_value(r->last, evaluated))
                redeclared(n, r, evaluated, file, line);
            ma_stats_add(&r->stats, evaluated);
            r->last = evaluated;
        }
    }
    if (ok || has_value)
        define(name, evaluated);
}

void ma_def_variable_int_at(const char *name, long long value, const char *file, int line)
{
    FENCE_THIS_CALL();
    declare("variable", name, NULL, 1, ma_int(value), file, line);
}

void ma_def_variable_double_at(const char *name, double value, const char *file, int line)
{
    FENCE_THIS_CALL();
    declare("variable", name, NULL, 1, ma_dbl(value), file, line);
}

void ma_def_variable_assign_int_at(const char *name, const char *expr, long long value, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!expr) {
        if (runtime_for_call())
            anomaly("invalid", rt->current, file, line, "ma_def_variable_assign_int('%s', NULL, ...): the "
                    "expression is missing (ignored)", name ? name : "(null)");
        return;
    }
    declare("assign", name, expr, value != MA_NO_VALUE, ma_int(value), file, line);
}

void ma_start_at(const char *type, const char *id, const char *expr, long long value, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    const char *canonical = canonical_type(type);
    int is_subroutine = canonical && !strcmp(canonical, "subroutine");
    if (!canonical || !strncmp(canonical, "mpi_", 4) || !strcmp(canonical, "root") ||
        !strcmp(canonical, "variable") || !strcmp(canonical, "assign") || (!is_subroutine && !expr)) {
        anomaly("invalid", rt->current, file, line, "%s start of '%s'%s: not an annotation with a start and an "
                "end (ignored)", type ? type : "(null)", id ? id : "(null)", expr || is_subroutine ? "" :
                " without an expression");
        return;
    }
    ma_node *n = child(canonical, id, is_subroutine ? NULL : expr, NULL, 0, file, line);
    if (!n)
        return;
    /* predicted before the frame is pushed: a loop's trip count sees the iteration of the loop around it */
    int has_pred = !is_subroutine && predict(n, file, line) == 0;
    if (rt->depth == rt->stack_cap) {
        rt->stack_cap = rt->stack_cap ? 2 * rt->stack_cap : 32;
        rt->stack = realloc(rt->stack, rt->stack_cap * sizeof *rt->stack);
        if (!rt->stack)
            fail_memory();
    }
    frame *f = &rt->stack[rt->depth++];
    memset(f, 0, sizeof *f);
    f->node = n;
    f->type = canonical;
    f->scope = is_subroutine || !strcmp(canonical, "loop");
    f->undo_base = rt->n_undo;
    f->kind = kind_of_type(canonical);
    if (!is_subroutine) {
        f->has_pred = has_pred;
        f->pred = n->cache_value;
        if (f->has_pred && value != MA_NO_VALUE)
            note_value(n, ma_int(value), f->pred);
    }
    rt->current = n;
    if (n->track_cpu)
        f->c0 = cpu_ns();
    f->t0 = mono_ns();
    if (f->kind >= 0 && (f->reader = rt->counters.readers[f->kind])) {
        if (rt->counters.cache_reader && f->kind <= MA_KIND_LOADSTORE)
            f->has_cache0 = rt->counters.cache_reader(f->cache0) > 0;
        f->m0 = f->reader(); /* last, so that the runtime's own work stays outside the counted region */
    }
}

/* Fold one call's cache counts (`after` minus the frame's start) into its node (the trace's `cache` field). */
static void add_cache_counts(const frame *f, const unsigned long long *after)
{
    ma_node *n = f->node;
    int levels = (int)after[0];
    if (levels < 1 || levels > MA_CACHE_MAX_LEVELS || levels != (int)f->cache0[0])
        return;
    n->cache_calls++;
    n->cache_levels = levels;
    n->cache_accesses += after[1] - f->cache0[1];
    for (int k = 0; k < levels; k++)
        n->cache_hits[k] += after[2 + k] - f->cache0[2 + k];
}

/* The end of an annotation: `id` is `id_len` characters long (a Fortran string needs no NUL; with
 * `fortran_text` its trailing blanks, and anything from a NUL on, are not part of it). */
static void end_annotation(const char *type, const char *id, size_t id_len, int fortran_text, long long measured,
                           const char *file, int line)
{
    FENCE_THIS_CALL();
    /* read the counter first, for the same reason as above (only the recording thread touches the stack) */
    int recording = rt && !rt->finished && pthread_equal(pthread_self(), rt->main_thread);
    frame *top = recording && rt->depth ? &rt->stack[rt->depth - 1] : NULL;
    long long m1 = top && top->reader ? top->reader() : 0;
    unsigned long long cache1[MA_CACHE_VALUES];
    int has_cache1 = top && top->has_cache0 && rt->counters.cache_reader(cache1) > 0;
    uint64_t t1 = mono_ns();
    if (!runtime_for_call() || !rt->enabled)
        return;
    if (fortran_text && id)
        id_len = ma_fortran_length(id, id_len);
    const char *canonical = canonical_type(type);
    size_t index = rt->depth; /* the innermost open annotation of this type and id */
    while (index > 0) {
        const ma_node *open = rt->stack[index - 1].node;
        if (rt->stack[index - 1].type == canonical && id && open->id_len == id_len && !memcmp(open->id, id, id_len))
            break;
        index--;
    }
    if (index == 0) {
        char where[600];
        if (top)
            snprintf(where, sizeof where, "the innermost open annotation is %s '%s'", top->type, top->node->id);
        else
            snprintf(where, sizeof where, "none is open");
        anomaly("mismatched_end", top ? top->node : NULL, file, line, "end of %s '%.*s', which is not open (%s); "
                "ignored", type ? type : "(null)", id ? (int)id_len : 6, id ? id : "(null)", where);
        return;
    }
    frame *f = &rt->stack[index - 1];
    if (f != top) {
        anomaly("mismatched_end", top->node, file, line, "end of %s '%s' while %s '%s' is the innermost open "
                "annotation; the annotations opened after it are closed as unbalanced", f->type, f->node->id,
                top->type, top->node->id);
        if (f->reader)
            m1 = f->reader();
        has_cache1 = f->has_cache0 && rt->counters.cache_reader(cache1) > 0;
    }
    if (has_cache1)
        add_cache_counts(f, cache1);
    int has_measured = 0;
    ma_num value = ma_int(0);
    if (f->kind >= 0) {
        has_measured = f->reader != NULL;
        value = ma_int(m1 - f->m0);
    } else if (!strcmp(f->type, "loop") && measured != MA_NO_VALUE) {
        has_measured = 1;
        value = ma_int(measured);
    } else if (!strcmp(f->type, "loop") && f->iterations > 0) {
        has_measured = 1; /* no count given: the iterations ma_loop_next counted */
        value = ma_int((long long)f->iterations);
    }
    finish_frame(index - 1, has_measured, value, t1, 0);
    maybe_flush(t1);
}

void ma_loop_next_at(const char *id, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    for (size_t i = rt->depth; i > 0; i--) {
        frame *f = &rt->stack[i - 1];
        if (strcmp(f->type, "loop"))
            continue;
        if (!strcmp(f->node->id, id ? id : "")) {
            f->iterations++;
            return;
        }
        anomaly("invalid", f->node, file, line, "ma_loop_next('%s'): the innermost open loop is '%s' (ignored)",
                id ? id : "(null)", f->node->id);
        return;
    }
    anomaly("invalid", rt->current, file, line, "ma_loop_next('%s'): no loop is open (ignored)", id ? id : "(null)");
}

void ma_end_at(const char *type, const char *id, long long measured, const char *file, int line)
{
    end_annotation(type, id, id ? strlen(id) : 0, 0, measured, file, line);
}

void ma_end_fortran(const char *type, const char *id, size_t id_len, long long measured)
{
    end_annotation(type, id, id_len, 1, measured, NULL, 0);
}

int ma_rt_accepting(void) { return runtime_for_call() != NULL; }

int ma_rt_recording(void) { return runtime_for_call() != NULL && rt->enabled; }

/* The decimal text of `value` in `buf` (at least 21 bytes), returned. Not snprintf: on every MPI assertion, and a
 * Fortran program's libquadmath registers printf extensions that send every printf down glibc's slow path. */
static const char *decimal(long long value, char *buf)
{
    char *end = buf + 21, *p = end;
    unsigned long long magnitude = value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value;
    *p = '\0';
    do
        *--p = (char)('0' + magnitude % 10);
    while (magnitude /= 10);
    if (value < 0)
        *--p = '-';
    return p;
}

void ma_mpi_at(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
               long long count, const char *file, int line)
{
    FENCE_THIS_CALL();
    uint64_t t0 = mono_ns();
    if (!runtime_for_call() || !rt->enabled)
        return;
    const char *canonical = canonical_type(type);
    int group = canonical ? ma_pmpi_group_id(canonical) : -1;
    if (group < 0 || group >= MA_PMPI_OTHER || !expr) {
        anomaly("invalid", rt->current, file, line, "ma_mpi('%s', '%s', ...): %s (ignored)", type ? type : "(null)",
                id ? id : "(null)", group < 0 || group >= MA_PMPI_OTHER ? "not an MPI assertion type"
                                                                           : "the expression is missing");
        return;
    }
    close_mpi(group, t0); /* an assertion of the same type ends the previous one */
    char literal[32];
    const char *count_text = count_expr ? count_expr : decimal(count, literal);
    ma_node *n = child(canonical, id, expr, count_text, 1, file, line);
    if (!n)
        return;
    pending_mpi *p = &rt->pending[group];
    memset(p, 0, sizeof *p);
    p->node = n;
    p->depth = rt->depth;
    /* the node evaluates its first count expression; a literal count passed by the program wins */
    p->has_pred = predict(n, file, line) == 0;
    p->pred = n->cache_value;
    p->pcount = count_expr ? n->cache_count : ma_int(count);
    if (count_expr && !p->has_pred)
        p->pcount = ma_int(count);
    if (p->has_pred && value != MA_NO_VALUE)
        note_value(n, ma_int(value), p->pred);
    double want = ma_num_as_double(p->pcount);
    p->want = want >= 1 && want == floor(want) && want < 9e18 ? (long long)want : 0;
    p->active = 1;
    if (n->track_cpu)
        p->c0 = cpu_ns();
    p->t0 = mono_ns();
    ma_pmpi_read(group, &p->calls0, &p->bytes0);
    rt->last_mpi_group = group + 1;
    if (p->want && !(rt->watch & (1u << group))) {
        rt->watch |= 1u << group;
        update_watch();
    }
    maybe_flush(t0);
}

void ma_mpi_peer_at(const char *expr, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    pending_mpi *p = rt->last_mpi_group ? &rt->pending[rt->last_mpi_group - 1] : NULL;
    if (!expr || !p || !p->active) {
        anomaly("invalid", rt->current, file, line, "ma_mpi_peer('%s'): %s (ignored)", expr ? expr : "(null)",
                expr ? "no open MPI assertion to name the partner of" : "the expression is missing");
        return;
    }
    ma_node *n = p->node;
    if (!n->peer_text)
        n->peer_text = strdup(expr);
    else if (strcmp(n->peer_text, expr) != 0)
        anomaly("expression_changed", n, file, line, "the partner of %s '%s' was first asserted as '%s', now '%s'; "
                "the first expression is kept", n->type, n->id, n->peer_text, expr);
    p->has_peer = n->peer_text != NULL;
}

void ma_mpi_peer(const char *expr) { ma_mpi_peer_at(expr, NULL, 0); }

/* ---- the paper's names, as real functions (ma.h maps them to the *_at forms with file and line) ---- */
void ma_def_variable_int(const char *name, long long value) { ma_def_variable_int_at(name, value, NULL, 0); }
void ma_def_variable_double(const char *name, double value) { ma_def_variable_double_at(name, value, NULL, 0); }
void ma_def_variable_assign_int(const char *name, const char *expr, long long value)
{
    ma_def_variable_assign_int_at(name, expr, value, NULL, 0);
}
void ma_loop_start(const char *id, const char *expr, long long value) { ma_start_at("loop", id, expr, value, NULL, 0); }
void ma_loop_end(const char *id, long long iterations) { ma_end_at("loop", id, iterations, NULL, 0); }
void ma_loop_next(const char *id) { ma_loop_next_at(id, NULL, 0); }
void ma_subroutine_start(const char *id) { ma_start_at("subroutine", id, NULL, MA_NO_VALUE, NULL, 0); }
void ma_subroutine_end(const char *id) { ma_end_at("subroutine", id, MA_NO_VALUE, NULL, 0); }
void ma_flop_start(const char *id, const char *expr, long long value) { ma_start_at("flop", id, expr, value, NULL, 0); }
void ma_flop_stop(const char *id) { ma_end_at("flop", id, MA_NO_VALUE, NULL, 0); }
void ma_loadstore_start(const char *id, const char *expr, long long value)
{
    ma_start_at("loadstore", id, expr, value, NULL, 0);
}
void ma_loadstore_stop(const char *id) { ma_end_at("loadstore", id, MA_NO_VALUE, NULL, 0); }
void ma_heap_memory_start(const char *id, const char *expr, long long value)
{
    ma_start_at("heap_memory", id, expr, value, NULL, 0);
}
void ma_heap_memory_stop(const char *id) { ma_end_at("heap_memory", id, MA_NO_VALUE, NULL, 0); }
void ma_stack_memory_start(const char *id, const char *expr, long long value)
{
    ma_start_at("stack_memory", id, expr, value, NULL, 0);
}
void ma_stack_memory_stop(const char *id) { ma_end_at("stack_memory", id, MA_NO_VALUE, NULL, 0); }
void ma_mpi(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
            long long count)
{
    ma_mpi_at(type, id, expr, value, count_expr, count, NULL, 0);
}
#define MPI_FORM(name)                                                                 \
    void ma_##name(const char *id, const char *expr, long long value, long long count) \
    {                                                                                  \
        ma_mpi_at(#name, id, expr, value, NULL, count, NULL, 0);                       \
    }
MPI_FORM(mpi_send)
MPI_FORM(mpi_isend)
MPI_FORM(mpi_recv)
MPI_FORM(mpi_irecv)
MPI_FORM(mpi_sendrecv)
MPI_FORM(mpi_bcast)
MPI_FORM(mpi_reduce)
MPI_FORM(mpi_allreduce)
MPI_FORM(mpi_gather)
MPI_FORM(mpi_scatter)
MPI_FORM(mpi_allgather)
MPI_FORM(mpi_alltoall)
MPI_FORM(mpi_barrier)

/* ---- evaluation utility ----------------------------------------------------------------------- */
int ma_evaluate(const char *expr, const char *bindings, char *out, size_t cap)
{
    ma_var *table[VAR_BUCKETS] = {0};
    int status = -1;
    if (bindings) {
        char *copy = xstrdup(bindings);
        for (char *save = NULL, *item = strtok_r(copy, ",;", &save); item; item = strtok_r(NULL, ",;", &save)) {
            char *eq = strchr(item, '=');
            if (!eq) {
                snprintf(out, cap, "binding '%s' is not name=value", item);
                free(copy);
                goto done;
            }
            *eq = '\0';
            char *name = item, *text = eq + 1, *end;
            while (isspace((unsigned char)*name))
                name++;
            for (char *t = name + strlen(name); t > name && isspace((unsigned char)t[-1]); *--t = '\0')
                ;
            while (isspace((unsigned char)*text))
                text++;
            ma_var *v = intern_var(table, name, strlen(name));
            errno = 0;
            long long i = strtoll(text, &end, 10);
            while (isspace((unsigned char)*end))
                end++;
            if (!*end && end != text && errno != ERANGE) {
                v->value = ma_int(i);
            } else {
                double d = strtod(text, &end);
                while (isspace((unsigned char)*end))
                    end++;
                if (end == text || *end) {
                    snprintf(out, cap, "binding '%s': '%s' is not a number", name, text);
                    free(copy);
                    goto done;
                }
                v->value = ma_dbl(d);
            }
            v->defined = 1;
        }
        free(copy);
    }
    ma_expr *e = ma_expr_parse(expr, lookup_runtime_var, table, out, cap);
    if (e) {
        ma_num result;
        if (ma_expr_eval(e, &result, out, cap) == 0) {
            ma_num_format(result, out, cap);
            status = 0;
        }
        ma_expr_free(e);
    }
done:
    for (int b = 0; b < VAR_BUCKETS; b++)
        for (ma_var *v = table[b], *next; v; v = next) {
            next = v->next;
            free(v->name);
            free(v);
        }
    return status;
}

/* ---- accessors for the trace writer ----------------------------------------------------------- */
const ma_settings *ma_rt_settings(const ma_runtime_state *s) { return &s->settings; }
const ma_counters *ma_rt_counters(const ma_runtime_state *s) { return &s->counters; }
const ma_node *ma_rt_root(const ma_runtime_state *s) { return s->root; }
const ma_varrec *ma_rt_variables(const ma_runtime_state *s) { return s->variables; }
const ma_anomaly *ma_rt_anomalies(const ma_runtime_state *s) { return s->anomalies; }
void ma_rt_identity(const ma_runtime_state *s, int *rank, int *size, double *start_time)
{
    *rank = s->rank;
    *size = s->size;
    *start_time = s->start_time;
}
uint64_t ma_rt_foreign_calls(const ma_runtime_state *s) { return s->foreign_calls; }
const char *ma_rt_mpi_unmeasured(const ma_runtime_state *s) { return s->mpi_unmeasured; }

/* ---- hooks into libmapmpi: start inside MPI_Init, write inside MPI_Finalize ------------------- */
static void on_mpi_init(void) { ma_init(); } /* (fenced there) */
static void on_mpi_finalize(void)
{
    FENCE_THIS_CALL();
    if (rt && !rt->finished)
        finish("complete", NULL);
}

__attribute__((constructor)) static void register_hooks(void)
{
    ma_pmpi_on_init(on_mpi_init);
    ma_pmpi_on_finalize(on_mpi_finalize);
}

/* ---- ma_vec_loop (the vector paper's loop assertion; docs/vector-backend.md) ------------------------ */
static ma_vecrec *vec_records, *vec_last;
#define MA_VEC_MAX_OPEN 64
static struct {
    ma_vecrec *rec;
    int measuring;
    unsigned long long before[MA_VEC_N_MEASURED];
} vec_open[MA_VEC_MAX_OPEN];
static int vec_depth;

const ma_vecrec *ma_rt_vector_loops(const ma_runtime_state *s) { (void)s; return vec_records; }

static int vec_read(unsigned long long out[MA_VEC_N_MEASURED])
{
#ifdef MA_HAVE_VGCOUNT
    ma_vg_vec_counts c;
    if (!ma_vg_running() || !ma_vg_vec_read(&c))
        return 0;
    unsigned long long values[MA_VEC_N_MEASURED] = {c.vec_flops, c.scalar_flops, c.vec_fp_insns, c.vec_lanes,
                                                    c.vec_loads, c.vec_stores, c.scalar_loads, c.scalar_stores};
    memcpy(out, values, sizeof values);
    return 1;
#else
    (void)out;
    return 0;
#endif
}

void ma_vec_loop_start_at(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                          long long vflops_value, const char *avl, double avl_value, int mv, const char *file,
                          int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    const char *exprs[3] = {vloadstore, vflops, avl};
    if (!id || !vloadstore || !vflops || !avl || mv < 0 || mv > 3 || vec_depth == MA_VEC_MAX_OPEN) {
        anomaly("invalid", rt->current, file, line, "ma_vec_loop_start('%s', ...): needs an id, three expressions "
                "and an MV score 0..3, nested at most %d deep (ignored)", id ? id : "(null)", MA_VEC_MAX_OPEN);
        return;
    }
    ma_num values[3];
    long long given[2] = {vloadstore_value, vflops_value};
    for (int i = 0; i < 3; i++) {
        if (i < 2 && given[i] != MA_NO_VALUE)
            values[i] = ma_int(given[i]);
        else if (i == 2 && !isnan(avl_value))
            values[i] = ma_dbl(avl_value);
        else if (evaluate(exprs[i], rt->current, file, line, &values[i]))
            return;
    }
    const char *path = rt->current && rt->current->path ? rt->current->path : "";
    ma_vecrec *r = vec_records;
    while (r && (strcmp(r->id, id) || strcmp(r->path, path)))
        r = r->next;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            fail_memory();
        r->id = xstrdup(id);
        r->path = xstrdup(path);
        for (int i = 0; i < 3; i++)
            r->expr[i] = xstrdup(exprs[i]);
        r->file = file ? xstrdup(file) : NULL;
        r->line = line;
        r->depth = rt->depth + 1;
        r->mv = mv;
        if (vec_last)
            vec_last->next = r;
        else
            vec_records = r;
        vec_last = r;
    }
    if (!r->calls)
        memcpy(r->first, values, sizeof values);
    r->calls++;
    for (int i = 0; i < 3; i++)
        r->sum[i] += ma_num_as_double(values[i]);
    vec_open[vec_depth].rec = r;
    vec_open[vec_depth].measuring = vec_read(vec_open[vec_depth].before);
    vec_depth++;
}

void ma_vec_loop_stop_at(const char *id, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    if (!vec_depth || !id || strcmp(vec_open[vec_depth - 1].rec->id, id)) {
        anomaly("unbalanced", rt->current, file, line, "ma_vec_loop_stop('%s') does not close the innermost open "
                "ma_vec_loop (ignored)", id ? id : "(null)");
        return;
    }
    vec_depth--;
    unsigned long long after[MA_VEC_N_MEASURED];
    if (vec_open[vec_depth].measuring && vec_read(after)) {
        ma_vecrec *r = vec_open[vec_depth].rec;
        for (int i = 0; i < MA_VEC_N_MEASURED; i++)
            r->measured[i] += after[i] - vec_open[vec_depth].before[i];
        r->measured_calls++;
    }
}

void ma_vec_loop_gathers_at(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                            long long bytes_value, const char *file, int line)
{
    FENCE_THIS_CALL();
    if (!runtime_for_call() || !rt->enabled)
        return;
    if (!vec_depth || !id || strcmp(vec_open[vec_depth - 1].rec->id, id) || !gathers || !bytes) {
        anomaly("invalid", rt->current, file, line, "ma_vec_loop_gathers('%s', ...): needs two expressions, inside "
                "the innermost open ma_vec_loop of that id (ignored)", id ? id : "(null)");
        return;
    }
    const char *exprs[2] = {gathers, bytes};
    long long given[2] = {gathers_value, bytes_value};
    ma_num values[2];
    for (int i = 0; i < 2; i++) {
        if (given[i] != MA_NO_VALUE)
            values[i] = ma_int(given[i]);
        else if (evaluate(exprs[i], rt->current, file, line, &values[i]))
            return;
    }
    ma_vecrec *r = vec_open[vec_depth - 1].rec;
    if (!r->gather_expr[0]) {
        for (int i = 0; i < 2; i++)
            r->gather_expr[i] = xstrdup(exprs[i]);
        memcpy(r->gather_first, values, sizeof values);
    }
    r->gather_calls++;
    for (int i = 0; i < 2; i++)
        r->gather_sum[i] += ma_num_as_double(values[i]);
}

void ma_vec_loop_gathers(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                         long long bytes_value)
{
    ma_vec_loop_gathers_at(id, gathers, gathers_value, bytes, bytes_value, NULL, 0);
}

void ma_vec_loop_start(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                       long long vflops_value, const char *avl, double avl_value, int mv)
{
    ma_vec_loop_start_at(id, vloadstore, vloadstore_value, vflops, vflops_value, avl, avl_value, mv, NULL, 0);
}

void ma_vec_loop_stop(const char *id) { ma_vec_loop_stop_at(id, NULL, 0); }
