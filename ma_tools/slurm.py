"""Slurm's ``srun`` as ``ma run``'s launcher: ``--launcher srun``, and the default inside an allocation.

Inside an allocation (a ``salloc`` command or shell, an ``sbatch`` script: ``SLURM_JOB_ID`` is set) ``ma run``
starts the job with ``srun``, on as many ranks as the allocation has tasks (``SLURM_NTASKS``) unless ``-n``
says otherwise.

srun starts the ranks itself, and each rank's MPI finds the others through the PMI server srun runs for
the step, chosen by ``--mpi``. Measured under Slurm 22.05 (Debian 12: ``srun --mpi=list`` offers none,
pmi2, pmix, cray_shasta), two ranks each:

- MPICH (the ``mpich`` wheel 5.0.2, Debian's 4.0.2): ``--mpi=pmi2`` only. With ``none`` both MPICHs, and
  with ``pmix`` Debian's, run every task as a one-process job of its own; with ``pmix`` the wheel's aborts in
  ``MPI_Init`` ("unsupported PMI version PMIx").
- Open MPI (Debian's 4.1.4): ``--mpi=pmix`` only; with ``none`` or ``pmi2`` ``MPI_Init`` fails (it has no
  PMI-2 client).

So ``ma run`` looks up which MPI library the program is linked with (for an interpreter, which one the
PMPI library it preloads is linked with: that one is in every rank) and passes that MPI's ``--mpi``,
unless the launcher words or ``SLURM_MPI_TYPE`` already choose one.

A failed rank: by default srun lets the other tasks run on (an MPI job then hangs in its next collective),
so ``ma run`` passes ``--kill-on-bad-exit=1``: at the first task that fails, Slurm terminates the step
(SIGTERM, SIGKILL after ``KillWait``). srun prints ``srun: error: <node>: task 1: Killed`` when it learns of
the failure, before it asks for the others to be stopped; unlike Hydra's banner, its first such line names
the first task to fail, on every node. ``ma run`` reads those lines from srun's stderr on the way to its
own; its watch of the local processes (runwatch.py) adds PIDs and times.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ma_core import trace_format as tf
from ma_core.errors import LaunchError

from . import runwatch

SRUN = "srun"
# The rank of an sbatch script (the batch step's one task), inherited by whatever it starts.
INHERITED_RANK_VARIABLES = ("SLURM_PROCID",)

# Which --mpi plugin each MPI family needs under srun (the module docstring has the measurements).
PMI_OF_FAMILY = {"mpich": "pmi2", "openmpi": "pmix"}
FAMILY_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}
# The MPI family of a library, by its file name: MPICH's ABI (the wheel, Intel MPI, Cray MPICH: libmpi.so.12),
# Debian's MPICH (libmpich.so.12), Open MPI 3 to 5 (libmpi.so.40).
_LIBRARY_FAMILIES = ((re.compile(r"^libmpi\.so\.40\b"), "openmpi"),
                     (re.compile(r"^(libmpich|libmpi_cray|libmpi)\.so\.12\b"), "mpich"))
_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(\S+)")
# srun's report of failed tasks: "srun: error: node1: task 1: Killed", "... tasks 0,2-3: Exited with exit code 3".
_FAILED_TASKS = re.compile(rb"^srun: error: (\S+): tasks? ([\d,-]+): (.*?)\s*$")
_EXITED = re.compile(r"^Exited with exit code (\d+)$")
_SIGNALS = {signal.strsignal(number) or "": number for number in signal.Signals}


def in_allocation(environ: Mapping[str, str]) -> bool:
    """Whether this process runs inside a Slurm job (a salloc command or shell, an sbatch script)."""
    return bool(environ.get("SLURM_JOB_ID"))


def allocation_tasks(environ: Mapping[str, str]) -> int | None:
    """The number of tasks of the allocation (salloc/sbatch -n), None when it did not ask for a number."""
    for name in ("SLURM_NTASKS", "SLURM_NPROCS"):
        value = environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def is_srun(words: Sequence[str]) -> bool:
    return bool(words) and Path(words[0]).name == SRUN


def library_family(name: str) -> str | None:
    """``mpich`` or ``openmpi`` for an MPI library's file name, None for anything else."""
    return next((family for pattern, family in _LIBRARY_FAMILIES if pattern.match(name)), None)


