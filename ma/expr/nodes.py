"""Syntax tree of an expression. Shared by the runtime evaluator and the SymPy converter of ma_post."""

from __future__ import annotations

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


def free_symbols(node: Node) -> frozenset[str]:
    """The identifiers an expression reads."""
    if isinstance(node, Var):
        return frozenset((node.name,))
    if isinstance(node, Num):
        return frozenset()
    if isinstance(node, Neg):
        return free_symbols(node.operand)
    if isinstance(node, BinOp):
        return free_symbols(node.left) | free_symbols(node.right)
    return frozenset().union(*(free_symbols(a) for a in node.args))
