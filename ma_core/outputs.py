"""Output paths, checked before anything is written: the ``ma`` commands check every output option when the
command line is parsed, before any work, and the writers of generated files check again at the write.

A file is written only as a regular file (new or replaced) in a directory that exists: never onto a device
(``-o /dev/full``), a FIFO, a socket or a directory, and never with a suffix matplotlib would add itself
(``--plot /dev/full`` used to write ``/dev/full.png``). An output directory is created if missing, below an
existing directory; a path in its place that is not a directory is an error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .errors import MAError

# What matplotlib writes without extra packages; the format follows the suffix.
FIGURE_SUFFIXES = (".png", ".svg", ".pdf", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


def check_output_file(text: str, suffixes: Sequence[str] = ()) -> Path:
    """``text`` as a file the command may write (create or replace); MAError saying why not."""
    if not text:
        raise MAError("the file name is empty")
    try:
        return _check_file(Path(text), text, suffixes)
    except OSError as exc:  # a path the checks themselves cannot look at (a directory without search permission)
        raise MAError(f"{text}: {exc.strerror or exc}") from None


def _check_file(path: Path, text: str, suffixes: Sequence[str]) -> Path:
    if path.is_symlink() and not path.exists():
        raise MAError(f"{text} is a symbolic link to nothing: give the file itself")
    if path.exists():
        if path.is_dir():
            raise MAError(f"{text} is a directory: expected the name of a file to write")
        if not path.is_file():
            raise MAError(f"{text} is not a regular file (a device, FIFO or socket): ma writes only regular files")
        if not os.access(path, os.W_OK):
            raise MAError(f"{text}: the file is not writable")
    parent = path.parent
    if not parent.exists():
        raise MAError(f"{text}: the directory {parent} does not exist")
    if not parent.is_dir():
        raise MAError(f"{text}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MAError(f"{text}: cannot write in the directory {parent}")
    if suffixes and path.suffix.lower() not in suffixes:
        raise MAError(f"{text}: expected a file name ending in {', '.join(suffixes)} (the format follows it)")
    return path


def check_output_directory(text: str) -> Path:
    """``text`` as a directory the command may create or write files in; MAError saying why not."""
    if not text:
        raise MAError("the directory name is empty")
    try:
        return _check_directory(Path(text), text)
    except OSError as exc:
        raise MAError(f"{text}: {exc.strerror or exc}") from None


def _check_directory(path: Path, text: str) -> Path:
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise MAError(f"{text} is not a directory (it is a file, a device or a broken link)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise MAError(f"{text}: cannot write in this directory")
        return path
    ancestor = path.parent
    while not (ancestor.exists() or ancestor.is_symlink()):
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise MAError(f"{text}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise MAError(f"{text}: cannot create it in {ancestor}")
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` once :func:`check_output_file` allows it: a FIFO or device in its
    place is an MAError, never written to or replaced."""
    target = check_output_file(str(path))
    target.write_text(text, encoding="utf-8")
    return target
