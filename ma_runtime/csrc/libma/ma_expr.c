/*
 * ma_expr.c -- parser and evaluator of assertion expressions for the C runtime.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * A recursive-descent parser for the grammar of ma_core/expr/grammar.lark:
 *     sum     := product (('+' | '-') product)*
 *     product := unary (('*' | '/') unary)*
 *     unary   := '-' unary | '+' unary | power
 *     power   := atom [POW unary]            POW is '^' or '**' (right-associative through unary)
 *     atom    := NUMBER | NAME | NAME '(' sum (',' sum)* ')' | '(' sum ')'
 * and an evaluator following ma_core/expr/compiler.py operation by operation, so that both runtimes predict
 * the same value (and the same int-or-float type) for the same expression and variables.
 */
#include "ma_expr.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* K_CHAIN: a run of + - or * / at one level, args[0] op[1] args[1] op[2] args[2] ... evaluated left to right */
enum node_kind { K_NUM, K_VAR, K_NEG, K_ADD, K_SUB, K_MUL, K_DIV, K_POW, K_CALL, K_CHAIN };
enum func_id { F_CEIL, F_FLOOR, F_LOG, F_LOG2, F_LOG10, F_EXP, F_SQRT, F_ABS, F_MIN, F_MAX, F_MOD, N_FUNCS };

static const struct {
    const char *name;
    int arity; /* -1: two or more */
} functions[N_FUNCS] = {
    {"ceil", 1}, {"floor", 1}, {"log", 1}, {"log2", 1}, {"log10", 1}, {"exp", 1},
    {"sqrt", 1}, {"abs", 1},   {"min", -1}, {"max", -1}, {"mod", 2},
};
#define KNOWN_FUNCTIONS "one of abs, ceil, exp, floor, log, log10, log2, max, min, mod, sqrt"

typedef struct enode {
    int kind;
    int column; /* 1-based; for / and ^ the right operand's, as in the Python parser */
    ma_num num;
    ma_var *var;
    int func;
    int nargs;
    struct enode **args; /* operands: 1 for K_NEG, 2 for K_POW, nargs for K_CALL and K_CHAIN */
    unsigned char *ops;  /* K_CHAIN: ops[i] (K_ADD, K_SUB, K_MUL or K_DIV) combines args[i], i >= 1 */
} enode;

struct ma_expr {
    char *text;
    enode *root;
};

/* ---- numbers -------------------------------------------------------------------------------- */
int ma_num_cmp(ma_num a, ma_num b)
{
    if (a.is_int && b.is_int)
        return (a.i > b.i) - (a.i < b.i);
    /* long double holds every 64-bit integer exactly, so int-vs-float compares exactly as in Python */
    long double x = a.is_int ? (long double)a.i : (long double)a.d;
    long double y = b.is_int ? (long double)b.i : (long double)b.d;
    return (x > y) - (x < y);
}

ma_num ma_num_add(ma_num a, ma_num b)
{
    long long r;
    if (a.is_int && b.is_int && !__builtin_add_overflow(a.i, b.i, &r))
        return ma_int(r);
    return ma_dbl(ma_num_as_double(a) + ma_num_as_double(b));
}

ma_num ma_num_sub(ma_num a, ma_num b)
{
    long long r;
    if (a.is_int && b.is_int && !__builtin_sub_overflow(a.i, b.i, &r))
        return ma_int(r);
    return ma_dbl(ma_num_as_double(a) - ma_num_as_double(b));
}

static ma_num num_mul(ma_num a, ma_num b)
{
    long long r;
    if (a.is_int && b.is_int && !__builtin_mul_overflow(a.i, b.i, &r))
        return ma_int(r);
    return ma_dbl(ma_num_as_double(a) * ma_num_as_double(b));
}

ma_num ma_num_div(ma_num a, ma_num b)
{
    if (a.is_int && b.is_int && b.i != 0 && !(a.i == LLONG_MIN && b.i == -1) && a.i % b.i == 0)
        return ma_int(a.i / b.i);
    return ma_dbl(ma_num_as_double(a) / ma_num_as_double(b));
}

