"""Post-processing of modeling-assertion traces: load, validate, IR, control-flow model, symbolic models,
evaluation and export (MA paper sections 3.3-3.5, 4.1).

    ts = ma_post.load("ma-traces")             # TraceSet: ranks (and threads) as a dimension
    report = ma_post.validate(ts)              # Figure 8 lines: ma_post.format_lines(report)
    m = ma_post.model(ts, "mpi_bytes")         # SymPy expression in the input parameters
    m.evaluate({"na": 150000, "nprocs": 1024})

Everything loads on first use (numpy for traces, sympy and jinja2 for models), so that importing
ma_post, e.g. from the ma command line, costs nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Model", "ModelBuilder", "Report", "Site", "TraceSet", "TraceWarning", "Variable", "cfg_lines", "evaluate",
           "export_c", "export_octave", "export_python", "format_cfg", "format_ir", "format_line", "format_lines",
           "format_table", "from_traces", "ir_lines", "known_quantities", "load", "message_distribution", "model",
           "to_sympy", "validate"]

_LAZY = {
    "TraceWarning": "reader", "load": "traceset", "from_traces": "traceset", "TraceSet": "traceset",
    "Site": "traceset", "Variable": "traceset", "validate": "validation", "Report": "validation",
    "format_line": "validation", "format_lines": "validation", "format_table": "validation",
    "ir_lines": "ir", "format_ir": "ir", "cfg_lines": "cfg", "format_cfg": "cfg",
    "model": "models", "Model": "models", "ModelBuilder": "models", "known_quantities": "models",
    "evaluate": "evaluation", "message_distribution": "msgdist", "to_sympy": "sympy_expr",
    "export_octave": "export", "export_python": "export", "export_c": "export",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'ma_post' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value  # a later import of a same-named submodule must not shadow it
    return value
