"""Modeling assertions: annotate a program with symbolic expressions of what it does, checked as it runs.

    import ma
    ma.variable("n", n)
    with ma.loop("outer", "n") as lp:
        for i in lp.range(n):
            with ma.flop("axpy", "2*n"):
                y += a * x

Importing ``ma`` is light: it loads no SymPy, no plotting, no MPI. The annotation functions are bound on
first use and the runtime (``ma_runtime``) starts at the first annotation that runs. With ``MA_DISABLE=1``
every annotation is a near-free no-op and nothing is written.
"""

from __future__ import annotations

import os as _os
from typing import Any

from ma_core.disable import annotations_disabled as _annotations_disabled
from ma_core.errors import (
    AnnotationError,
    CounterError,
    ExpressionDomainError,
    ExpressionError,
    LaunchError,
    MAError,
    ModelError,
    SiteNotFoundError,
    ToolBuildError,
    TraceError,
    UndefinedVariableError,
)
from ma_core.expr import Expression, parse_expression
from ma_core.trace_format import MPI_TYPES

__version__ = "0.1.0"

DISABLED = _annotations_disabled(_os.environ)

MPI_ANNOTATIONS = MPI_TYPES

# name -> (module, attribute) of the runtime's implementation, bound on first access. ``ma.flop(...)`` & co.
# are functions that hand out the annotation object of one call (``flop_call``; the class is ``flop``).
_RUNTIME_API = {
    **{name: ("ma_runtime.annotations", f"{name}_call")
       for name in ("loop", "flop", "loadstore", "heap_memory", "stack_memory", *MPI_ANNOTATIONS)},
    "subroutine": ("ma_runtime.api", "subroutine_site"),
    "vec_loop": ("ma_runtime.vector", "vec_loop_call"),
    **{name: ("ma_runtime.api", name)
       for name in ("variable", "assign", "tracing", "no_tracing", "flush", "finalize", "loop_start", "loop_end",
                    "subroutine_start", "subroutine_end", "flop_start", "flop_stop", "loadstore_start",
                    "loadstore_stop")},
}

if DISABLED:
    from ._noop import bindings as _disabled_bindings

    globals().update(_disabled_bindings(MPI_ANNOTATIONS))
else:
    from ma_runtime import bootstrap as _bootstrap

    _bootstrap.install_excepthook()
    _bootstrap.register_merge_at_exit()
    _bootstrap.prepare_mpi_profiling()


def __getattr__(name: str) -> Any:
    """Bind an annotation function on first use (PEP 562), then keep it as a plain module attribute."""
    import importlib

    if name in _RUNTIME_API:
        module, attribute = _RUNTIME_API[name]
        value = getattr(importlib.import_module(module), attribute)
    else:
        raise AttributeError(f"module 'ma' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "MAError", "ExpressionError", "UndefinedVariableError", "ExpressionDomainError", "AnnotationError",
    "CounterError", "LaunchError", "ToolBuildError", "TraceError", "ModelError", "SiteNotFoundError",
    "Expression", "parse_expression", "DISABLED",
    *_RUNTIME_API,
]
