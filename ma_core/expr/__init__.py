"""The expression language of modeling assertions (grammar in grammar.lark)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ExpressionDomainError, ExpressionError, UndefinedVariableError
from ..errors import ExpressionError as _ExpressionError
from .compiler import DomainProblem, Evaluator, compile_node
from .nodes import FUNCTIONS, BinOp, Call, Neg, Node, Num, Var, free_symbols, walk
from .parser import parse_tree

Number = int | float

__all__ = [
    "FUNCTIONS",
    "BinOp",
    "Call",
    "Expression",
    "Neg",
    "Node",
    "Num",
    "Number",
    "Var",
    "parse_expression",
]


class Expression:
    """A parsed expression: its text, the names it reads and a compiled evaluator."""

    __slots__ = ("_evaluate", "symbols", "text", "tree")

    def __init__(self, text: str, tree: Node) -> None:
        self.text = text
        self.tree = tree
        self.symbols: frozenset[str] = free_symbols(tree)
        self._evaluate: Evaluator = compile_node(tree)

    def evaluate(self, mapping: Mapping[str, Number]) -> Number:
        """Value of the expression with the variables in ``mapping``."""
        try:
            return self._evaluate(mapping)
        except KeyError as exc:
            name = exc.args[0] if exc.args else "?"
            if name not in self.symbols:
                raise
            raise UndefinedVariableError(self.text, name, _column_of(self.tree, name)) from None
        except DomainProblem as exc:
            raise ExpressionDomainError(self.text, str(exc), exc.column) from None
        except (TypeError, ValueError, OverflowError) as exc:  # e.g. a value of the wrong type in the mapping
            raise ExpressionDomainError(self.text, f"cannot evaluate: {exc}", self.tree.column) from None
        except RecursionError:  # at most MAX_DEPTH levels, but the caller may already stand deep in its stack
            raise ExpressionDomainError(self.text, "cannot evaluate: the calling program's stack is too deep",
                                        self.tree.column) from None

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


_CACHE: dict[str, Expression] = {}
_CACHE_LIMIT = 65536
# Also bounded by the text it holds: a tree and its closures take ~100 bytes per character of text, and an
# expression may be MAX_LENGTH characters long.
_CACHE_CHARS_LIMIT = 1_000_000
_cached_chars = 0


def parse_expression(text: str) -> Expression:
    """Parse ``text`` once; later calls with the same text return the same compiled Expression."""
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    global _cached_chars
    tree = parse_tree(text)
    try:
        expression = Expression(text, tree)
    except RecursionError:  # compiling recurses MAX_DEPTH levels at most, but the caller may stand deep already
        raise _ExpressionError(text, "cannot compile: the calling program's stack is too deep", tree.column) from None
    if len(_CACHE) >= _CACHE_LIMIT or _cached_chars + len(text) > _CACHE_CHARS_LIMIT:
        _CACHE.clear()
        _cached_chars = 0
    _CACHE[text] = expression
    _cached_chars += len(text)
    return expression


def _column_of(node: Node, name: str) -> int:
    return next((n.column for n in walk(node) if isinstance(n, Var) and n.name == name), 0)


del ExpressionError  # re-exported from ma, not from here
