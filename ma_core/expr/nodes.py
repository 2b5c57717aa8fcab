"""Syntax tree of an expression. Shared by the runtime evaluator and the SymPy converter of ma_post."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# Functions of the language and how many arguments each takes (None: two or more).
FUNCTIONS: dict[str, int | None] = {
    "ceil": 1, "floor": 1, "log": 1, "log2": 1, "log10": 1, "exp": 1, "sqrt": 1, "abs": 1,
    "min": None, "max": None, "mod": 2,
}


@dataclass(frozen=True, slots=True)
class Num:
    value: int | float
    column: int


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    column: int


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Node
    column: int


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str  # one of + - * / ^
    left: Node
    right: Node
    column: int


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple[Node, ...]
    column: int


Node = Num | Var | Neg | BinOp | Call


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children, left to right; an explicit stack, no recursion
    (a chain such as 1+1+...+1 is as deep as it is long)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, Neg):
            stack.append(current.operand)
        elif isinstance(current, BinOp):
            stack.extend((current.right, current.left))
        elif isinstance(current, Call):
            stack.extend(reversed(current.args))


def chain(node: BinOp) -> tuple[Node, list[BinOp]]:
    """A left-associative run of one precedence level, ``a - b + c`` or ``a * b / c``: its first operand
    and its operators from left to right (each BinOp's ``right`` is the next operand). Walks and
    evaluators use it to handle such a run in a loop: the tree is as deep as the run is long."""
    level = _LEVEL[node.op]
    if not level:
        return node.left, [node]
    steps: list[BinOp] = []
    current: Node = node
    while isinstance(current, BinOp) and _LEVEL[current.op] == level:
        steps.append(current)
        current = current.left
    steps.reverse()
    return current, steps


_LEVEL = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 0}  # 0: right-associative, never a left-associative run


def free_symbols(node: Node) -> frozenset[str]:
    """The identifiers an expression reads."""
    return frozenset(n.name for n in walk(node) if isinstance(n, Var))
