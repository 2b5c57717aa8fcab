"""Compiles the runtime's hot path (site tree, thread state, annotation objects) with Cython.

The compiled modules come from the same .py sources, typed by the .pxd files beside them; without Cython,
or with MA_PURE_PYTHON=1 at build time, the package installs as plain Python and works the same, slower.
"""

import os

from setuptools import setup

# Every line of machine code an annotation runs is fetched again in situ (bench/annotation_instructions.py
# --in-situ counts them). -fno-plt: calls into libpython go through the GOT, not through PLT stubs, which
# saves lines on every call; docs/performance.md has what other flags do to the count. MA_HOT_CFLAGS
# replaces it.
EXTRA_CFLAGS = os.environ.get("MA_HOT_CFLAGS", "-fno-plt").split()
HOT_MODULES = ["ma_runtime/tree.py", "ma_runtime/threadstate.py", "ma_runtime/annotations.py"]


def extensions() -> list:
    if os.environ.get("MA_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    modules = cythonize(HOT_MODULES, language_level=3, quiet=True,
                        compiler_directives={
                            # plain method descriptors for __enter__/__exit__: the simplest call, and
                            # CyFunctions (binding=True) gain nothing in situ (docs/performance.md)
                            "binding": False, "embedsignature": True,
                            # indices into the PMPI totals come from the runtime, never from a user
                            "boundscheck": False, "wraparound": False, "initializedcheck": False,
                            # types come from the .pxd files; the annotations are for readers
                            "annotation_typing": False})
    for module in modules:
        module.extra_compile_args = list(module.extra_compile_args) + EXTRA_CFLAGS
        module.include_dirs = [*module.include_dirs, "ma_runtime/csrc"]  # ma_vgcount.h: the Valgrind tool's fence
    return modules


setup(ext_modules=extensions())
