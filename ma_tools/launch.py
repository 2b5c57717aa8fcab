"""``ma run``: start an annotated program under the environment's MPI launcher, with the runtime configured.

The launcher is the ``mpiexec`` beside the running Python (the one pip installed with the ``mpich`` wheel),
not whatever comes first on PATH; ``--launcher`` / ``MA_LAUNCHER`` names another (``srun``, a site
``mpirun``). Inside a Slurm allocation it is ``srun`` (slurm.py). With one process and no launcher asked for,
the command runs directly.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ma_core.errors import LaunchError, ToolBuildError
from ma_core.settings import check_environment
from ma_core.trace_format import (
    RUN_FORMAT,
    RUN_RECORD_FILE,
    RUN_VERSION,
    describe_end,
    header_status,
    merged_file,
)
from ma_runtime.counters import parse_spec
from ma_runtime.merge import merged_ranks
from ma_runtime.trace import trace_path

from . import hydra, mpilaunch, runwatch, slurm, tracedir
from .toolchain import env_bin_dir


@dataclass
class LaunchPlan:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # additions to the parent's environment
    trace_dir: Path = Path("ma-traces")
    notes: list[str] = field(default_factory=list)  # what the user should know (e.g. MPI not measured)
    command: list[str] = field(default_factory=list)  # the program and its arguments, without the launcher
    nprocs: int = 1
    launcher: str = "direct"  # one of trace_format.LAUNCHER_KINDS
    clean_up: bool = False  # ma run stops the job at a rank's failure, not the launcher (runwatch.py)
    unset: tuple[str, ...] = ()  # removed from the parent's environment
    kept_previous: bool = False  # the job wrote no trace, so the previous run's were put back (tracedir.py)


def plan(command: Sequence[str], nprocs: int | None = None, trace_dir: str | os.PathLike[str] = "ma-traces",
         counters: str | None = None, launcher: str | None = None, cache: str | None = None) -> LaunchPlan:
    """Work out the argv and environment of a run without starting it.

    ``cache`` ("SIZE:WAYS:LINE,...", innermost first) makes the Valgrind tool simulate that hierarchy.
    ``nprocs`` None: the Slurm allocation's tasks inside one, else 1."""
    launcher = launcher or os.environ.get("MA_LAUNCHER")
    if not launcher and slurm.in_allocation(os.environ):
        launcher = slurm.SRUN
        nprocs = slurm.allocation_tasks(os.environ) if nprocs is None else nprocs
    nprocs = 1 if nprocs is None else nprocs
    if not command:
        raise LaunchError("no command to run: write it after `--`, e.g. ma run -n 2 -- python app.py")
    if nprocs < 1:
        raise LaunchError(f"-n must be at least 1, not {nprocs}")
    if not str(trace_dir).strip():
        raise LaunchError("--trace-dir is empty: name the directory for the traces (default ma-traces)")
    # The runtime's own parsers, on the environment every rank inherits: a typo stops ma run here, before the
    # job, instead of failing (or being read as a default) in every rank.
    check_environment(os.environ, LaunchError)
    trace_dir = Path(trace_dir).absolute()
    env = {"MA_TRACE_DIR": str(trace_dir), "MA_RUN_ID": uuid.uuid4().hex,
           # Keep the environment's own MPI tools first for anything the program starts itself.
           "PATH": f"{env_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    prefix: list[str] = []
    if counters is not None:
        names = parse_spec(counters)
        env["MA_COUNTERS"] = counters
        if "valgrind" in names:
            from .valgrind import valgrind_launch_prefix

            prefix, valgrind_env = valgrind_launch_prefix(cache)
            env.update(valgrind_env)
        elif cache is not None:
            raise LaunchError("a simulated cache (--cache) needs the valgrind counter: --counters valgrind")
    program = mpilaunch.program_mpi(list(command))  # the MPI it was built with: its PMPI library, its launcher
    notes = [*program.notes, *_preload_pmpi(env, program)]
    env.update(program.env)
    words = shlex.split(launcher) if launcher else []
    if slurm.is_srun(words):
        launch = [*words, "-n", str(nprocs), *slurm.srun_options(words, command, env, os.environ, notes)]
        kind = "srun"
    else:
        start = mpilaunch.launcher(program.install, nprocs, launcher)
        env.update(start.env)
        launch, kind = start.argv, start.kind
        if not launcher and launch and _is_hydra(Path(launch[0])):  # every rank's exit status, for the run record
            launch.append("-print-all-exitcodes")
            kind = "hydra"
    # ma run can see every rank of a local Hydra job: it notes the first to fail before stopping the others
    clean_up = kind == "hydra" and runwatch.RankWatch.available() and "HYDRA_HOST_FILE" not in os.environ
    if clean_up:
        launch.append("-disable-auto-cleanup")
    # A launcher started from an sbatch script would pass on the script's own rank (runwatch.py would take
    # the launcher's processes for rank 0); the launcher gives each rank its own.
    unset = slurm.INHERITED_RANK_VARIABLES if launch else ()
    return LaunchPlan([*launch, *prefix, *command], env, trace_dir, notes, list(command), nprocs, kind, clean_up,
                      unset)


def _is_hydra(mpiexec: Path) -> bool:
    try:
        version = subprocess.run([str(mpiexec), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in version.stdout


def _preload_pmpi(env: dict[str, str], program: mpilaunch.ProgramMpi) -> list[str]:
    """Interpose the PMPI library of the program's MPI in every rank, Python or C (built first if it is not yet;
    the very file a compiled program links, when it links one)."""
    from .cparts import build_pmpi

    if program.install is None and program.linked_pmpi is None:
        return []
    try:
        library = program.linked_pmpi or build_pmpi(mpi=program.install)
    except ToolBuildError as exc:
        return [f"MPI calls will not be measured: {exc}"]
    preload = os.environ.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = f"{library}{' ' + preload if preload else ''}"
    env["MA_PMPI_PRELOADED"] = "1"
    return []


def run(launch: LaunchPlan) -> int:
    """Start the job, wait for it, write the run record beside the traces, return the job's exit status
    (never raises for the job's own failure). The trace directory is checked and claimed first (tracedir.py)."""
    tracedir.check(launch.trace_dir)
    with tracedir.claimed(launch.trace_dir, launch.env["MA_RUN_ID"]):
        tracedir.set_aside(launch.trace_dir)
        try:
            return _run_job(launch)
        finally:
            wrote = bool(written_traces(launch.trace_dir, launch.nprocs))
            launch.kept_previous = tracedir.settle(launch.trace_dir, wrote)


def _run_job(launch: LaunchPlan) -> int:
    environment = {**{k: v for k, v in os.environ.items() if k not in launch.unset}, **launch.env}
    from_hydra, from_srun = launch.launcher == "hydra", launch.launcher == "srun"
    watch = None
    if launch.launcher != "direct" and runwatch.RankWatch.available():
        watch = runwatch.RankWatch(launch.env["MA_RUN_ID"], launch.nprocs,
                                   clean_up_in=launch.trace_dir if launch.clean_up else None)
        watch.start_watching()
    start = time.time()
    try:  # Hydra reports on stdout, srun on stderr: read on the way to ours
        job = subprocess.Popen(launch.argv, env=environment, stdout=subprocess.PIPE if from_hydra else None,
                               stderr=subprocess.PIPE if from_srun else None)
    except (FileNotFoundError, PermissionError) as error:
        if watch is not None:
            watch.stop()
        why = "no such program" if isinstance(error, FileNotFoundError) else "not executable"
        raise LaunchError(f"cannot start {launch.argv[0]!r}: {why}") from None
    if watch is not None:
        watch.launcher_pid = job.pid
    report: hydra.LauncherReport | slurm.SrunReport | None = None
    forwarder = None
    stream, out = (job.stdout, sys.stdout.buffer) if from_hydra else (job.stderr, sys.stderr.buffer)
    if from_hydra or from_srun:
        report = hydra.LauncherReport() if from_hydra else slurm.SrunReport()
        forwarder = threading.Thread(target=hydra.forward, args=(stream, out, report), name="ma-run-launcher-output",
                                     daemon=True)
        forwarder.start()
    stop = JobStop(launch.env["MA_RUN_ID"], job, watch)
    try:
        with stop.on_signals():
            status = job.wait()
    finally:
        stop.cancel()
        if forwarder is not None:
            forwarder.join(timeout=10)  # a process the job left behind may hold its stdout open
        ended = watch.stop() if watch is not None else []
    if watch is not None and watch.problem:
        launch.notes.append(f"watching the ranks failed ({watch.problem}); the run record may be incomplete")
    if launch.launcher == "direct":
        direct = runwatch.RankEnd(0, job.pid, round(time.time() - start, 3))
        direct.set_wait_status(-status if status < 0 else status << 8)
        ended = [direct]
    try:
        write_run_record(launch, status, start, ended, report, watch.stopped if watch is not None else [],
                         stop.signal)
    except OSError as error:  # the job's own status matters more than the record
        launch.notes.append(f"could not write the run record in {launch.trace_dir}: {error}")
    if stop.signal is not None:
        name = signal.Signals(stop.signal).name
        launch.notes.append(f"stopped by {name}: the signal was passed to the job"
                            + (f", and after {STOP_GRACE_SECONDS:g} s its {stop.killed} remaining processes were "
                               "killed" if stop.killed else "") + f" (run record {RUN_RECORD_FILE})")
        return 128 + stop.signal  # never 0: the job did not run to its end
    return status if status >= 0 else 128 - status


STOP_GRACE_SECONDS = 3.0  # after ma run passes on a signal, how long the job has to end before it is killed
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class JobStop:
    """While ``ma run`` waits for the job: SIGINT, SIGTERM or SIGHUP to ``ma run`` goes on to the launcher and
    to every process of the run on this host (found by the run id in their environment), so that the runtimes
    write their traces; whatever is left after STOP_GRACE_SECONDS is SIGKILLed, launcher included (a Hydra
    started with ``-disable-auto-cleanup`` ignores SIGTERM, and a rank may ignore it too). A second signal kills at
    once. Without this, the ranks and ``mpiexec`` outlived ``ma run`` and no run record was written."""

    def __init__(self, run_id: str, job: subprocess.Popen[bytes], watch: runwatch.RankWatch | None) -> None:
        self.run_id, self.job, self.watch = run_id, job, watch
        self.signal: int | None = None  # the first signal ma run received
        self.killed = 0  # processes SIGKILLed after the grace period
        self._timer: threading.Timer | None = None

    @contextlib.contextmanager
    def on_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = {signum: signal.signal(signum, self._received) for signum in _STOP_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in before.items():
                signal.signal(signum, handler)

    def _received(self, signum: int, frame: object) -> None:
        if self.signal is not None:
            self._kill()
            return
        self.signal = signum
        if self.watch is not None:  # the ranks now end because they were asked to: none of them failed first
            self.watch.clean_up_in = None
        runwatch.signal_run(self.run_id, signum, also=[self.job.pid])
        self._timer = threading.Timer(STOP_GRACE_SECONDS, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        if self.job.poll() is None or runwatch.processes_of_run(self.run_id):
            self.killed = len(runwatch.signal_run(self.run_id, signal.SIGKILL, also=[self.job.pid]))

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.signal is not None:  # the launcher ended: nothing of the run may outlive ma run
            self._kill()


def write_run_record(launch: LaunchPlan, status: int, start: float, ended: list[runwatch.RankEnd],
                     report: hydra.LauncherReport | slurm.SrunReport | None, stopped: list[int],
                     received: int | None = None) -> Path:
    """``ma-run.json`` beside the rank files (docs/trace-format.md, "Run record"), written atomically;
    ``received``: the signal that stopped ``ma run`` (and so the job), if one did."""
    if not status or received is not None:  # stopped by a signal to ma run: no rank failed first
        failure = None
    elif isinstance(report, slurm.SrunReport):
        failure = slurm.first_failure(ended, report, launch.nprocs, launch.trace_dir)
    else:
        failure = runwatch.first_failure(ended, report, launch.nprocs, launch.trace_dir)
    pids = {end.rank: end.pid for end in ended if end.pid is not None}
    record = {"format": RUN_FORMAT, "version": RUN_VERSION, "run_id": launch.env.get("MA_RUN_ID"),
              "command": launch.command, "argv": launch.argv, "launcher": launch.launcher, "ranks": launch.nprocs,
              "exit_status": status, "start_time": start, "end_time": time.time(),
              "ended": [end.to_json() for end in ended],
              "first_failure": None if failure is None else {**failure[0].to_json(), "tied_with": failure[1]},
              "stopped_by_ma_run": sorted(stopped),
              "signal_to_ma_run": None if received is None else {"signal": received,
                                                                 "signal_name": signal.Signals(received).name},
              "launcher_report": None if report is None or not report.said_anything else report.to_json(pids),
              # the hierarchy the Valgrind tool simulated ("SIZE:WAYS:LINE,...", innermost first), if any
              "cache": launch.env.get("MA_VG_CACHE")}
    launch.trace_dir.mkdir(parents=True, exist_ok=True)
    path = launch.trace_dir / RUN_RECORD_FILE
    temporary = path.with_name(f".{RUN_RECORD_FILE}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


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
    if 0 not in merged and nprocs > 1 and _world_size(trace_path(trace_dir, 0)) == 1:
        return (f"the {nprocs} ranks ran as {nprocs} one-process MPI jobs, each writing rank 0's trace (it says "
                "MPI_COMM_WORLD had 1 process): the program's MPI did not find the launcher's process manager "
                f"(under srun: --mpi={slurm.PMI_OF_FAMILY['mpich']} for MPICH, --mpi={slurm.PMI_OF_FAMILY['openmpi']} "
                "for Open MPI)")
    shown = ", ".join(str(r) for r in missing[:16]) + (", ..." if len(missing) > 16 else "")
    return (f"no trace from rank{'s' if len(missing) > 1 else ''} {shown} ({len(missing)} of {nprocs}): a rank "
            "that ran no annotation, was killed before its first flush, or could not write to "
            f"{trace_dir} leaves none")


def _world_size(trace: Path) -> int | None:
    try:
        return header_status(json.loads(trace.read_text(encoding="utf-8"))["header"]).size
    except (OSError, ValueError, KeyError, TypeError):
        return None


def first_failure(trace_dir: Path) -> list[str]:
    """What the run record says about the first failed rank and the ranks stopped for it, in words (nothing
    without a record or a failure)."""
    try:
        record = json.loads((trace_dir / RUN_RECORD_FILE).read_text(encoding="utf-8"))
        first, stopped = record["first_failure"], record.get("stopped_by_ma_run") or []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    if not isinstance(first, dict):
        return []
    tied = first.get("tied_with") or []
    also = f" (ranks {', '.join(map(str, tied))} ended at the same moment, the same way)" if tied else ""
    out = [f"rank {first.get('rank')} ended first: it {describe_end(first)}{also} (run record {RUN_RECORD_FILE})"]
    if stopped:
        out.append(f"ma run stopped the other ranks after it: {', '.join(map(str, stopped))}")
    return out


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