static int decimal_exponent(double x)
{
    char probe[32];
    snprintf(probe, sizeof probe, "%.16e", x);
    const char *e = strchr(probe, 'e');
    return e ? atoi(e + 1) : 0;
}

int ma_num_format(ma_num n, char *buf, size_t cap)
{
    if (n.is_int)
        return snprintf(buf, cap, "%lld", n.i);
    double x = n.d;
    if (isnan(x))
        return snprintf(buf, cap, "NaN");
    if (isinf(x))
        return snprintf(buf, cap, x > 0 ? "Infinity" : "-Infinity");
    char text[64];
    int precision = 1;
    for (; precision < 17; precision++) { /* shortest text that reads back the same double */
        snprintf(text, sizeof text, "%.*g", precision, x);
        if (strtod(text, NULL) == x)
            break;
    }
    int exponent = decimal_exponent(x);
    if (x != 0 && exponent >= -4 && exponent < 16) /* Python's repr switches to exponents outside this */
        snprintf(text, sizeof text, "%.*f", precision - 1 - exponent > 0 ? precision - 1 - exponent : 0, x);
    else
        snprintf(text, sizeof text, "%.*g", precision, x);
    if (!strpbrk(text, ".en"))
        strcat(text, ".0");
    return snprintf(buf, cap, "%s", text);
}

/* ---- errors --------------------------------------------------------------------------------- */
/* Same layout as ma.errors.ExpressionError (quoted_head, pointer_lines): the first HEAD_CHARS characters of
 * the text, the column, message, what was expected, and a window of WINDOW_CHARS either side of the column
 * with a caret under it; control characters show as spaces so that the caret lines up. */
#define HEAD_CHARS 100
#define WINDOW_CHARS 40

