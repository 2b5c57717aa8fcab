"""Input files, read only when they are regular files: a trace, a merged trace, a run record or a machine profile
named as a FIFO, a device (``/dev/zero``) or a symbolic link to one would block forever or fill the memory.

The file is opened without blocking (a FIFO opens at once then) and what was opened is checked, so that nothing
swapped in between a check and the read is read. The errors are OSError with the reason as ``strerror``: the
readers already turn an OSError into their own error naming the file (TraceError, ProfileError).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def read_regular_file(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file (a symbolic link to one too); OSError otherwise."""
    descriptor = _open_regular(path)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()


def check_regular_file(path: Path) -> None:
    """OSError unless ``path`` is a regular file (checked on the file opened, not on its name)."""
    os.close(_open_regular(path))


def _open_regular(path: Path) -> int:
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(descriptor).st_mode
    if stat.S_ISREG(mode):
        os.set_blocking(descriptor, True)
        return descriptor
    os.close(descriptor)
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise OSError(errno.EINVAL, f"it is {kind}, not a regular file: expected a file written by ma", str(path))
