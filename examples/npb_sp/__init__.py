"""NAS Parallel Benchmarks 3.4 SP, ported to Python + mpi4py (``run`` and ``main`` live in ``sp``).

Importing the package does not initialise MPI; ``sp.run`` imports mpi4py when it is called.
"""

from .classes import CLASSES, ProblemClass, official_op_count
from .layout import Layout, SPSetupError, make_set

__all__ = ["CLASSES", "Layout", "ProblemClass", "SPSetupError", "make_set", "official_op_count"]
