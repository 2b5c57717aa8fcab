"""Octave/MATLAB export: one function file per quantity, vectorised (``.* ./ .^``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ma_core.outputs import write_text

from ..models import Model
from ..printers import OctavePrinter
from .common import OCTAVE_RESERVED, environment, function_name, prepare, provenance, safe_name, wrap

# Octave functions whose names quantities would take: a function file of that name would shadow them.
OCTAVE_FUNCTIONS = frozenset({"memory"})


def octave_function_name(quantity: str) -> str:
    """The name of the exported function of ``quantity`` (memory -> memory_: Octave's own stays usable)."""
    return safe_name(function_name(quantity), _octave_reserved)


def _octave_reserved(name: str) -> bool:
    return name in OCTAVE_RESERVED or name in OCTAVE_FUNCTIONS


def octave_function(model: Model, *, source: str | None = None) -> tuple[str, str]:
    """(file name, text) of the .m function file of ``model``."""
    function = octave_function_name(model.quantity)
    f = prepare(model, lambda arg: _octave_reserved(arg) or arg == function, "Octave", function)
    printer = OctavePrinter()
    definitions = [(name, printer.doprint(expr)) for name, expr in f.definitions]
    text = environment().get_template("octave_function.m.j2").render(
        f=f, definitions=definitions, body=printer.doprint(f.expr), provenance=provenance(source), wrap=wrap)
    return f"{f.name}.m", text


def export_octave(models: Iterable[Model], directory: str | Path, *, source: str | None = None) -> list[Path]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for model in models:
        name, text = octave_function(model, source=source)
        path = out / name
        write_text(path, text)
        written.append(path)
    return written
