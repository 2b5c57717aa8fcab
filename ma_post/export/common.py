"""What every exporter needs: a model's function name, safe argument names and printable pieces."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import sympy

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


OCTAVE_RESERVED = frozenset({
    "break", "case", "catch", "classdef", "continue", "do", "else", "elseif", "end", "end_try_catch",
    "end_unwind_protect", "endclassdef", "endenumeration", "endevents", "endfor", "endfunction", "endif",
    "endmethods", "endparfor", "endproperties", "endswitch", "endwhile", "enumeration", "events", "for",
    "function", "global", "if", "methods", "otherwise", "parfor", "persistent", "properties", "return",
    "switch", "try", "until", "unwind_protect", "unwind_protect_cleanup", "while", "r", "log", "log2",
    "log10", "exp", "sqrt", "abs", "ceil", "floor", "mod", "min", "max", "pi", "e", "i", "j", "Inf", "NaN",
})
PYTHON_RESERVED = frozenset(keyword.kwlist) | {"numpy", "_ma_mod", "abs", "float"}
C_RESERVED = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    "_Bool", "_Complex", "_Imaginary", "ma_mod", "n", "out", "k", "pow", "fabs", "fmin", "fmax", "fmod",
    "log", "log2", "log10", "exp", "sqrt", "ceil", "floor", "size_t", "NAN", "INFINITY",
})


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


def prepare(model: Model, reserved: Iterable[str]) -> Prepared:
    reserved = set(reserved)
    taken: set[str] = set()
    rename: dict[sympy.Symbol, sympy.Symbol] = {}
    names = list(model.inputs) + list(model.definitions)
    for name in names:
        safe = name
        while safe in reserved or safe in taken:
            safe += "_"
        taken.add(safe)
        if safe != name:
            rename[symbol(name)] = sympy.Symbol(safe)
    args = [rename.get(symbol(n), symbol(n)).name for n in model.inputs]
    definitions = [(rename.get(symbol(n), symbol(n)).name, d.xreplace(rename)) for n, d in model.definitions.items()]
    return Prepared(
        name=function_name(model.quantity), quantity=model.quantity, description=describe(model.quantity),
        args=args, definitions=definitions, expr=model.expr.xreplace(rename), original_args=list(model.inputs),
        definitions_text=[f"{n} = {to_text(d)}" for n, d in model.definitions.items()],
        model_text=to_text(model.expr), notes=[str(n) for n in model.notes])


def printed(models: Iterable[Model], reserved: Iterable[str], printer: Any) -> list[SimpleNamespace]:
    """Every model prepared for a template, its definitions and its body printed in the target language."""
    functions = []
    for model in models:
        f = prepare(model, reserved)
        fields = {**vars(f), "definitions": [(n, printer.doprint(e)) for n, e in f.definitions]}
        functions.append(SimpleNamespace(**fields, body=printer.doprint(f.expr)))
    return functions


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                              autoescape=False)


def provenance(source: str | None) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"ma export from {source or 'a trace set'} ({stamp})"


def wrap(text: str, width: int = 96, indent: str = "") -> list[str]:
    """Break a long formula on spaces for comments."""
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_long_words=True) or [""]
