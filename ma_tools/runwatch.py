"""How a run ended, rank by rank: what ``ma run`` writes to the run record (docs/trace-format.md, "Run record").

When one rank is SIGKILLed, MPICH's Hydra kills the others, so every trace ends ``status: running`` and the
traces cannot say who died. Two witnesses can:

- ``ma run`` itself. It finds each rank's process (Linux: ``/proc/<pid>/environ`` holds this run's
  ``MA_RUN_ID`` and the launcher's rank variable), opens a pidfd on it, which becomes readable when the
  process is gone, and reads the wait status when it catches the zombie before the launcher reaps it.

  The order in which the ranks end says nothing while Hydra cleans up: it kills the others within a
  millisecond of the first death, and measured, the order of the zombies (even of the sockets each rank
  held, closed by the kernel as the process ends) is not causal: a rank that called ``_exit(3)`` became a
  zombie milliseconds after the ranks Hydra killed because of it, and a SIGKILLed rank was seen in the same
  wake-up as the ranks killed for it in about half the runs. So, when ma run can see every rank (Linux,
  all ranks on this host), it starts Hydra with ``-disable-auto-cleanup`` and does the clean-up itself: at
  the first rank that ends other than cleanly (a wait status other than 0, or a trace that does not say
  ``complete``), it notes that rank and SIGKILLs the others, as Hydra would have;
- the launcher: Hydra prints a banner naming one PID and an exit code, and with ``-print-all-exitcodes``
  every rank's wait status. Its banner names *a* process it found dead, which is often one it killed while
  cleaning up (measured: the wrong rank in about half of the runs), so the record keeps it only as the
  launcher's report, and names the first rank from ma run's own observation.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ma_core import trace_format as tf
from ma_core.launchers import launcher_rank_size

from .hydra import LauncherReport

_SCAN_FAST_SECONDS = 10.0  # look for rank processes every tick this long, then once a second


@dataclass
class RankEnd:
    rank: int
    pid: int | None
    after_s: float | None  # seconds from the start of the job to the moment ma run saw it end
    how: str = tf.END_UNKNOWN
    signal: int | None = None
    exit_code: int | None = None

    def set_wait_status(self, status: int) -> None:
        """From a raw wait status (as waitpid, /proc/<pid>/stat and Hydra's exit-code list give it)."""
        if os.WIFSIGNALED(status):
            self.how, self.signal, self.exit_code = tf.END_SIGNAL, os.WTERMSIG(status), None
        elif os.WIFEXITED(status):
            self.how, self.signal, self.exit_code = tf.END_EXIT, None, os.WEXITSTATUS(status)

    @property
    def clean(self) -> bool:
        return self.how == tf.END_EXIT and self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        name = None
        if self.signal is not None:
            with contextlib.suppress(ValueError):
                name = signal.Signals(self.signal).name
        return {"rank": self.rank, "pid": self.pid, "after_s": self.after_s, "how": self.how,
                "signal": self.signal, "signal_name": name, "exit_code": self.exit_code}


def _environ_rank(pid: int, marker: bytes) -> int | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    if marker not in environ:
        return None
    variables = {}
    for entry in environ.split(b"\0"):
        name, _, value = entry.decode(errors="replace").partition("=")
        variables[name] = value
    found = launcher_rank_size(variables)
    return found[0] if found else None


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def zombie_status(pid: int) -> int | None:
    """The wait status of a process that has ended but is not yet reaped (field 52 of /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if len(fields) < 50 or fields[0] != b"Z":
        return None
    return int(fields[49])  # field 52 counted from 1, minus pid and comm


def unfinished(trace_dir: Path, rank: int) -> bool:
    """Whether the rank's own file is still a periodic flush (``status: running``) after the rank ended: its
    runtime never made its final write (which replaces or, after a merge, removes that file), so it ended
    before its exit handlers, e.g. with ``_exit(0)`` before MPI_Finalize, where the others wait for it."""
    try:
        with open(tf.rank_file(trace_dir, rank), "rb") as handle:
            head = handle.read(4096)  # the header comes first
    except OSError:
        return False
    return f'"status":"{tf.RUNNING}"'.encode() in head


def failed(end: RankEnd, trace_dir: Path) -> bool:
    """Whether a rank that ended failed: from its wait status, or where ma run missed it, from its trace."""
    if end.how != tf.END_UNKNOWN:
        return not end.clean or unfinished(trace_dir, end.rank)
    try:  # the process is gone, so its final write (if any) is complete
        text = tf.rank_file(trace_dir, end.rank).read_bytes()
    except OSError:
        return False  # no trace and no status: nothing says it failed (and stopping the others loses theirs)
    try:
        return not tf.header_status(json.loads(text)["header"]).complete
    except (ValueError, KeyError, TypeError):
        return True


class RankWatch:
    """A thread that finds the rank processes of this run and records the order in which they end."""

    def __init__(self, run_id: str, nprocs: int, tick_s: float = 0.02, clean_up_in: Path | None = None) -> None:
        self.marker = b"MA_RUN_ID=" + run_id.encode()
        self.nprocs = nprocs
        self.clean_up_in = clean_up_in  # the trace directory, when ma run stops the job at a failure
        self.stopped: list[int] = []  # ranks ma run killed because another failed
        self.launcher_pid: int | None = None
        self.problem: str | None = None  # the first unexpected error of the watch thread
        self.tick_s = tick_s
        self.start = time.monotonic()
        self.pids: dict[int, int] = {}  # rank -> pid
        self.ended: list[RankEnd] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ma-run-watch", daemon=True)
        self._pidfds: dict[int, int] = {}  # fd -> rank
        self._poller = select.poll()
        self._wake = os.pipe()  # stop() writes to it, so that the thread does not sleep through the end
        self._poller.register(self._wake[0], select.POLLIN)

    @staticmethod
    def available() -> bool:
        return sys.platform == "linux" and hasattr(os, "pidfd_open")

    def start_watching(self) -> None:
        self._thread.start()

    def stop(self) -> list[RankEnd]:
        """After the launcher ended: note the ranks that ended since the last look, stop the thread."""
        self._stop.set()
        os.write(self._wake[1], b"x")
        self._thread.join()
        for fd in (*self._pidfds, *self._wake):
            os.close(fd)
        return self.ended

    def _scan(self) -> None:
        found: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                rank = _environ_rank(int(name), self.marker)
                if rank is not None and rank not in self.pids:
                    found.setdefault(rank, []).append(int(name))
        for rank, pids in found.items():
            # A rank started through a wrapper (sh -c, valgrind's launcher) is several processes: the outermost.
            outer = min(p for p in pids if _parent(p) not in pids) if len(pids) > 1 else pids[0]
            try:
                fd = os.pidfd_open(outer)
            except OSError:  # it ended between the scan and now: found again, or reported by the launcher
                continue
            self.pids[rank] = outer
            self._pidfds[fd] = rank
            self._poller.register(fd, select.POLLIN)

    def _watch(self) -> None:
        last_scan = 0.0
        while True:
            stopping = self._stop.is_set()
            try:
                now = time.monotonic()
                searching = len(self.pids) < self.nprocs and not stopping
                if searching and (now - self.start < _SCAN_FAST_SECONDS or now - last_scan >= 1.0):
                    self._scan()
                    last_scan = now
                events = self._poller.poll(0 if stopping else (self.tick_s if searching else 3600) * 1000)
                seen = round(time.monotonic() - self.start, 3)
                for fd, _ in events:
                    if fd in self._pidfds:
                        self._ended(fd, seen)
            except Exception as error:  # the job's clean-up depends on this thread: note it, keep watching
                self.problem = self.problem or f"{type(error).__name__}: {error}"
                time.sleep(self.tick_s)
            if stopping:
                return

    def _ended(self, fd: int, seen: float) -> None:
        rank = self._pidfds.pop(fd)
        self._poller.unregister(fd)
        os.close(fd)
        end = RankEnd(rank, self.pids[rank], seen)
        status = zombie_status(end.pid or 0)
        if status is not None:
            end.set_wait_status(status)
        self.ended.append(end)
        if self.clean_up_in is not None and not self.stopped and failed(end, self.clean_up_in):
            self._stop_the_others()

    def _stop_the_others(self) -> None:
        """What Hydra does at a failure, done after noting who failed: SIGKILL every other rank (and, for ranks
        not found, interrupt the launcher, which then kills whatever is left)."""
        if len(self.pids) < self.nprocs:
            self._scan()
        for fd, rank in self._pidfds.items():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                self.stopped.append(rank)
        if len(self.pids) < self.nprocs and self.launcher_pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.launcher_pid, signal.SIGINT)


def processes_of_run(run_id: str) -> list[int]:
    """Every process on this host whose environment holds this run's ``MA_RUN_ID`` (the launcher, its proxies,
    the ranks and their wrappers), never ma run itself."""
    marker = b"MA_RUN_ID=" + run_id.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if marker + b"\0" in handle.read() + b"\0":
                    found.append(int(name))
        except OSError:
            continue
    return found


def signal_run(run_id: str, signum: int, also: Iterable[int] = ()) -> list[int]:
    """Send ``signum`` to every process of the run (and to ``also``); the PIDs it reached."""
    reached = []
    for pid in dict.fromkeys([*also, *processes_of_run(run_id)]):
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
            reached.append(pid)
    return reached


def first_failure(ended: list[RankEnd], report: LauncherReport | None, nprocs: int, trace_dir: Path
                  ) -> tuple[RankEnd, list[int]] | None:
    """The first rank in end order that did not exit cleanly, and the ranks seen ending at the same moment
    (one wake-up of the watch: a busy machine may let the launcher's clean-up kills land first).

    How a rank ended is filled from the launcher's per-rank list where ma run missed the zombie. Within one
    moment, an exit status other than 0 outranks a signal, and a signal other than SIGKILL outranks SIGKILL:
    Hydra stops the others with SIGKILL, so those are the likelier victims of the clean-up."""
    codes = report.exit_codes if report is not None and len(report.exit_codes) == nprocs else []
    for end in ended:
        if end.how == tf.END_UNKNOWN and codes:  # (0 included: a rank that exited 0 may not have finished)
            end.set_wait_status(codes[end.rank])
    failures = [end for end in ended if failed(end, trace_dir)]
    if not failures:
        return None
    moment = [end for end in failures if end.after_s == failures[0].after_s]

    def likelihood(end: RankEnd) -> tuple[int, int]:
        if end.how == tf.END_EXIT:
            return 0, end.rank
        if end.how == tf.END_SIGNAL:
            return (2 if end.signal == signal.SIGKILL else 1), end.rank
        return 3, end.rank

    moment.sort(key=likelihood)
    best = moment[0]
    return best, [end.rank for end in moment[1:] if likelihood(end)[0] == likelihood(best)[0]]