/* Python's repr() of the first HEAD_CHARS characters (then "..."), for ASCII text: the same quotes and escapes. */
static void quote_head(const char *text, size_t length, char *out)
{
    size_t shown = length > HEAD_CHARS ? HEAD_CHARS : length;
    int single = 0, dual = 0;
    for (size_t i = 0; i < shown; i++) {
        single |= text[i] == '\'';
        dual |= text[i] == '"';
    }
    char quote = single && !dual ? '"' : '\'';
    size_t n = 0;
    out[n++] = quote;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\\' || c == (unsigned char)quote) {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            out[n++] = '\\';
            out[n++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c < 0x20 || c == 0x7f) {
            n += (size_t)sprintf(out + n, "\\x%02x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    if (length > HEAD_CHARS)
        n += (size_t)sprintf(out + n, "...");
    out[n++] = quote;
    out[n] = '\0';
}

static void report(char *err, size_t errlen, const char *text, int column, const char *expected,
                   const char *format, ...)
{
    if (!err || !errlen)
        return;
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    size_t length = strlen(text);
    char head[4 * HEAD_CHARS + 8];
    quote_head(text, length, head);
    size_t used = (size_t)snprintf(err, errlen, "expression %s", head);
    if (column && used < errlen)
        used += (size_t)snprintf(err + used, errlen - used, " at column %d", column);
    if (used < errlen)
        used += (size_t)snprintf(err + used, errlen - used, ": %s", message);
    if (expected && *expected && used < errlen)
        used += (size_t)snprintf(err + used, errlen - used, " (expected %s)", expected);
    if (!column || used >= errlen)
        return;
    size_t at = (size_t)column - 1;
    size_t start = at > WINDOW_CHARS ? at - WINDOW_CHARS : 0;
    size_t end = at + WINDOW_CHARS < length ? at + WINDOW_CHARS : length;
    char window[2 * WINDOW_CHARS + 1];
    size_t n = 0;
    for (size_t i = start; i < end; i++)
        window[n++] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? ' ' : text[i];
    window[n] = '\0';
    const char *before = start > 0 ? "..." : "";
    snprintf(err + used, errlen - used, "\n    %s%s%s\n    %*s^", before, window, end < length ? "..." : "",
             (int)(strlen(before) + at - start), "");
}

/* ---- tokenizer ------------------------------------------------------------------------------ */
enum token_kind { T_END, T_NUM, T_NAME, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_POW, T_LPAR, T_RPAR, T_COMMA, T_BAD };

typedef struct parser {
    const char *text;
    size_t pos;
    /* current token */
    int kind;
    size_t start, length;
    ma_var_lookup lookup;
    void *context;
    char *err;
    size_t errlen;
    int failed;
    int depth; /* nested constructs open at the current token, at most MA_EXPR_MAX_DEPTH */
} parser;

static int is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void next_token(parser *p)
{
    const char *s = p->text;
    while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r' ||
           s[p->pos] == '\f' || s[p->pos] == '\v')
        p->pos++;
    p->start = p->pos;
    char c = s[p->pos];
    if (!c) {
        p->kind = T_END;
        p->length = 0;
        return;
    }
    if (is_digit(c) || (c == '.' && is_digit(s[p->pos + 1]))) {
        size_t i = p->pos;
        while (is_digit(s[i]))
            i++;
        if (s[i] == '.') {
            i++;
            while (is_digit(s[i]))
                i++;
        }
        if (s[i] == 'e' || s[i] == 'E') {
            size_t j = i + 1;
            if (s[j] == '+' || s[j] == '-')
                j++;
            if (is_digit(s[j])) {
                while (is_digit(s[j]))
                    j++;
                i = j;
            }
        }
        p->kind = T_NUM;
        p->length = i - p->pos;
        p->pos = i;
        return;
    }
    if (is_name_start(c)) {
        size_t i = p->pos;
        while (is_name_start(s[i]) || is_digit(s[i]))
            i++;
        p->kind = T_NAME;
        p->length = i - p->pos;
        p->pos = i;
        return;
    }
    p->length = 1;
    p->pos++;
    switch (c) {
    case '+': p->kind = T_PLUS; return;
    case '-': p->kind = T_MINUS; return;
    case '/': p->kind = T_SLASH; return;
    case '^': p->kind = T_POW; return;
    case '(': p->kind = T_LPAR; return;
    case ')': p->kind = T_RPAR; return;
    case ',': p->kind = T_COMMA; return;
    case '*':
        if (s[p->pos] == '*') {
            p->pos++;
            p->length = 2;
            p->kind = T_POW;
        } else {
            p->kind = T_STAR;
        }
        return;
    default: p->kind = T_BAD; return;
    }
}

static int column_of(const parser *p) { return (int)p->start + 1; }

static void syntax_error(parser *p, const char *expected)
{
    if (p->failed)
        return;
    p->failed = 1;
    if (p->kind == T_END)
        report(p->err, p->errlen, p->text, (int)strlen(p->text) + 1, expected, "unexpected end of expression");
    else if (p->kind == T_BAD) {
        char shown[16];
        quote_head(p->text + p->start, 1, shown);
        report(p->err, p->errlen, p->text, column_of(p), expected, "unexpected character %s", shown);
    }
    else
        report(p->err, p->errlen, p->text, column_of(p), expected, "unexpected '%.*s'", (int)p->length,
               p->text + p->start);
}

/* ---- syntax tree ---------------------------------------------------------------------------- */
static void free_node(enode *n)
{
    if (!n)
        return;
    int count = n->kind == K_CALL || n->kind == K_CHAIN ? n->nargs : n->kind == K_NEG ? 1 : (n->kind >= K_ADD ? 2 : 0);
    for (int i = 0; i < count && n->args; i++)
        free_node(n->args[i]);
    free(n->args);
    free(n->ops);
    free(n);
}

static enode *new_node(parser *p, int kind, int column, int nargs)
{
    enode *n = calloc(1, sizeof *n);
    if (n && nargs) {
        n->args = calloc((size_t)nargs, sizeof *n->args);
        if (!n->args) {
            free(n);
            n = NULL;
        }
    }
    if (!n && !p->failed) {
        p->failed = 1;
        report(p->err, p->errlen, p->text, 0, NULL, "out of memory");
        return NULL;
    }
    if (n) {
        n->kind = kind;
        n->column = column;
        n->nargs = nargs;
    }
    return n;
}

static enode *binary(parser *p, int kind, enode *left, enode *right)
{
    if (!left || !right) {
        free_node(left);
        free_node(right);
        return NULL;
    }
    /* errors of / and ^ point at the right operand, as in ma_core/expr/parser.py */
    enode *n = new_node(p, kind, right->column, 2);
    if (!n) {
        free_node(left);
        free_node(right);
        return NULL;
    }
    n->args[0] = left;
    n->args[1] = right;
    return n;
}

static enode *parse_sum(parser *p);
static enode *parse_unary(parser *p);

#define EXPECT_OPERAND "a number, a name or '('"

/* Open one nested construct at `column`; 0 when that goes past MA_EXPR_MAX_DEPTH (error reported). */
static int enter(parser *p, int column)
{
    if (++p->depth <= MA_EXPR_MAX_DEPTH)
        return 1;
    p->failed = 1;
    report(p->err, p->errlen, p->text, column, NULL,
           "nested too deeply (more than %d levels of parentheses, function calls, signs and exponents)",
           MA_EXPR_MAX_DEPTH);
    return 0;
}

static void leave(parser *p) { p->depth--; }

static enode *parse_call(parser *p, const char *name, size_t length, int column)
{
    int func = -1;
    for (int f = 0; f < N_FUNCS; f++)
        if (strlen(functions[f].name) == length && strncmp(functions[f].name, name, length) == 0)
            func = f;
    if (func < 0) {
        p->failed = 1;
        report(p->err, p->errlen, p->text, column, KNOWN_FUNCTIONS, "unknown function '%.*s'", (int)length, name);
        return NULL;
    }
    if (!enter(p, column))
        return NULL;
    enode *args[64];
    int nargs = 0;
    next_token(p); /* past '(' */
    for (;;) {
        enode *arg = parse_sum(p);
        if (!arg)
            goto fail;
        if (nargs == 64) {
            free_node(arg);
            p->failed = 1;
            report(p->err, p->errlen, p->text, column, NULL, "too many arguments");
            goto fail;
        }
        args[nargs++] = arg;
        if (p->kind == T_COMMA) {
            next_token(p);
            continue;
        }
        if (p->kind == T_RPAR) {
            next_token(p);
            break;
        }
        syntax_error(p, "',' or ')' or an operator");
        goto fail;
    }
    leave(p);
    int arity = functions[func].arity;
    if (arity < 0 && nargs < 2) {
        p->failed = 1;
        report(p->err, p->errlen, p->text, column, NULL, "%s() takes two or more arguments, got %d",
               functions[func].name, nargs);
        goto fail;
    }
    if (arity >= 0 && nargs != arity) {
        p->failed = 1;
        report(p->err, p->errlen, p->text, column, NULL, "%s() takes %d argument%s, got %d", functions[func].name,
               arity, arity == 1 ? "" : "s", nargs);
        goto fail;
    }
    enode *n = new_node(p, K_CALL, column, nargs);
    if (!n)
        goto fail;
    n->func = func;
    memcpy(n->args, args, (size_t)nargs * sizeof *args);
    return n;
fail:
    for (int i = 0; i < nargs; i++)
        free_node(args[i]);
    return NULL;
}

static enode *parse_atom(parser *p)
{
    int column = column_of(p);
    if (p->kind == T_NUM) {
        const char *start = p->text + p->start;
        size_t length = p->length;
        int all_digits = 1;
        for (size_t i = 0; i < length; i++)
            all_digits &= is_digit(start[i]);
        char *literal = malloc(length + 1); /* the token alone: strtod must not read past it (0x...) */
        enode *n = literal ? new_node(p, K_NUM, column, 0) : NULL;
        if (!n) {
            free(literal);
            if (!p->failed) {
                p->failed = 1;
                report(p->err, p->errlen, p->text, 0, NULL, "out of memory");
            }
            return NULL;
        }
        memcpy(literal, start, length);
        literal[length] = '\0';
        errno = 0;
        long long value = all_digits ? strtoll(literal, NULL, 10) : 0;
        n->num = all_digits && errno != ERANGE ? ma_int(value) : ma_dbl(strtod(literal, NULL));
        free(literal);
        if (!n->num.is_int && !(fabs(n->num.d) <= DBL_MAX)) {
            free_node(n);
            p->failed = 1;
            report(p->err, p->errlen, p->text, column, NULL, "number too large (the largest allowed is %.17g)",
                   DBL_MAX);
            return NULL;
        }
        next_token(p);
        return n;
    }
    if (p->kind == T_NAME) {
        const char *name = p->text + p->start;
        size_t length = p->length;
        next_token(p);
        if (p->kind == T_LPAR)
            return parse_call(p, name, length, column);
        for (int f = 0; f < N_FUNCS; f++)
            if (strlen(functions[f].name) == length && strncmp(functions[f].name, name, length) == 0) {
                char expected[32];
                snprintf(expected, sizeof expected, "'%s('", functions[f].name);
                p->failed = 1;
                report(p->err, p->errlen, p->text, column, expected, "function '%s' used without arguments",
                       functions[f].name);
                return NULL;
            }
        enode *n = new_node(p, K_VAR, column, 0);
        if (!n)
            return NULL;
        n->var = p->lookup(p->context, name, length);
        if (!n->var) {
            free(n);
            p->failed = 1;
            report(p->err, p->errlen, p->text, column, NULL, "out of memory");
            return NULL;
        }
        return n;
    }
    if (p->kind == T_LPAR) {
        if (!enter(p, column))
            return NULL;
        next_token(p);
        enode *inner = parse_sum(p);
        if (!inner)
            return NULL;
        if (p->kind != T_RPAR) {
            syntax_error(p, "')' or an operator");
            free_node(inner);
            return NULL;
        }
        leave(p);
        next_token(p);
        return inner;
    }
    syntax_error(p, EXPECT_OPERAND);
    return NULL;
}

static enode *parse_power(parser *p)
{
    enode *base = parse_atom(p);
    if (!base || p->kind != T_POW)
        return base;
    if (!enter(p, column_of(p))) { /* the exponent sits one level deeper, opened by the '^' */
        free_node(base);
        return NULL;
    }
    next_token(p);
    enode *exponent = parse_unary(p); /* the exponent may carry its own sign: 2^-1 */
    leave(p);
    return binary(p, K_POW, base, exponent);
}

static enode *parse_unary(parser *p)
{
    if (p->kind == T_MINUS || p->kind == T_PLUS) {
        int negate = p->kind == T_MINUS, column = column_of(p);
        if (!enter(p, column))
            return NULL;
        next_token(p);
        enode *operand = parse_unary(p);
        leave(p);
        if (!operand || !negate)
            return operand;
        enode *n = new_node(p, K_NEG, column, 1);
        if (!n) {
            free_node(operand);
            return NULL;
        }
        n->args[0] = operand;
        return n;
    }
    return parse_power(p);
}

/* A run `operand (op operand)*` of one precedence level as one K_CHAIN node (or the operand alone). */
static enode *parse_chain(parser *p, enode *(*operand)(parser *), int op1, int kind1, int op2, int kind2)
{
    enode *first = operand(p);
    if (!first || (p->kind != op1 && p->kind != op2))
        return first;
    int count = 1, cap = 4;
    enode **args = malloc((size_t)cap * sizeof *args);
    unsigned char *ops = malloc((size_t)cap);
    if (!args || !ops) {
        free(args);
        free(ops);
        args = NULL;
        ops = NULL;
        goto out_of_memory;
    }
    args[0] = first;
    ops[0] = 0;
    while (p->kind == op1 || p->kind == op2) {
        int kind = p->kind == op1 ? kind1 : kind2;
        next_token(p);
        enode *next = operand(p);
        if (!next)
            goto fail;
        if (count == cap) {
            cap *= 2;
            enode **more_args = realloc(args, (size_t)cap * sizeof *args);
            if (more_args)
                args = more_args;
            unsigned char *more_ops = more_args ? realloc(ops, (size_t)cap) : NULL;
            if (more_ops)
                ops = more_ops;
            if (!more_args || !more_ops) {
                free_node(next);
                goto out_of_memory;
            }
        }
        args[count] = next;
        ops[count++] = (unsigned char)kind;
    }
    enode *n = new_node(p, K_CHAIN, args[count - 1]->column, 0);
    if (!n)
        goto fail;
    n->nargs = count;
    n->args = args;
    n->ops = ops;
    return n;
out_of_memory:
    if (!p->failed) {
        p->failed = 1;
        report(p->err, p->errlen, p->text, 0, NULL, "out of memory");
    }
fail:
    if (args)
        for (int i = 0; i < count; i++)
            free_node(args[i]);
    else
        free_node(first);
    free(args);
    free(ops);
    return NULL;
}

static enode *parse_product(parser *p) { return parse_chain(p, parse_unary, T_STAR, K_MUL, T_SLASH, K_DIV); }

static enode *parse_sum(parser *p) { return parse_chain(p, parse_product, T_PLUS, K_ADD, T_MINUS, K_SUB); }

ma_expr *ma_expr_parse(const char *text, ma_var_lookup lookup, void *context, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!text) {
        report(err, errlen, "(null)", 0, NULL, "an expression must be a string, not NULL");
        return NULL;
    }
    size_t length = strlen(text);
    if (length > MA_EXPR_MAX_LENGTH) {
        report(err, errlen, text, MA_EXPR_MAX_LENGTH + 1, NULL, "expression too long (%zu characters, at most %d)",
               length, MA_EXPR_MAX_LENGTH);
        return NULL;
    }
    parser p = {text, 0, T_END, 0, 0, lookup, context, err, errlen, 0, 0};
    next_token(&p);
    if (p.kind == T_END) {
        report(err, errlen, text, 1, EXPECT_OPERAND, "empty expression");
        return NULL;
    }
    enode *root = parse_sum(&p);
    if (root && p.kind != T_END) {
        syntax_error(&p, "an operator or end of text");
        free_node(root);
        root = NULL;
    }
    if (!root)
        return NULL;
    ma_expr *e = malloc(sizeof *e);
    char *copy = strdup(text);
    if (!e || !copy) {
        free(e);
        free(copy);
        free_node(root);
        report(err, errlen, text, 0, NULL, "out of memory");
        return NULL;
    }
    e->text = copy;
    e->root = root;
    return e;
}

