"""What ``ma tools build`` builds: every C part of the SDK by name, in the order they are built.

A new part is one entry here (its builder takes ``force`` and returns the path it built). The builders are
named, not imported, so that the command line can list the parts without loading the build code or the runtime.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Part:
    what: str  # what ``ma tools build`` prints before the path
    builder: str  # "module:function", called with force
    optional: bool = False  # when it cannot be built (no compiler for it), ma tools build says so and goes on


PARTS: dict[str, Part] = {
    "pmpi": Part("PMPI wrapper library", "ma_tools.cparts:build_pmpi"),
    "c": Part("C annotation runtime", "ma_tools.cparts:build_c_runtime"),
    "fortran": Part("Fortran module (use ma)", "ma_tools.fortran:build_fortran", optional=True),
    "valgrind": Part("Valgrind counting tool", "ma_tools.valgrind:build_valgrind_tool"),
}


def builder(name: str) -> Callable[[bool], Path]:
    module, _, function = PARTS[name].builder.partition(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]
