"""MARS, the runtime of modeling assertions: what runs inside the annotated program.

Its hot path (tree, threadstate, annotations) may be compiled by Cython from the same .py sources
(setup.py). The compiled modules are used only when all of them exist and are newer than their sources;
otherwise — or with MA_PURE_PYTHON=1 — the .py files are imported, so an edited source is never shadowed
by a stale build.
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from importlib.util import spec_from_file_location
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
COMPILED_MODULES = ("tree", "threadstate", "annotations")


def _compiled_state() -> tuple[bool, str]:
    """(use the compiled modules?, why not)."""
    if os.environ.get("MA_PURE_PYTHON"):
        return False, "MA_PURE_PYTHON is set"
    for name in COMPILED_MODULES:
        source = os.path.join(_HERE, f"{name}.py")
        binary = os.path.join(_HERE, f"{name}{EXTENSION_SUFFIXES[0]}")
        if not os.path.exists(binary):
            return False, "not compiled"
        for changed in (source, os.path.join(_HERE, f"{name}.pxd")):  # the .pxd types what the .py compiles to
            if os.path.exists(changed) and os.path.getmtime(binary) < os.path.getmtime(changed):
                return False, (f"{os.path.relpath(changed, _HERE)} changed since it was compiled "
                               "(rebuild: pip install -e .)")
    return True, ""


COMPILED, NOT_COMPILED_REASON = _compiled_state()


class _SourceFinder:
    """Meta-path finder that imports the hot-path modules from their .py files."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != __name__ or name not in COMPILED_MODULES:
            return None
        return spec_from_file_location(fullname, os.path.join(_HERE, f"{name}.py"))


if not COMPILED:
    sys.meta_path.insert(0, _SourceFinder())
    if NOT_COMPILED_REASON.endswith("pip install -e .)"):
        warnings.warn(f"ma_runtime runs uncompiled: {NOT_COMPILED_REASON}", RuntimeWarning, stacklevel=2)
