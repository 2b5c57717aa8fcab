"""NAS Parallel Benchmarks 3.4 CG, ported to Python + mpi4py (``run`` and ``main`` live in ``cg``).

Importing the package does not initialise MPI; ``cg.run`` imports mpi4py when it is called.
"""

from .classes import CLASSES, ProblemClass, official_op_count
from .grid import CGSetupError, Decomposition, decompose

__all__ = ["CLASSES", "CGSetupError", "Decomposition", "ProblemClass", "decompose", "official_op_count"]
