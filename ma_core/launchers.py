"""How an MPI launcher tells each process its rank and the job's size, before MPI starts.

MPICH's Hydra (PMI), Open MPI, PMIx launchers and Slurm's srun set these in every process they start. The
runtime reads them to name its trace before (or without) MPI; ``ma run`` reads them from ``/proc/<pid>/environ``
to find the ranks of its job. The C runtime (ma_runtime/csrc) reads the same pairs in the same order
(tests/test_launch.py checks it).
"""

from __future__ import annotations

from collections.abc import Mapping

# (rank variable, size variable), in the order they are believed
RANK_SIZE_VARIABLES: tuple[tuple[str, str], ...] = (
    ("PMI_RANK", "PMI_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMIX_RANK", "PMIX_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)


def launcher_rank_size(environ: Mapping[str, str]) -> tuple[int, int] | None:
    """(rank, size) from a process's environment; None when no launcher set a rank. A size that is missing
    or not a number is taken as rank + 1 (the least the rank implies)."""
    for rank_name, size_name in RANK_SIZE_VARIABLES:
        rank, size = environ.get(rank_name), environ.get(size_name)
        if rank is not None and rank.isdigit():
            return int(rank), int(size) if size and size.isdigit() else int(rank) + 1
    return None
