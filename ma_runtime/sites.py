"""What a thread's state needs from the rest of the runtime: a node factory and a few process-wide hooks.

ThreadState (threadstate.py) creates nodes and reports anomalies for every thread; the process-wide runtime
(mars.py) owns the settings, the counters and the trace. The factory here is built from the settings once,
and the runtime is seen through the ``RuntimeHooks`` protocol, so that threadstate imports neither mars
nor annotations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ma_core.errors import AnnotationError
from ma_core.trace_format import MAX_SITE_DEPTH

from .tree import Node

if TYPE_CHECKING:
    from .config import Settings

Number = int | float


class OpenAnnotation(Protocol):
    """An annotation object while it is open (annotations.Region)."""

    TYPE: str
    id: str
    undo: list[tuple[str, Any]] | None

    @property
    def node(self) -> Node | None: ...

    @property
    def outer(self) -> OpenAnnotation | None: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Any: ...

    def finish(self, exc_type: type[BaseException] | None, t1: int, c1: int, unbalanced: bool = False) -> None: ...


class RuntimeHooks(Protocol):
    """The process-wide runtime as a thread's state and the annotation objects call it (mars.Runtime)."""

    enabled: bool
    flush_deadline: int

    def anomaly(self, kind: str, node: Node | None, message: str) -> None: ...

    def define_global(self, name: str, value: Number) -> None: ...

    def flush(self) -> None: ...

    def mpi_counters(self, mpi_type: str) -> tuple[memoryview, int] | None: ...


class NodeFactory:
    """Makes the site nodes of every thread: checks the id, finds the annotation's source line, and gives the
    node its tolerance, CPU-time tracking and counter from the run's settings."""

    def __init__(self, settings: Settings, readers: Mapping[str, Callable[[], int] | None]) -> None:
        self.settings = settings
        self.readers = dict(readers)
        # Called with every new node when the run measures more per site (the cache simulation: sitecounts.py).
        self.site_probe: Callable[[Node], None] | None = None

    def __call__(self, parent: Node, type_: str, id_: str, expr_text: str | None, count: str | int | None) -> Node:
        if not isinstance(id_, str) or not id_ or "/" in id_:
            raise AnnotationError(f"a site id must be a non-empty string without '/', not {id_!r}")
        if count is not None and (isinstance(count, bool) or not isinstance(count, (str, int))):
            raise AnnotationError(f"{type_} {id_!r}: count must be an int or an expression, not {count!r}")
        file, line = caller()
        for what, text in (("id", id_), ("expression", expr_text), ("count", count)):
            if isinstance(text, str) and not is_unicode_text(text):
                raise AnnotationError(f"{file}:{line}: {type_} {what} {text[:80]!r} is not valid Unicode text (it "
                                      "holds a lone surrogate, as os.fsdecode makes of bytes that are not UTF-8); "
                                      "a trace must stay readable")
        if site_depth(parent) >= MAX_SITE_DEPTH:
            raise AnnotationError(f"{file}:{line}: {type_} {id_!r} would open level {MAX_SITE_DEPTH + 1} of the site "
                                  f"tree; it is at most {MAX_SITE_DEPTH} levels deep, so that every trace can be "
                                  "written and read back (a recursion annotated at every level is deeper than that)")
        cpu_time = self.settings.cpu_time
        track_cpu = cpu_time == "all" or (cpu_time == "subroutines" and type_ == "subroutine")
        node = Node(parent, type_, id_, expr_text, self.settings.tolerance_for(type_), file, line, count,
                    track_cpu, self.readers.get(type_))
        if self.site_probe is not None:
            self.site_probe(node)
        return node


def site_depth(node: Node) -> int:
    """Levels above ``node`` up to the root (the root is level 0). Walked only when a site is created."""
    depth = 0
    while node.parent is not None:
        node = node.parent
        depth += 1
    return depth


def is_unicode_text(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: a lone surrogate cannot (JSON would carry it as ``\\ud800``,
    which no reader can decode into text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def caller() -> tuple[str | None, int | None]:
    """File and line of the first frame outside the SDK: where the annotation is written."""
    frame = sys._getframe(1)
    while frame is not None and _is_sdk_module(frame.f_globals.get("__name__", "")):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None, None
    return frame.f_code.co_filename, frame.f_lineno


def _is_sdk_module(name: str) -> bool:
    return name == "ma" or name.startswith("ma_runtime.") or name == "contextlib"
