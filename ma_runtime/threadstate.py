"""Per-thread state of MARS: the site tree, the stack of open annotations, the visible variables.

Variables use shallow binding: ``env`` maps every visible name to its value, and each open scope keeps an
undo list restoring what its declarations shadowed, so a lookup during evaluation is one dict access.
``iter``, the iteration (from 0) of the innermost open loop that counts its iterations, is not in ``env``: an
expression that uses it is evaluated in ``env`` plus ``iter`` (``env_for``), at every call.
Compiled with Cython where available (threadstate.pxd declares the fields), plain Python otherwise.
"""

from __future__ import annotations

import time
from operator import length_hint
from typing import TYPE_CHECKING, Any

from ma_core.errors import UndefinedVariableError

from .tree import Node, new_root

if TYPE_CHECKING:
    from .sites import NodeFactory, OpenAnnotation, RuntimeHooks

Number = int | float
_MISSING = object()
# Annotation types that open a variable scope.
SCOPE_TYPES = frozenset(("subroutine", "loop"))
ITER = "iter"
_FROM_RANGE = -2  # loop.n while lp.range counts (annotations.py)
_ITER_HINT = ("iter is the iteration (from 0) of the innermost open loop that counts its iterations "
              "(for ... in lp.range(...) or lp.iter(...)); none is open here")


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

    def iteration(self) -> int | None:
        """The iteration (from 0) the innermost open loop is in, when it counts its iterations; else None."""
        return current_iteration(self.top)

    def env_for(self, symbols: Any) -> dict[str, Number]:
        """The variables to evaluate an expression of ``symbols`` with: ``env``, plus ``iter`` when it uses it
        and the program declared no variable of that name."""
        env = self.env
        if ITER in symbols and ITER not in env:
            iteration = current_iteration(self.top)
            if iteration is not None:
                return {**env, ITER: iteration}
        return env

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
            env = self.env_for((ITER,)) if node.uses_iter else self.env
            try:
                node.cache_value = node.expression.evaluate(env)  # type: ignore[union-attr]
                if node.count_expression is not None:
                    node.cache_count = node.count_expression.evaluate(env)
            except Exception as exc:
                self.runtime.anomaly("evaluation", node, str(exc))
                if hasattr(exc, "add_note"):
                    if isinstance(exc, UndefinedVariableError) and exc.name == ITER:
                        exc.add_note(_ITER_HINT)
                    exc.add_note(f"in the {node.type} assertion {node.id!r} at {node.file}:{node.line}")
                raise
            # A value in iter changes with the iteration: evaluated again at every call.
            node.cache_version = -1 if node.uses_iter and env is not self.env else self.version
        return node.cache_value

    def close_above(self, frame: OpenAnnotation) -> None:
        """``frame`` ends while annotations opened after it are still open: close those as unbalanced."""
        while self.top is not None and self.top is not frame:
            inner = self.top
            self.runtime.anomaly("unbalanced", inner.node,
                                 f"{inner.TYPE} {inner.id!r} was still open when {frame.TYPE} {frame.id!r} ended")
            inner.finish(None, time.perf_counter_ns(), time.process_time_ns(), unbalanced=True)


def current_iteration(frame: Any) -> int | None:
    """The iteration (from 0) the innermost loop open at ``frame`` or above it is in, when the loop counts its
    iterations (``lp.range``, ``lp.iter``); None otherwise (also before its first iteration)."""
    while frame is not None and getattr(frame, "TYPE", None) != "loop":
        frame = getattr(frame, "outer", None)
    if frame is None:
        return None
    if frame.n == _FROM_RANGE:
        started = int(frame.length - length_hint(frame.items))
        return started - 1 if started >= 1 else None
    return int(frame.n) - 1 if frame.n >= 1 else None
