"""What ``MA_DISABLE=1`` binds the API to: annotations that do nothing, at the cost of a function call."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, Literal, TypeVar

Number = int | float
T = TypeVar("T")


class NullRegion:
    __slots__ = ()

    def __enter__(self) -> NullRegion:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        return False

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        return func  # as a decorator: the function itself, no wrapper

    range = staticmethod(builtins.range)

    @staticmethod
    def iter(iterable: Iterable[T]) -> Iterator[T]:
        return builtins.iter(iterable)

    @staticmethod
    def end(n: int) -> None:
        return None


NULL = NullRegion()


def region(*args: Any, **kwargs: Any) -> NullRegion:
    return NULL


def subroutine(id: Any) -> Any:
    return id if callable(id) else NULL


def variable(name: str, value: Number) -> Number:
    return value


def assign(name: str, expr: str, value: Number | None = None) -> Number | None:
    return value


def nothing(*args: Any, **kwargs: Any) -> None:
    return None


def bindings(mpi_names: Iterable[str]) -> dict[str, Any]:
    """Every name of the annotation API, bound to its no-op (what ``import ma`` uses under MA_DISABLE=1)."""
    names: dict[str, Any] = {"assign": assign, "variable": variable, "subroutine": subroutine}
    for name in ("loop", "flop", "loadstore", "heap_memory", "stack_memory", "no_tracing", "loop_start", "vec_loop",
                 "flop_start", "loadstore_start", "subroutine_start", *mpi_names):
        names[name] = region
    for name in ("loop_end", "flop_stop", "loadstore_stop", "subroutine_end", "tracing", "flush", "finalize"):
        names[name] = nothing
    return names
