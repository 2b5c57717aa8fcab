"""Running another program to its end: the one way the SDK's tools and probes start a compiler, mpiexec or a
probe and turn its failure into an error of their own that names the command and shows what it printed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

from ma_core.errors import MAError

OUTPUT_SHOWN = 2000  # characters of a failed program's output kept in the message (its end: where errors are)


def run_program(argv: Sequence[str | os.PathLike[str]], error: type[MAError], what: str,
                timeout: float | None = None, **options: Any) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with its output captured as text; raise ``error`` naming ``what`` and the command when it cannot
    start, outlives ``timeout`` seconds or exits with a status other than 0. ``options`` go to subprocess.run."""
    words = [str(word) for word in argv]
    command = " ".join(words)
    try:
        done = subprocess.run(words, capture_output=True, text=True, timeout=timeout, check=False, **options)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(f"{what}: cannot run {command}: {exc}") from None
    if done.returncode != 0:
        output = (done.stderr.strip() or done.stdout.strip())[-OUTPUT_SHOWN:]
        raise error(f"{what} failed (exit {done.returncode}):\n  {command}\n{output}")
    return done