void ma_expr_free(ma_expr *e)
{
    if (!e)
        return;
    free_node(e->root);
    free(e->text);
    free(e);
}

/* ---- evaluation ----------------------------------------------------------------------------- */
typedef struct evaluation {
    const char *text;
    char *err;
    size_t errlen;
} evaluation;

static int domain_error(const evaluation *ev, int column, const char *format, ...)
{
    char message[256];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    report(ev->err, ev->errlen, ev->text, column, NULL, "%s", message);
    return -1;
}

/* Every value stays finite and within DBL_MAX (ma_core/expr/limits.py): integers cannot pass it, doubles can. */
static int out_of_range(const evaluation *ev, int column, const char *name, double value)
{
    char subject[160];
    if (name)
        snprintf(subject, sizeof subject, "variable '%.120s' is", name);
    else
        snprintf(subject, sizeof subject, "result is");
    if (isnan(value))
        return domain_error(ev, column, "%s not a number (NaN)", subject);
    return domain_error(ev, column, "%s too large (magnitude over %.17g)", subject, DBL_MAX);
}

static int checked(const evaluation *ev, int column, ma_num value, ma_num *out)
{
    if (!value.is_int && !(fabs(value.d) <= DBL_MAX))
        return out_of_range(ev, column, NULL, value.d);
    *out = value;
    return 0;
}

