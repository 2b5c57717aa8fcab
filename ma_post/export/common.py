"""What every exporter needs: a model's function name, safe argument names and printable pieces."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import sympy

from ma_core.text import one_line as comment_text  # one comment line, whatever the text holds

from ..models import Model
from ..quantities import describe
from ..sympy_expr import symbol, to_text

TEMPLATES = Path(__file__).resolve().parent

def function_name(quantity: str) -> str:
    """A valid identifier in Octave, Python and C for a quantity (ratios A/B become A_per_B)."""
    name = re.sub(r"\s*/\s*", "_per_", quantity.strip())
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not name or not name[0].isalpha():
        name = "q_" + name
    return name


# Names an argument or a local variable of an exported function must not take: the language's keywords, and the
# names the generated code itself uses (its helpers, the functions and constants the printed bodies call).
OCTAVE_RESERVED = frozenset({
    "__FILE__", "__LINE__", "arguments", "break", "case", "catch", "classdef", "continue", "do", "else", "elseif",
    "end", "end_try_catch", "end_unwind_protect", "endarguments", "endclassdef", "endenumeration", "endevents",
    "endfor", "endfunction", "endif", "endmethods", "endparfor", "endproperties", "endspmd", "endswitch",
    "endwhile", "enumeration", "events", "for", "function", "global", "if", "methods", "otherwise", "parfor",
    "persistent", "properties", "return", "spmd", "switch", "try", "until", "unwind_protect",
    "unwind_protect_cleanup", "while", "r", "log", "log2", "log10", "exp", "sqrt", "abs", "ceil", "floor", "mod",
    "min", "max", "pi", "e", "i", "j", "Inf", "NaN",
})
PYTHON_RESERVED = frozenset(keyword.kwlist) | {"__debug__", "numpy", "_ma_mod", "_shaped", "abs", "float"}
# Python's module-level names of the generated module, which an exported function must not replace.
PYTHON_MODULE_NAMES = frozenset({"numpy", "_ma_mod", "_shaped", "QUANTITIES", "INPUTS"})
_C_MATH = {  # <math.h> (C99, and the POSIX Bessel functions glibc declares) and <stddef.h>
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh", "erf",
    "erfc", "exp", "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "frexp", "hypot",
    "ilogb", "ldexp", "lgamma", "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "lrint", "lround",
    "modf", "nan", "nearbyint", "nextafter", "nexttoward", "pow", "remainder", "remquo", "rint", "round",
    "scalbln", "scalbn", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc", "j0", "j1", "jn", "y0", "y1",
    "yn", "gamma", "signgam", "fpclassify", "isfinite", "isinf", "isnan", "isnormal", "signbit", "isgreater",
    "isgreaterequal", "isless", "islessequal", "islessgreater", "isunordered", "float_t", "double_t",
    "math_errhandling", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "INFINITY", "NAN", "MATH_ERRNO", "MATH_ERREXCEPT",
    "NULL", "offsetof", "size_t", "ptrdiff_t", "wchar_t", "max_align_t",
}
_C_KEYWORDS = {  # C99 to C23, and C++'s (the header is included from C++ too)
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    "_Bool", "_Complex", "_Imaginary", "alignas", "alignof", "bool", "constexpr", "false", "nullptr",
    "static_assert", "thread_local", "true", "typeof", "typeof_unqual", "asm", "catch", "class", "const_cast",
    "delete", "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept",
    "operator", "private", "protected", "public", "reinterpret_cast", "static_cast", "template", "this", "throw",
    "try", "typeid", "typename", "using", "virtual", "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq",
    "or", "or_eq", "xor", "xor_eq", "char8_t", "char16_t", "char32_t", "concept", "consteval", "constinit",
    "co_await", "co_return", "co_yield", "decltype", "requires",
}
C_RESERVED = frozenset(_C_MATH | _C_KEYWORDS | {"ma_mod", "n", "out", "k"})
# Also reserved in C: every name that begins with an underscore and a capital or a second underscore, and the
# prefixes of <math.h>'s macros (M_PI, FP_NAN, ...).
_C_RESERVED_PATTERN = re.compile(r"_[A-Z_]|M_|FP_")
_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_reserved(name: str) -> bool:
    return name in C_RESERVED or _C_RESERVED_PATTERN.match(name) is not None


def safe_name(name: str, reserved: Callable[[str], bool], taken: Iterable[str] = ()) -> str:
    """``name`` as an ASCII identifier that is not reserved (``reserved(name)`` is false) and not in ``taken``:
    every other character becomes ``_``, a leading digit or a reserved prefix gets ``v_`` before it, then
    ``_`` is appended until it is free."""
    taken = set(taken)
    safe = name if _ASCII_IDENTIFIER.fullmatch(name) else re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if safe[0].isdigit() or (reserved(safe) and reserved(safe + "_")):  # reserved as a prefix: M_PI, __x
        safe = "v_" + safe
    while reserved(safe) or safe in taken:
        safe += "_"
    return safe


def c_comment(text: str) -> str:
    """A line of ``comment_text`` for a C block comment: ``*/`` cannot end it, ``/*`` cannot nest (a warning),
    ``??`` cannot start a trigraph."""
    for bad, good in (("*/", "* /"), ("/*", "/ *"), ("??", "?\\?")):
        while bad in text:
            text = text.replace(bad, good)
    return text


def python_docstring(text: str) -> str:
    """A line of ``comment_text`` for a Python triple-quoted docstring: backslashes and quotes escaped, so the
    docstring reads as the line and nothing in it can close it."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass
class Prepared:
    """A model ready to print: names safe in the target language."""

    name: str
    quantity: str
    description: str
    args: list[str]
    definitions: list[tuple[str, sympy.Expr]]
    expr: sympy.Expr
    original_args: list[str]
    definitions_text: list[str]
    model_text: str
    notes: list[str]
    renamed: list[str]  # one line per variable whose name the target language could not take


def prepare(model: Model, reserved: Callable[[str], bool], language: str, name: str | None = None) -> Prepared:
    """``model`` with every variable named safely in ``language``: a name that is ``reserved`` (a keyword, a name
    the generated code uses) or not an ASCII identifier is renamed, and the rename is said in ``renamed``."""
    taken: set[str] = set()
    rename: dict[sympy.Symbol, sympy.Symbol] = {}
    renamed = []
    for original in list(model.inputs) + list(model.definitions):
        safe = safe_name(original, reserved, taken)
        taken.add(safe)
        if safe != original:
            rename[symbol(original)] = sympy.Symbol(safe)
            why = "is reserved" if _ASCII_IDENTIFIER.fullmatch(original) else "is not a name"
            renamed.append(comment_text(f"{safe} is the variable {original} ({original} {why} in {language})"))
    args = [rename.get(symbol(n), symbol(n)).name for n in model.inputs]
    # A rename changes names, not values: the tree is rebuilt unevaluated, node for node. Evaluated, every ceil,
    # floor and Max of the model was decided again (SymPy's assumptions), 8 s for a model of 3,000 sites.
    with sympy.evaluate(False):
        definitions = [(rename.get(symbol(n), symbol(n)).name, d.xreplace(rename))
                       for n, d in model.definitions.items()]
        expr = model.expr.xreplace(rename)
    return Prepared(
        name=name or function_name(model.quantity), quantity=model.quantity,
        description=comment_text(describe(model.quantity)), args=args, definitions=definitions,
        expr=expr, original_args=list(model.inputs),
        definitions_text=[comment_text(f"{n} = {to_text(d)}") for n, d in model.definitions.items()],
        model_text=comment_text(to_text(model.expr)), notes=[str(n) for n in model.notes], renamed=renamed)


def printed(models: Iterable[Model], reserved: Callable[[str], bool], printer: Any, language: str
            ) -> list[SimpleNamespace]:
    """Every model prepared for a template, its definitions and its body printed in the target language.

    The functions of one file are named apart (``a/b`` and ``a_per_b`` would both be ``a_per_b``), and no
    argument takes the name of one of them (the C ``_v`` functions call them by name)."""
    models = list(models)
    names: list[str] = []
    for model in models:
        names.append(safe_name(function_name(model.quantity), reserved, names))

    def argument_reserved(name: str) -> bool:
        return reserved(name) or name in names

    functions = []
    for model, name in zip(models, names, strict=True):
        f = prepare(model, argument_reserved, language, name)
        fields = {**vars(f), "definitions": [(n, printer.doprint(e)) for n, e in f.definitions]}
        functions.append(SimpleNamespace(**fields, body=printer.doprint(f.expr)))
    return functions


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                              autoescape=False)
    # Free text reaches the generated code as one line of comment_text (prepare, provenance) and then through
    # these filters in comments and docstrings; names as safe_name made them; Python string literals by repr.
    env.filters.update(c_comment=c_comment, docstring=python_docstring, py_str=repr)
    return env


def provenance(source: str | None) -> str:
    """Where the models came from, as one printable line (``source`` is a path, whatever bytes it holds)."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return comment_text(f"ma export from {source or 'a trace set'} ({stamp})")


def wrap(text: str, width: int = 96, indent: str = "") -> list[str]:
    """Break a long formula on spaces for comments."""
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_long_words=True) or [""]
