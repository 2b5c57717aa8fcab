"""Syntax tree to a Python closure over a variable mapping: built once per expression, cheap to call.

Arithmetic stays exact on integers where the result is an integer (``8*na/2`` is an int when it divides),
so trip counts and byte counts compare exactly with what the program measured.

Every result stays finite and within MAX_MAGNITUDE (limits.py): each operation checks its result with one
comparison, an integer power checks the size of its result before computing it, and a variable read checks
that a float value is finite (an int is the program's own count, taken as it is; any operation on it is
bounded). A value of another numeric type (NumPy's ``int64``, ``float32``) is read as a Python int or
float, so that its operations are checked the same way. A run of ``+ -`` or ``* /`` is evaluated in a loop,
so closures nest only as deep as the expression nests.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

from .limits import MAX_BITS, MAX_MAGNITUDE
from .nodes import BinOp, Call, Neg, Node, Num, Var, chain

Number = int | float
Evaluator = Callable[[Mapping[str, Number]], Number]


class DomainProblem(Exception):
    """Raised inside a closure; Expression.evaluate turns it into an ExpressionDomainError."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


_MAX = MAX_MAGNITUDE
# The same bound as an int: compared with an int result (the common case) it is a cheaper test; compared with a
# float it is exact too (every float <= MAX_MAGNITUDE; inf is past it; NaN fails every comparison).
_IMAX, _NEG_IMAX = int(MAX_MAGNITUDE), -int(MAX_MAGNITUDE)


def _out_of_range(value: Number, column: int, name: str | None = None) -> DomainProblem:
    """The error for a value past MAX_MAGNITUDE or NaN: an operation's result, or a variable's value."""
    subject = f"variable {name!r} is" if name is not None else "result is"
    if value != value:
        return DomainProblem(f"{subject} not a number (NaN)", column)
    return DomainProblem(f"{subject} too large (magnitude over {_MAX!r})", column)


def _divide(a: Number, b: Number, column: int) -> Number:
    if b == 0:
        raise DomainProblem("division by zero", column)
    value = a // b if isinstance(a, int) and isinstance(b, int) and a % b == 0 else a / b
    if -_MAX <= value <= _MAX:
        return value
    raise _out_of_range(value, column)


def power(a: Number, b: Number, column: int) -> Number:
    """``a^b`` as the runtime computes it (exact on integers, else doubles), or DomainProblem."""
    if isinstance(a, int) and isinstance(b, int) and b >= 0:
        # |a|^b needs about b*log2|a| bits: refuse one past MAX_BITS before computing it (9^9^9).
        if abs(a) > 1 and b * (abs(a).bit_length() - 1) > MAX_BITS:
            raise _out_of_range(math.inf, column)
        value: Number = a**b
    else:
        if a == 0 and b < 0:
            raise DomainProblem("zero raised to a negative power", column)
        if a < 0 and not float(b).is_integer():
            raise DomainProblem("negative number raised to a fractional power", column)
        try:
            value = float(a) ** float(b)
        except OverflowError:
            raise _out_of_range(math.inf, column) from None
    if -_MAX <= value <= _MAX:
        return value
    raise _out_of_range(value, column)


def _integral(x: float) -> Number:
    return int(x) if math.isfinite(x) else x


def _log_of(fn: Callable[[float], float], name: str) -> Callable[[Number, int], Number]:
    def log(x: Number, column: int) -> Number:
        if x <= 0:
            raise DomainProblem(f"{name} of a non-positive number ({x})", column)
        return fn(x)

    return log


def _sqrt(x: Number, column: int) -> Number:
    if x < 0:
        raise DomainProblem(f"sqrt of a negative number ({x})", column)
    root = math.isqrt(x) if isinstance(x, int) else -1
    return root if root >= 0 and root * root == x else math.sqrt(x)


def _exp(x: Number, column: int) -> Number:
    try:
        return math.exp(x)
    except OverflowError:
        raise DomainProblem("exp overflows", column) from None


def _mod(a: Number, b: Number, column: int) -> Number:
    # Octave's mod: mod(x, 0) = x, the result takes the sign of b (as Python's % does).
    return a if b == 0 else a % b


_UNARY: dict[str, Callable[[Number, int], Number]] = {
    "ceil": lambda x, c: math.ceil(x) if isinstance(x, float) else x,
    "floor": lambda x, c: math.floor(x) if isinstance(x, float) else x,
    "abs": lambda x, c: abs(x),
    "log": _log_of(math.log, "log"),
    "log2": _log_of(math.log2, "log2"),
    "log10": _log_of(math.log10, "log10"),
    "exp": _exp,
    "sqrt": _sqrt,
}


def compile_node(node: Node) -> Evaluator:
    """Closure evaluating ``node`` against a mapping of variable values.

    Built bottom-up with an explicit stack (no recursion while compiling); the closures call each other
    only as deep as the expression nests, a run of ``+ -`` or ``* /`` being one closure with a loop."""
    built: dict[int, Evaluator] = {}  # by id() of the node: the tree is alive throughout
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        current, ready = stack.pop()
        if ready:
            built[id(current)] = _compile_one(current, [built.pop(id(child)) for child in _operands(current)])
        else:
            stack.append((current, True))
            stack.extend((child, False) for child in reversed(_operands(current)))
    return built[id(node)]