static int power(const evaluation *ev, ma_num a, ma_num b, int column, ma_num *out)
{
    if (a.is_int && b.is_int && b.i >= 0) {
        long long result = 1, base = a.i, exponent = b.i;
        int overflow = 0;
        while (exponent && !overflow) {
            if (exponent & 1)
                overflow |= __builtin_mul_overflow(result, base, &result);
            exponent >>= 1;
            if (exponent)
                overflow |= __builtin_mul_overflow(base, base, &base);
        }
        return checked(ev, column, overflow ? ma_dbl(pow((double)a.i, (double)b.i)) : ma_int(result), out);
    }
    double x = ma_num_as_double(a), y = ma_num_as_double(b);
    if (x == 0 && y < 0)
        return domain_error(ev, column, "zero raised to a negative power");
    if (x < 0 && y != floor(y))
        return domain_error(ev, column, "negative number raised to a fractional power");
    return checked(ev, column, ma_dbl(pow(x, y)), out);
}

static int integral(const evaluation *ev, double x, int column, ma_num *out)
{
    if (isnan(x))
        return domain_error(ev, column, "cannot evaluate: cannot convert float NaN to integer");
    if (isinf(x))
        return domain_error(ev, column, "cannot evaluate: cannot convert float infinity to integer");
    *out = fabs(x) < 9.2e18 ? ma_int((long long)x) : ma_dbl(x);
    return 0;
}

