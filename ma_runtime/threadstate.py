"""Per-thread state of MARS: the site tree, the stack of open annotations, the visible variables.

Variables use shallow binding: ``env`` maps every visible name to its value, and each open scope keeps an
undo list restoring what its declarations shadowed, so a lookup during evaluation is one dict access.
Compiled with Cython where available (threadstate.pxd declares the fields), plain Python otherwise.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .tree import Node, new_root

if TYPE_CHECKING:
    from .sites import NodeFactory, OpenAnnotation, RuntimeHooks

Number = int | float
_MISSING = object()
# Annotation types that open a variable scope.
SCOPE_TYPES = frozenset(("subroutine", "loop"))


class ThreadState:
    __slots__ = ("current", "enabled", "env", "flush_deadline", "index", "name", "new_node", "root", "runtime", "top",
                 "version")

    def __init__(self, runtime: RuntimeHooks, new_node: NodeFactory, index: int, name: str,
                 env: dict[str, Number]) -> None:
        self.runtime = runtime
        self.new_node = new_node
        self.index = index
        self.name = name
        self.root = new_root()
        self.current: Node = self.root
        # The open annotations form a chain from the innermost (top) through each one's ``outer``:
        # pushing and popping are two stores, where a list would reallocate at every shallow push/pop.
        self.top: OpenAnnotation | None = None
        self.env = env
        self.version = 0  # bumped whenever env changes, so nodes may cache their predicted value
        self.enabled = runtime.enabled
        self.flush_deadline = runtime.flush_deadline

    # --- variables -------------------------------------------------------------------------------
    def open_frames(self) -> list[OpenAnnotation]:
        """The open annotations, innermost first."""
        frames = []
        frame = self.top
        while frame is not None:
            frames.append(frame)
            frame = frame.outer
        return frames

    def scope_frame(self) -> OpenAnnotation | None:
        for frame in self.open_frames():
            if frame.TYPE in SCOPE_TYPES:
                return frame
        return None

    def define(self, name: str, value: Number) -> None:
        frame = self.scope_frame()
        if frame is None:
            self.runtime.define_global(name, value)
            return
        old = self.env.get(name, _MISSING)
        if frame.undo is None:
            frame.undo = []
        frame.undo.append((name, old))
        self.env[name] = value
        self.version += 1

    def undo(self, entries: list[tuple[str, Any]]) -> None:
        env = self.env
        for name, old in reversed(entries):
            if old is _MISSING:
                env.pop(name, None)
            else:
                env[name] = old
        self.version += 1

    # --- sites ---------------------------------------------------------------------------------
    def child(self, type_: str, id_: str, expr_text: str | None, count: str | int | None = None) -> Node:
        """The node for (type, id) below the current one, created on first use."""
        parent = self.current
        key = id_
        node = parent.children.get(key)
        if node is not None and node.type != type_:
            key = f"{type_}:{id_}"
            node = parent.children.get(key)
        if node is None:
            node = self.new_node(parent, type_, id_, expr_text, count)
            parent.children[key] = node
        elif node.expr_text != expr_text or node.count_text != (None if count is None else str(count)):
            self.runtime.anomaly("expression_changed", node,
                                 f"{type_} {id_!r} was first asserted as {node.expr_text!r}, now {expr_text!r}; "
                                 "the first expression is kept")
        return node

    def predict(self, node: Node) -> Number:
        """Value of the node's expression in the current scope (cached until a variable changes)."""
        if node.cache_version != self.version:
            try:
                node.cache_value = node.expression.evaluate(self.env)  # type: ignore[union-attr]
                if node.count_expression is not None:
                    node.cache_count = node.count_expression.evaluate(self.env)
            except Exception as exc:
                self.runtime.anomaly("evaluation", node, str(exc))
                if hasattr(exc, "add_note"):
                    exc.add_note(f"in the {node.type} assertion {node.id!r} at {node.file}:{node.line}")
                raise
            node.cache_version = self.version
        return node.cache_value

    def close_above(self, frame: OpenAnnotation) -> None:
        """``frame`` ends while annotations opened after it are still open: close those as unbalanced."""
        while self.top is not None and self.top is not frame:
            inner = self.top
            self.runtime.anomaly("unbalanced", inner.node,
                                 f"{inner.TYPE} {inner.id!r} was still open when {frame.TYPE} {frame.id!r} ended")
            inner.finish(None, time.perf_counter_ns(), time.process_time_ns(), unbalanced=True)