def _operands(node: Node) -> list[Node]:
    """What a node's closure evaluates: a run's first operand and the right operand of each of its steps."""
    if isinstance(node, Neg):
        return [node.operand]
    if isinstance(node, BinOp):
        first, ops = chain(node)
        return [first, *(op.right for op in ops)]
    if isinstance(node, Call):
        return list(node.args)
    return []


def _compile_one(node: Node, operands: list[Evaluator]) -> Evaluator:
    if isinstance(node, Num):
        value = node.value
        return lambda env: value
    if isinstance(node, Var):
        return _compile_var(node)
    if isinstance(node, Neg):
        (inner,) = operands
        return lambda env: -inner(env)
    if isinstance(node, BinOp):
        return _compile_binop(node, operands)
    return _compile_call(node, operands)


def _compile_var(node: Var) -> Evaluator:
    name, column = node.name, node.column

    def read(env: Mapping[str, Number]) -> Number:
        value = env[name]
        kind = value.__class__
        if kind is int:  # the program's own count: as it is (any operation on it is bounded)
            return value
        if kind is float:
            if -_MAX <= value <= _MAX:
                return value
            raise _out_of_range(value, column, name)
        return _converted(value, column, name)

    return read


def _converted(value: object, column: int, name: str) -> Number:
    """A value of another numeric type (NumPy's ``int64``, ``float32``, a Fraction) as a Python int or float, so
    that every operation on it is checked as on the built-in types: NumPy's fixed-width integers would wrap
    silently (``int64(2**62) * 4`` is 0) and its small floats overflow at their own width."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):  # text is not (NumPy's str_ has __float__), nor a complex value
        try:
            number = float(value)
        except (OverflowError, ValueError):  # a Fraction or Decimal past the double range
            raise _out_of_range(math.inf, column, name) from None
        if -_MAX <= number <= _MAX:
            return number
        raise _out_of_range(number, column, name)
    raise DomainProblem(f"variable {name!r} is {type(value).__name__} {str(value)[:40]!r}, not a number", column)


_OPERATIONS: dict[str, Callable[[Number, Number, int], Number]] = {"/": _divide, "^": power}


def _compile_binop(node: BinOp, operands: list[Evaluator]) -> Evaluator:
    _, ops = chain(node)
    start = operands[0]
    if len(ops) == 1:
        return _binary(node.op, start, operands[1], node.column)
    # A run of one level in a loop, + - * inline (no call per step); / through _divide for exact integers.
    steps = [(op.op, operand, op.column) for op, operand in zip(ops, operands[1:], strict=True)]
    if node.op in "+-":
        def run_sum(env: Mapping[str, Number]) -> Number:
            value = start(env)
            for op, operand, column in steps:
                value = value + operand(env) if op == "+" else value - operand(env)
                if not _NEG_IMAX <= value <= _IMAX:
                    raise _out_of_range(value, column)
            return value

        return run_sum

    def run_product(env: Mapping[str, Number]) -> Number:
        value = start(env)
        for op, operand, column in steps:
            if op == "*":
                value = value * operand(env)
                if not _NEG_IMAX <= value <= _IMAX:
                    raise _out_of_range(value, column)
            else:
                value = _divide(value, operand(env), column)
        return value

    return run_product


def _binary(op: str, left: Evaluator, right: Evaluator, column: int) -> Evaluator:
    """One operation: + - * checked inline (the common case, one call per node); / and ^ through helpers."""
    if op == "+":
        def add(env: Mapping[str, Number]) -> Number:
            value = left(env) + right(env)
            if _NEG_IMAX <= value <= _IMAX:
                return value
            raise _out_of_range(value, column)

        return add
    if op == "-":
        def subtract(env: Mapping[str, Number]) -> Number:
            value = left(env) - right(env)
            if _NEG_IMAX <= value <= _IMAX:
                return value
            raise _out_of_range(value, column)

        return subtract
    if op == "*":
        def multiply(env: Mapping[str, Number]) -> Number:
            value = left(env) * right(env)
            if _NEG_IMAX <= value <= _IMAX:
                return value
            raise _out_of_range(value, column)

        return multiply
    operation = _OPERATIONS[op]
    return lambda env: operation(left(env), right(env), column)


def _compile_call(node: Call, args: list[Evaluator]) -> Evaluator:
    column = node.column
    if node.func in _UNARY:
        fn, (arg,) = _UNARY[node.func], args
        if node.func in ("ceil", "floor"):
            return lambda env: _integral(fn(arg(env), column))
        return lambda env: fn(arg(env), column)
    if node.func == "mod":
        a, b = args
        return lambda env: _mod(a(env), b(env), column)
    pick = min if node.func == "min" else max
    return lambda env: pick(f(env) for f in args)