static int call(const evaluation *ev, const enode *n, const ma_num *v, ma_num *out)
{
    char shown[64];
    switch (n->func) {
    case F_CEIL:
        if (v[0].is_int) {
            *out = v[0];
            return 0;
        }
        return integral(ev, ceil(v[0].d), n->column, out);
    case F_FLOOR:
        if (v[0].is_int) {
            *out = v[0];
            return 0;
        }
        return integral(ev, floor(v[0].d), n->column, out);
    case F_ABS:
        if (v[0].is_int)
            *out = v[0].i == LLONG_MIN ? ma_dbl(-(double)v[0].i) : ma_int(v[0].i < 0 ? -v[0].i : v[0].i);
        else
            *out = ma_dbl(fabs(v[0].d));
        return 0;
    case F_LOG:
    case F_LOG2:
    case F_LOG10: {
        double x = ma_num_as_double(v[0]);
        if (ma_num_cmp(v[0], ma_int(0)) <= 0) {
            ma_num_format(v[0], shown, sizeof shown);
            return domain_error(ev, n->column, "%s of a non-positive number (%s)", functions[n->func].name, shown);
        }
        *out = ma_dbl(n->func == F_LOG ? log(x) : n->func == F_LOG2 ? log2(x) : log10(x));
        return 0;
    }
    case F_EXP: {
        double r = exp(ma_num_as_double(v[0]));
        if (isinf(r) && isfinite(ma_num_as_double(v[0])))
            return domain_error(ev, n->column, "exp overflows");
        *out = ma_dbl(r);
        return 0;
    }
    case F_SQRT:
        if (ma_num_cmp(v[0], ma_int(0)) < 0) {
            ma_num_format(v[0], shown, sizeof shown);
            return domain_error(ev, n->column, "sqrt of a negative number (%s)", shown);
        }
        if (v[0].is_int) { /* an exact root stays an int, as math.isqrt does in Python */
            long long root = (long long)sqrtl((long double)v[0].i);
            while (root > 0 && (__int128)root * root > v[0].i)
                root--;
            while ((__int128)(root + 1) * (root + 1) <= v[0].i)
                root++;
            if ((__int128)root * root == v[0].i) {
                *out = ma_int(root);
                return 0;
            }
        }
        *out = ma_dbl(sqrt(ma_num_as_double(v[0])));
        return 0;
    case F_MOD: {
        ma_num a = v[0], b = v[1];
        if (ma_num_cmp(b, ma_int(0)) == 0) { /* Octave: mod(x, 0) = x */
            *out = a;
            return 0;
        }
        if (a.is_int && b.is_int) { /* the result takes the sign of b, as Python's % does */
            long long r = b.i == -1 ? 0 : a.i % b.i;
            if (r != 0 && ((r < 0) != (b.i < 0)))
                r += b.i;
            *out = ma_int(r);
            return 0;
        }
        double x = ma_num_as_double(a), y = ma_num_as_double(b), r = fmod(x, y);
        if (r != 0) {
            if ((y < 0) != (r < 0))
                r += y;
        } else {
            r = copysign(0.0, y);
        }
        *out = ma_dbl(r);
        return 0;
    }
    default: { /* min, max: the first extreme argument, as Python's min()/max() return */
        ma_num best = v[0];
        for (int i = 1; i < n->nargs; i++) {
            int c = ma_num_cmp(v[i], best);
            if (n->func == F_MIN ? c < 0 : c > 0)
                best = v[i];
        }
        *out = best;
        return 0;
    }
    }
}

