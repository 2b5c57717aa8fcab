"""The functions of the annotation API that do not hand out an annotation object (see ma/__init__.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from ma_core.errors import AnnotationError
from ma_core.trace_format import COMPLETE

from .annotations import Region, enter_runtime, flop, leave_runtime, loadstore, loop, subroutine
from .mars import current_runtime, runtime, thread_state

Number = int | float
F = TypeVar("F", bound=Callable[..., Any])


def _fenced(function: F) -> F:
    """``function`` is the runtime's work: under the Valgrind tool it is left out of the counts (fence.py)."""
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        enter_runtime()
        try:
            return function(*args, **kwargs)
        finally:
            leave_runtime()

    return cast(F, call)


@_fenced
def variable(name: str, value: Number) -> Number:
    """Declare an input parameter (the paper's ``ma_def_variable_int``); returns ``value``."""
    return runtime().declare(thread_state(), "variable", name, None, value)


@_fenced
def assign(name: str, expr: str, value: Number | None = None) -> Number:
    """Declare a derived variable (``ma_def_variable_assign_int``); returns the evaluated expression.

    When ``value`` (the program's own number) is given and differs from the evaluation, the trace says so.
    """
    if not isinstance(expr, str):
        raise AnnotationError(f"ma.assign({name!r}, ...): the expression must be a str, not {expr!r}")
    return runtime().declare(thread_state(), "assign", name, expr, value)


def subroutine_site(id: str | Callable[..., Any]) -> Any:
    """``with ma.subroutine("id"):``, ``@ma.subroutine("id")`` or bare ``@ma.subroutine``."""
    if callable(id):
        return subroutine(id.__name__)(id)
    return subroutine(id)


@_fenced
def tracing(enabled: bool) -> None:
    """Switch recording on or off at run time (``ma_set_tracing`` / ``ma_unset_tracing``)."""
    runtime().set_enabled(bool(enabled))


@contextmanager
def no_tracing() -> Iterator[None]:
    """Nothing inside is recorded; variables declared inside still take effect."""
    rt = runtime()
    previous = rt.enabled
    rt.set_enabled(False)
    try:
        yield
    finally:
        rt.set_enabled(previous)


# --- the paper's start/end pairs, for code that cannot use `with` ---------------------------------
@_fenced
def loop_start(id: str, expr: str, value: Number | None = None) -> loop:
    return loop(id, expr, value).__enter__()  # type: ignore[no-any-return]


@_fenced
def loop_end(id: str, measured: int) -> None:
    frame = _open_frame("loop", id)
    if frame is not None:
        frame.end(measured)  # type: ignore[attr-defined]
        frame.__exit__(None, None, None)


@_fenced
def subroutine_start(id: str) -> subroutine:
    return subroutine(id).__enter__()  # type: ignore[no-any-return]


@_fenced
def subroutine_end(id: str) -> None:
    _close("subroutine", id)


@_fenced
def flop_start(id: str, expr: str, value: Number | None = None) -> flop:
    return flop(id, expr, value).__enter__()  # type: ignore[no-any-return]


@_fenced
def flop_stop(id: str) -> None:
    _close("flop", id)


@_fenced
def loadstore_start(id: str, expr: str, value: Number | None = None) -> loadstore:
    return loadstore(id, expr, value).__enter__()  # type: ignore[no-any-return]


@_fenced
def loadstore_stop(id: str) -> None:
    _close("loadstore", id)


def _close(type_: str, id: str) -> None:
    frame = _open_frame(type_, id)
    if frame is not None:
        frame.__exit__(None, None, None)


def _open_frame(type_: str, id: str) -> Region | None:
    """The innermost open annotation of this type and id; an end for anything else is an anomaly."""
    state = thread_state()
    if not state.enabled:
        return None
    for frame in state.open_frames():
        if type_ == frame.TYPE and frame.id == id:
            top = state.top
            if frame is not top and top is not None:
                state.runtime.anomaly("mismatched_end", top.node,
                                      f"end of {type_} {id!r} while {top.TYPE} {top.id!r} is the innermost open "
                                      "annotation; the annotations opened after it are closed as unbalanced")
            return cast(Region, frame)
    innermost = state.top
    where = f"the innermost open annotation is {innermost.TYPE} {innermost.id!r}" if innermost else "none is open"
    state.runtime.anomaly("mismatched_end", innermost.node if innermost else None,
                          f"end of {type_} {id!r}, which is not open ({where}); ignored")
    return None


def flush() -> None:
    """Write this rank's trace now (it is also written periodically and at exit); a write that fails is said on
    stderr, not raised."""
    rt = current_runtime()
    if rt is not None:
        rt.flush(wait=True)


def finalize() -> None:
    """Close the runtime and write the final trace now (``ma_finalize``); later annotations are not recorded."""
    rt = current_runtime()
    if rt is not None:
        rt.finish(COMPLETE)
        rt.set_enabled(False)
