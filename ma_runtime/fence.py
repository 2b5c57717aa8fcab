"""The SDK fence: under the ``maflops`` Valgrind tool, the runtime's own work is left out of every count.

Each entry into the runtime from the program (an annotation's ``__enter__`` and ``__exit__``, the making of its
object, ``ma.variable``, ``ma.assign``, a loop's ``range``/``iter``/``end``) is bracketed by the tool's
MA_VG_REQ_SDK_ENTER and MA_VG_REQ_SDK_LEAVE client requests (ma_runtime/csrc/ma_vgcount.h), so what a flop or
loadstore region measures is the program between its two counter reads, not the runtime's bookkeeping, its
expression evaluation or a nested annotation. Compiled (annotations.pxd), the requests are two inline
instructions sequences that cost a few cycles outside Valgrind and are always made; plain Python calls them
through the client shim, only once a Valgrind provider is running (``activate``). What stays counted is the
interpreter's dispatch between the program's code and the runtime's first instruction (docs/valgrind-counter.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_enter: Callable[[], Any] | None = None
_leave: Callable[[], Any] | None = None


def activate(enter: Callable[[], Any], leave: Callable[[], Any]) -> None:
    """Make ``enter``/``leave`` (the shim's requests) the fence of the plain-Python runtime."""
    global _enter, _leave
    _enter, _leave = enter, leave


def enter() -> None:
    if _enter is not None:
        _enter()


def leave() -> None:
    if _leave is not None:
        _leave()