static int eval_node(const evaluation *ev, const enode *n, ma_num *out)
{
    switch (n->kind) {
    case K_NUM:
        *out = n->num;
        return 0;
    case K_VAR:
        if (!n->var->defined) {
            report(ev->err, ev->errlen, ev->text, n->column,
                   "a variable declared with ma_def_variable_int or ma_def_variable_assign_int",
                   "variable '%s' is not defined", n->var->name);
            return -1;
        }
        if (!n->var->value.is_int && !(fabs(n->var->value.d) <= DBL_MAX))
            return out_of_range(ev, n->column, n->var->name, n->var->value.d);
        *out = n->var->value;
        return 0;
    case K_NEG: {
        ma_num x;
        if (eval_node(ev, n->args[0], &x))
            return -1;
        *out = x.is_int && x.i != LLONG_MIN ? ma_int(-x.i) : ma_dbl(-ma_num_as_double(x));
        return 0;
    }
    case K_CALL: {
        ma_num values[64];
        for (int i = 0; i < n->nargs; i++)
            if (eval_node(ev, n->args[i], &values[i]))
                return -1;
        return call(ev, n, values, out);
    }
    case K_CHAIN: { /* a loop, not a recursion: a run of + or * is as long as it likes */
        ma_num value, operand;
        if (eval_node(ev, n->args[0], &value))
            return -1;
        for (int i = 1; i < n->nargs; i++) {
            const enode *right = n->args[i];
            if (eval_node(ev, right, &operand))
                return -1;
            ma_num result;
            switch (n->ops[i]) {
            case K_ADD: result = ma_num_add(value, operand); break;
            case K_SUB: result = ma_num_sub(value, operand); break;
            case K_MUL: result = num_mul(value, operand); break;
            default:
                if (ma_num_cmp(operand, ma_int(0)) == 0)
                    return domain_error(ev, right->column, "division by zero");
                result = ma_num_div(value, operand);
                break;
            }
            if (checked(ev, right->column, result, &value))
                return -1;
        }
        *out = value;
        return 0;
    }
    default: break;
    }
    ma_num a, b; /* K_POW */
    if (eval_node(ev, n->args[0], &a) || eval_node(ev, n->args[1], &b))
        return -1;
    return power(ev, a, b, n->column, out);
}

int ma_expr_eval(const ma_expr *e, ma_num *out, char *err, size_t errlen)
{
    evaluation ev = {e->text, err, errlen};
    return eval_node(&ev, e->root, out);
}

int ma_expr_names(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && (p = strstr(p, name)) != NULL; p += n) {
        int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[n]) || p[n] == '_';
        if (!before && !after)
            return 1;
    }
    return 0;
}
