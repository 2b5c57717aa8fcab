"""The bounds of the expression language, the same in the Python and the C runtime (ma_expr.h).

Every expression parses in time and memory linear in its length and evaluates in microseconds to
milliseconds, whatever its text or the values of its variables:

- ``MAX_LENGTH``: longer text is refused before parsing (annotation expressions are a line or two).
- ``MAX_DEPTH``: at most this many nested constructs — each parenthesis, function call, unary sign and
  exponent opens one; a chain of ``+ -`` or of ``* /`` at one level counts once, so a sum of any number of
  terms is fine. It bounds the recursion of the tree walks (compiler, SymPy converter, C evaluator).
- ``MAX_ARGUMENTS``: at most this many arguments to one call of ``min``/``max``.
- ``MAX_MAGNITUDE``: every number — literal, variable value, result of an operation — must be finite and at
  most the largest double (about 1.8e308) in magnitude; otherwise the expression fails with an
  ExpressionError at the column of the literal, variable or operator. Integers stay exact within that range
  in Python (in C up to 2^63 - 1, then doubles), so an integer power is computed only once its size is known
  to fit: ``9^9^9`` fails at once instead of computing a 370-million-digit number.
- ``MAX_EXACT_BITS``: the SymPy models of ma_post keep numbers exact (rationals), but a power of numbers whose
  exact numerator or denominator would need more bits than this takes the runtime's own value (a double, or its
  error) instead. A double's numerator and denominator take at most 1,075 bits each, so no value the runtime
  can hold is lost, and ``10^-100000000`` (the runtime's 0.0) is never computed as a 100-million-digit fraction.
"""

from __future__ import annotations

import sys

MAX_LENGTH = 10_000
MAX_DEPTH = 100
MAX_ARGUMENTS = 64
MAX_MAGNITUDE = sys.float_info.max
# 2^MAX_BITS > MAX_MAGNITUDE: an integer power whose bit length is past this cannot fit.
MAX_BITS = sys.float_info.max_exp  # 1024
# Decimal digits of the largest integer within MAX_MAGNITUDE (309); longer integer literals are refused unread.
MAX_INT_DIGITS = len(str(int(MAX_MAGNITUDE)))
# Bits of an exact numerator or denominator that a model's power of numbers may reach (past it: a double).
MAX_EXACT_BITS = 4096
