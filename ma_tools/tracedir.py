"""The trace directory of ``ma run``: checked before the job starts, claimed by one job at a time, and the
previous run's traces replaced only once the new job has written its own (docs/trace-format.md, "One job per
trace directory").

- *Checked*: the directory is created if missing and a file is created and removed in it, so that a job that
  could not write its traces is never started.
- *Claimed*: ``ma run`` holds an exclusive ``flock`` on ``.ma-run.lock`` in the directory for the whole job and
  writes its PID and run id into it; a second ``ma run`` on the same directory is refused and names the first.
  The file is removed at the end; the kernel releases the lock however ``ma run`` ends, so a killed ``ma run``
  leaves at most an unlocked file, which claims nothing.
- *Replaced once written*: the previous run's files (rank files, merged file, run record) are moved into
  ``.ma-previous/`` before the job starts, so that nothing of them can be mixed with the new run's; they are
  deleted once the job has written a trace of its own, and moved back when it wrote none.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from ma_core.errors import LaunchError
from ma_core.trace_format import MERGED_FILE, RANK_FILE_GLOB, RUN_RECORD_FILE, TEMPORARY_GLOB, merged_file

LOCK_FILE = ".ma-run.lock"
PREVIOUS_DIR = ".ma-previous"


def check(trace_dir: Path) -> None:
    """Make sure the job can write its traces before it starts."""
    if trace_dir.exists() and not trace_dir.is_dir():
        raise LaunchError(f"--trace-dir {trace_dir}: it is a {_kind_of(trace_dir)}, not a directory")
    try:
        trace_dir.mkdir(parents=True, exist_ok=True)
        probe = trace_dir / f".ma-run-probe.{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise LaunchError(f"--trace-dir {trace_dir}: cannot write there ({error.strerror or error})") from None


def _kind_of(path: Path) -> str:
    mode = path.stat().st_mode
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


@contextlib.contextmanager
def claimed(trace_dir: Path, run_id: str) -> Iterator[None]:
    """Hold the directory for this job; LaunchError when another ``ma run`` holds it."""
    path = trace_dir / LOCK_FILE
    try:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held open for the whole job)
    except OSError as error:
        raise LaunchError(f"--trace-dir {trace_dir}: cannot create {LOCK_FILE} ({error.strerror or error})") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _holder(handle.read())
            raise LaunchError(f"--trace-dir {trace_dir} is in use by another job ({holder}): wait for it to end "
                              "or give this one another --trace-dir") from None
        if not _still_there(path, handle.fileno()):  # its holder removed it as we opened it: it just ended
            raise LaunchError(f"--trace-dir {trace_dir}: another job released it this moment; run again")
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "run_id": run_id}) + "\n")
        handle.flush()
        try:
            yield
        finally:
            # Removed while still locked, so the directory holds only traces; a job that opened it just before
            # sees that it is gone (_still_there) once it gets the lock.
            with contextlib.suppress(OSError):  # the program may have taken the directory away
                path.unlink()


def _still_there(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def _holder(text: str) -> str:
    try:
        claim = json.loads(text)
        return f"ma run with PID {int(claim['pid'])}, run {claim['run_id']}"
    except (ValueError, KeyError, TypeError):
        return "an ma run"


def _trace_files(trace_dir: Path) -> list[Path]:
    found = [*trace_dir.glob(RANK_FILE_GLOB), *trace_dir.glob(TEMPORARY_GLOB), trace_dir / RUN_RECORD_FILE,
             merged_file(trace_dir), *trace_dir.glob(f".{MERGED_FILE}.*.tmp")]
    return [path for path in found if path.is_file()]


def set_aside(trace_dir: Path) -> None:
    """Move the previous run's files into PREVIOUS_DIR (after a crashed ``ma run`` that left one there and no
    trace of its own job: that one is still the previous run)."""
    previous = trace_dir / PREVIOUS_DIR
    current = _trace_files(trace_dir)
    if previous.is_dir():
        if not [path for path in current if path.name != RUN_RECORD_FILE]:
            return  # the kept traces are still the last ones written; the record is the crashed job's
        shutil.rmtree(previous)
    previous.mkdir()
    for path in current:
        path.replace(previous / path.name)


def settle(trace_dir: Path, wrote: bool) -> bool:
    """After the job: drop the previous run's files when it ``wrote`` a trace, else put them back (True then)."""
    previous = trace_dir / PREVIOUS_DIR
    try:
        if not previous.is_dir():
            return False
    except OSError:
        return False
    if wrote:
        shutil.rmtree(previous, ignore_errors=True)
        return False
    kept = [path for path in previous.iterdir() if path.name != RUN_RECORD_FILE]
    for path in kept:
        path.replace(trace_dir / path.name)
    shutil.rmtree(previous, ignore_errors=True)
    return bool(kept)
