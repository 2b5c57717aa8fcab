"""C export: a header and a source file of ``double`` functions (and ``_v`` versions over arrays)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ma_core.outputs import write_text

from ..models import Model
from ..printers import C_MOD_SOURCE, CPrinter
from .common import c_reserved, environment, printed, provenance, wrap

DEFAULT_MODULE = "ma_models"


def c_sources(models: Iterable[Model], *, source: str | None = None, module: str = DEFAULT_MODULE) -> tuple[str, str]:
    """(header text, source text)."""
    functions = printed(models, c_reserved, CPrinter(), "C")
    env = environment()
    stamp = provenance(source)
    guard = module.upper() + "_H"
    header = env.get_template("c_header.h.j2").render(functions=functions, provenance=stamp, guard=guard)
    body = env.get_template("c_source.c.j2").render(functions=functions, provenance=stamp, module=module,
                                                    mod_helper=C_MOD_SOURCE, wrap=wrap)
    return header, body


def export_c(models: Iterable[Model], directory: str | Path, *, source: str | None = None,
             module: str = DEFAULT_MODULE) -> tuple[Path, Path]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    header, body = c_sources(models, source=source, module=module)
    h, c = out / f"{module}.h", out / f"{module}.c"
    write_text(h, header)
    write_text(c, body)
    return h, c
