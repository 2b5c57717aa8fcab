"""The one way every C part of the SDK is built: under a lock, only when its stamp is out of date, by rename.

A product (a library, a program, or a directory of them) is rebuilt when its sources or the way it is built
(its commands, the compiler, anything the recipe names) changed since its stamp was written, or when asked to.
The stamp, ``<product>.stamp`` beside it (:mod:`ma_runtime.built`), is a JSON object: the ``fingerprint`` of
the sources and settings, plus the facts the recipe learnt (the runtime reads those, e.g. the Valgrind version).

Ranks of one job may all ask at once: a lock file serialises the builders of one build directory, and a file
appears by rename, so a process never loads a half-written library.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ma_core.errors import ToolBuildError
from ma_runtime.built import build_dir, read_stamp, stamp_path

from .toolchain import run_compiler

LOCK_NAME = ".build.lock"


def fingerprint(sources: Sequence[Path], settings: Sequence[str]) -> str:
    """What a product was built from: every source's name and bytes, and every setting (command words...)."""
    digest = hashlib.sha256("\0".join(settings).encode())
    for source in sources:
        digest.update(b"\0" + source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_NAME, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(product: Path, what: str, sources: Sequence[Path], settings: Sequence[str],
          make: Callable[[Path], Mapping[str, Any] | None], force: bool = False,
          outputs: Sequence[Path] = ()) -> Path:
    """Build ``product`` with ``make(product)`` unless its stamp says the same sources and settings built it.

    ``make`` writes the product (each file by rename) and returns the facts to keep in the stamp, if any;
    ``outputs``: the files a directory product must hold to count as built. Raises ToolBuildError naming the
    sources that are missing, or the command that failed.
    """
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise ToolBuildError(f"building {what}: source files missing: {', '.join(missing)}")
    with _locked(product.parent):
        expected = fingerprint(sources, settings)
        built = all(path.exists() for path in (product, *outputs))
        if not force and built and read_stamp(product).get("fingerprint") == expected:
            return product
        facts = make(product) or {}
        temporary = stamp_path(product).with_name(f".{stamp_path(product).name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"fingerprint": expected, **facts}, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, stamp_path(product))
    return product


def compile_into(target: Path, command: Sequence[str | os.PathLike[str]], what: str) -> None:
    """Run ``command -o <temporary>`` and rename the result to ``target``."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        run_compiler([*command, "-o", temporary], what)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def build_c(name: str, command: Sequence[str | os.PathLike[str]], sources: Sequence[Path], what: str,
            force: bool = False, inputs: Sequence[Path] = (), directory: Path | None = None) -> Path:
    """Compile one file ``name`` into ``directory`` (default: the build directory) with ``command`` (without
    ``-o``); return its path.

    ``sources``: the files the command reads (their bytes are in the fingerprint); ``inputs``: other files whose
    change must rebuild the product (e.g. the stamp of a library it links)."""
    words = [str(word) for word in command]
    return build((directory or build_dir()) / name, what, [*sources, *inputs], words,
                 lambda target: compile_into(target, words, what), force)
