"""``ma run``: start an annotated program under the environment's MPI launcher, with the runtime configured.

The launcher is the ``mpiexec`` beside the running Python (the one pip installed with the ``mpich`` wheel),
not whatever comes first on PATH; ``--launcher`` / ``MA_LAUNCHER`` names another (``srun``, a site
``mpirun``). With one process and no launcher asked for, the command runs directly.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ma.errors import LaunchError, ToolBuildError
from ma.trace_format import MERGED_FILE, RANK_FILE_GLOB, TEMPORARY_GLOB, header_status, merged_file

from .counters import parse_spec
from .merge import merged_ranks
from .toolchain import env_bin_dir, find_program
from .trace import trace_path


@dataclass
class LaunchPlan:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # additions to the parent's environment
    trace_dir: Path = Path("ma-traces")
    notes: list[str] = field(default_factory=list)  # what the user should know (e.g. MPI not measured)


def plan(command: Sequence[str], nprocs: int = 1, trace_dir: str | os.PathLike[str] = "ma-traces",
         counters: str | None = None, launcher: str | None = None) -> LaunchPlan:
    """Work out the argv and environment of a run without starting it."""
    if not command:
        raise LaunchError("no command to run: write it after `--`, e.g. ma run -n 2 -- python app.py")
    if nprocs < 1:
        raise LaunchError(f"-n must be at least 1, not {nprocs}")
    trace_dir = Path(trace_dir).absolute()
    env = {"MA_TRACE_DIR": str(trace_dir), "MA_RUN_ID": uuid.uuid4().hex,
           # Keep the environment's own MPI tools first for anything the program starts itself.
           "PATH": f"{env_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    prefix: list[str] = []
    if counters is not None:
        names = parse_spec(counters)
        env["MA_COUNTERS"] = counters
        if "valgrind" in names:
            from .counters.valgrind import valgrind_launch_prefix

            prefix, valgrind_env = valgrind_launch_prefix()
            env.update(valgrind_env)
    notes = _preload_pmpi(env)
    launcher = launcher or os.environ.get("MA_LAUNCHER")
    if launcher:
        launch = [*shlex.split(launcher), "-n", str(nprocs)]
    elif nprocs == 1:
        launch = []
    else:
        mpiexec = find_program("mpiexec")
        if mpiexec is None:
            raise LaunchError("no mpiexec beside this Python or on PATH: pip install mpich, or name a launcher "
                              "with --launcher / MA_LAUNCHER")
        launch = [str(mpiexec), "-n", str(nprocs)]
    return LaunchPlan([*launch, *prefix, *command], env, trace_dir, notes)


def _preload_pmpi(env: dict[str, str]) -> list[str]:
    """Interpose the PMPI library in every rank, Python or C (built first if it is not yet)."""
    from . import pmpi

    try:
        library = pmpi.build_pmpi()
    except ToolBuildError as exc:
        return [f"MPI calls will not be measured: {exc}"]
    preload = os.environ.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = f"{library}{' ' + preload if preload else ''}"
    env["MA_PMPI_PRELOADED"] = "1"
    return []


def clear_traces(trace_dir: Path) -> None:
    """Remove the rank files of an earlier run, so a smaller run cannot be mixed with a larger one's."""
    if not trace_dir.is_dir():
        return
    for stale in trace_dir.glob(RANK_FILE_GLOB):
        stale.unlink()
    for stale in trace_dir.glob(TEMPORARY_GLOB):
        stale.unlink()
    for stale in (merged_file(trace_dir), *trace_dir.glob(f".{MERGED_FILE}.*.tmp")):
        stale.unlink(missing_ok=True)


def run(launch: LaunchPlan) -> int:
    """Start the job, wait for it, return its exit status (never raises for the job's own failure)."""
    clear_traces(launch.trace_dir)
    environment = {**os.environ, **launch.env}
    try:
        completed = subprocess.run(launch.argv, env=environment, check=False)
    except FileNotFoundError:
        raise LaunchError(f"cannot start {launch.argv[0]!r}: no such program") from None
    except PermissionError:
        raise LaunchError(f"cannot start {launch.argv[0]!r}: not executable") from None
    return completed.returncode


def written_traces(trace_dir: Path, nprocs: int) -> list[Path]:
    """The file holding each rank's trace: the merged file (merge.py) or the rank's own."""
    merged = merged_ranks(trace_dir)
    own = [trace_path(trace_dir, r) for r in range(nprocs)]
    return [merged_file(trace_dir) if r in merged else own[r] for r in range(nprocs) if r in merged or own[r].exists()]


def missing_traces(trace_dir: Path, nprocs: int) -> str | None:
    """What to tell the user when some rank wrote no trace (None when every rank did): a run whose numbers
    are not all there must not look like a success."""
    merged = merged_ranks(trace_dir)
    missing = [r for r in range(nprocs) if r not in merged and not trace_path(trace_dir, r).exists()]
    if not missing:
        return None
    shown = ", ".join(str(r) for r in missing[:16]) + (", ..." if len(missing) > 16 else "")
    return (f"no trace from rank{'s' if len(missing) > 1 else ''} {shown} ({len(missing)} of {nprocs}): a rank "
            "that ran no annotation, was killed before its first flush, or could not write to "
            f"{trace_dir} leaves none")


def unclean_exits(trace_dir: Path, nprocs: int) -> dict[int, str]:
    """Rank -> "status: reason" for each written trace that does not come from a clean exit.

    Read after a failed job, so that ``ma run`` can say which rank failed and why even when the launcher's
    output forwarding lost the rank's own traceback in the abort.
    """
    found: dict[int, str] = {}
    for rank in range(nprocs):
        path = trace_path(trace_dir, rank)
        if not path.exists():
            continue
        try:
            status = header_status(json.loads(path.read_text(encoding="utf-8"))["header"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            found[rank] = f"an unreadable trace {path} ({error})"
            continue
        if not status.complete:
            found[rank] = status.describe()
    return found
