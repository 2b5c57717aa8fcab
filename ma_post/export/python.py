"""Python export: one module of NumPy functions, one per quantity."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ma_core.outputs import write_text

from ..models import Model
from ..printers import NUMPY_MOD_SOURCE, NumpyPrinter
from .common import PYTHON_MODULE_NAMES, PYTHON_RESERVED, environment, printed, provenance, wrap

DEFAULT_MODULE = "ma_models"


def _python_reserved(name: str) -> bool:
    return name in PYTHON_RESERVED or name in PYTHON_MODULE_NAMES


def python_module(models: Iterable[Model], *, source: str | None = None) -> str:
    return environment().get_template("python_module.py.j2").render(
        functions=printed(models, _python_reserved, NumpyPrinter(), "Python"), mod_helper=NUMPY_MOD_SOURCE,
        provenance=provenance(source), wrap=wrap)


def export_python(models: Iterable[Model], directory: str | Path, *, source: str | None = None,
                  module: str = DEFAULT_MODULE) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{module}.py"
    write_text(path, python_module(models, source=source))
    return path