def linked_mpi(binary: Path) -> tuple[str, Path] | None:
    """The MPI family and library an ELF file is linked with (ldd), None when it is linked with none."""
    try:
        with binary.open("rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return None
        done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in done.stdout.splitlines():
        match = _LDD_LINE.match(line)
        if match and (family := library_family(match.group(1))) is not None:
            return family, Path(match.group(2))
    return None


def program_mpi(command: Sequence[str], preload: Sequence[str], path: str | None) -> tuple[str, Path] | None:
    """The MPI the ranks will run on: the program's own (a compiled program), else that of the first preloaded
    library linked with one (the PMPI library, in an interpreter such as Python)."""
    program = shutil.which(command[0], path=path) if command else None
    candidates = [Path(program)] if program else []
    candidates += [Path(library) for library in preload]
    for candidate in candidates:
        found = linked_mpi(candidate)
        if found is not None:
            return found
    return None


def offered_plugins(srun: str) -> list[str]:
    """The --mpi plugins this Slurm has (``srun --mpi=list``)."""
    try:
        done = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise LaunchError(f"cannot start {srun!r}: no such program (is Slurm's client installed?)") from None
    except (OSError, subprocess.SubprocessError) as error:
        raise LaunchError(f"`{srun} --mpi=list` failed: {error}") from None
    if done.returncode != 0:  # e.g. no slurm.conf: srun could not start a job either
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise LaunchError(f"`{srun} --mpi=list` failed: {said}")
    # "MPI plugin types are...", then one plugin a line, indented; then "specific pmix plugin versions ...".
    return [line.strip() for line in (done.stdout + done.stderr).splitlines() if line[:1] in (" ", "\t")]


def _has_option(words: Sequence[str], *names: str) -> bool:
    return any(word == name or word.startswith(name + "=") for word in words for name in names)


def srun_options(words: Sequence[str], command: Sequence[str], env: Mapping[str, str],
                 environ: Mapping[str, str], notes: list[str]) -> list[str]:
    """The options ``ma run`` adds to ``srun -n N`` (``words``: the launcher as the user gave it; ``env``: what
    ma run adds to ``environ`` for the job). Raises LaunchError when the program's MPI cannot run under this
    srun; appends to ``notes`` what the user should know."""
    options = []
    if not (_has_option(words, "--mpi") or environ.get("SLURM_MPI_TYPE")):
        preload = env.get("LD_PRELOAD", "").split()
        found = program_mpi(command, preload, env.get("PATH"))
        if found is None:
            notes.append(f"could not tell which MPI {command[0]!r} runs on, so srun uses its default --mpi (the "
                         "site's MpiDefault): MPICH needs --mpi=pmi2, Open MPI --mpi=pmix (--launcher 'srun --mpi=..')")
        else:
            family, library = found
            plugin = PMI_OF_FAMILY[family]
            offered = offered_plugins(words[0])
            if plugin not in offered:
                raise LaunchError(f"{command[0]} runs on {FAMILY_NAMES[family]} ({library}), which needs srun "
                                  f"--mpi={plugin}; this Slurm offers {', '.join(offered) or 'no plugin'} "
                                  "(srun --mpi=list)")
            options.append(f"--mpi={plugin}")
    if not (_has_option(words, "-K", "--kill-on-bad-exit") or environ.get("SLURM_KILL_BAD_EXIT")):
        options.append("--kill-on-bad-exit=1")  # else the others wait for the failed rank forever
    if not _has_option(words, "--export"):
        options.append("--export=ALL")  # the runtime's settings reach the ranks even under sbatch --export=NONE
    return options


def _task_ranks(text: str) -> list[int]:
    """``0,2-3`` -> [0, 2, 3]."""
    ranks: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            ranks += range(int(low), int(high or low) + 1)
    return ranks


def wait_status(how: str) -> int | None:
    """A raw wait status from srun's words for a task's end (``Killed``, ``Exited with exit code 3``)."""
    exited = _EXITED.match(how)
    if exited:
        return int(exited.group(1)) << 8
    number = _SIGNALS.get(how.removesuffix(" (core dumped)"))
    return number


@dataclass
class SrunReport:
    """What srun said about failed tasks (its stderr), line by line, in the order it said it."""

    failures: list[tuple[str, list[int], str]] = field(default_factory=list)  # (node, ranks, how)
    lines: list[str] = field(default_factory=list)

    def feed(self, line: bytes) -> bool:
        """Read one line of srun's stderr (it is passed on whatever this says: False)."""
        match = _FAILED_TASKS.match(line.rstrip(b"\r\n"))
        if match:
            node, ranks, how = (group.decode(errors="replace") for group in match.groups())
            self.failures.append((node, _task_ranks(ranks), how))
            self.lines.append(match.group(0).decode(errors="replace"))
        return False

    @property
    def said_anything(self) -> bool:
        return bool(self.lines)

    def first_ranks(self) -> list[int]:
        return self.failures[0][1] if self.failures else []

    def wait_statuses(self) -> dict[int, int]:
        """Rank -> raw wait status, for every rank srun reported (the first report of a rank counts)."""
        found: dict[int, int] = {}
        for _, ranks, how in self.failures:
            status = wait_status(how)
            if status is not None:
                for rank in ranks:
                    found.setdefault(rank, status)
        return found

    def to_json(self, pids: dict[int, int]) -> dict[str, Any]:
        return {"first_failed_ranks": self.first_ranks(),
                "failures": [{"node": node, "ranks": ranks, "how": how} for node, ranks, how in self.failures],
                "lines": self.lines}


def first_failure(ended: list[runwatch.RankEnd], report: SrunReport | None, nprocs: int, trace_dir: Path
                  ) -> tuple[runwatch.RankEnd, list[int]] | None:
    """The first rank that failed: the first that srun reported (its order is causal: it stops the others only
    after that report), as ``ma run`` saw it end where it did; else from ma run's watch alone."""
    statuses = report.wait_statuses() if report is not None else {}
    for end in ended:  # how a rank ended, from srun, where ma run missed the zombie (slurmstepd reaps at once)
        if end.how == tf.END_UNKNOWN and end.rank in statuses:
            end.set_wait_status(statuses[end.rank])
    first = [rank for rank in (report.first_ranks() if report is not None else []) if 0 <= rank < nprocs]
    if not first:
        return runwatch.first_failure(ended, None, nprocs, trace_dir)
    seen = {end.rank: end for end in ended}
    chosen = []
    for rank in first:
        if rank in seen:
            chosen.append(seen[rank])
            continue
        reported = runwatch.RankEnd(rank, None, None)  # a rank on another node, or one ma run missed: srun's word
        if rank in statuses:
            reported.set_wait_status(statuses[rank])
        chosen.append(reported)
    return chosen[0], [end.rank for end in chosen[1:]]
