"""Parameter values of a study: ``--set NAME=SPEC`` with lists, ranges and geometric ranges.

A SPEC is a comma-separated list of items; each item is one of

- a number, written in the annotation expression language without variables: ``150000``, ``1.5e5``,
  ``2^10``, ``75*2``;
- ``A:B`` the numbers A, A+1, ..., up to B; ``A:B:S`` with step S (S may be negative when B < A);
- ``A:B:linN`` N evenly spaced numbers from A to B, ``A:B:logN`` N geometrically spaced ones
  (``1e5:1e6:log10``: ten values from 10^5 to 10^6, equal ratios);
- ``BASE^(RANGE)`` the powers of BASE over a range: ``2^(0:12)`` is 1, 2, 4, ..., 4096.

Numbers go through the lark grammar of ``ma_core.expr`` and its evaluator; nothing is ``eval``-ed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from ma_core.errors import MAError, RangeError

MAX_VALUES = 10_000_000  # values of one parameter; a guard against a mistyped step


def parse_assignment(item: str, *, option: str = "--set") -> tuple[str, np.ndarray]:
    """``"na=1e5:1e6:log10"`` -> ``("na", array of 10 values)``."""
    name, sep, spec = item.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or not spec.strip():
        raise RangeError(f"{option} {item!r}: expected NAME=VALUES, e.g. na=150000, na=1e5:1e6:log10, "
                         "nprocs=2^(0:12) or nprocs=1,4,16")
    try:
        return name, parse_values(spec)
    except RangeError as exc:
        raise RangeError(f"{option} {item!r}: {exc}") from None


def parse_assignments(items: Iterable[str], *, option: str = "--set") -> dict[str, np.ndarray]:
    """Several NAME=SPEC items; a name given twice is an error (which one was meant?)."""
    out: dict[str, np.ndarray] = {}
    for item in items:
        name, values = parse_assignment(item, option=option)
        if name in out:
            raise RangeError(f"{option} {item!r}: {name} is already set")
        out[name] = values
    return out


def parse_point(items: Iterable[str], *, option: str = "--at") -> dict[str, float]:
    """NAME=VALUE items that name one point: one value per parameter (a sweep takes ranges, a point does not)."""
    point = {}
    for name, values in parse_assignments(items, option=option).items():
        if len(values) != 1:
            raise RangeError(f"{option} {name}=...: one value per parameter (ma sweep takes ranges)")
        point[name] = float(values[0])
    return point


def parse_values(spec: str) -> np.ndarray:
    """The float64 values of one SPEC (see the module docstring), in the order written."""
    values: list[float] = []
    for item in _split_top_level(spec, ","):
        values.extend(_item_values(item.strip()))
        if len(values) > MAX_VALUES:
            raise RangeError(f"more than {MAX_VALUES:,} values")
    if not values:
        raise RangeError("no values")
    return np.asarray(values, dtype=float)


_POWER = re.compile(r"^(?P<base>.+?)\s*\^\s*\((?P<inner>.*)\)$")


def _item_values(item: str) -> list[float]:
    if not item:
        raise RangeError("an empty item")
    match = _POWER.match(item)
    if match and len(_split_top_level(match.group("inner"), ":")) > 1:
        base = number(match.group("base"))
        exponents = _range_values(match.group("inner"))
        with np.errstate(over="ignore"):
            powers = np.power(base, np.asarray(exponents, dtype=float))
        if not np.all(np.isfinite(powers)):
            raise RangeError(f"{item!r}: a power overflows")
        return [float(v) for v in powers]
    if len(_split_top_level(item, ":")) > 1:
        return _range_values(item)
    return [number(item)]


def _range_values(text: str) -> list[float]:
    parts = [p.strip() for p in _split_top_level(text, ":")]
    if len(parts) not in (2, 3):
        raise RangeError(f"{text!r}: a range is A:B, A:B:STEP, A:B:linN or A:B:logN")
    start, stop = number(parts[0]), number(parts[1])
    how = parts[2] if len(parts) == 3 else "1"
    spaced = re.fullmatch(r"(lin|log)\s*(\d+)", how)
    if spaced:
        count = int(spaced.group(2))
        if count < 1 or count > MAX_VALUES:
            raise RangeError(f"{text!r}: the number of values must be 1..{MAX_VALUES:,}")
        if spaced.group(1) == "lin":
            return [float(v) for v in np.linspace(start, stop, count)]
        if start <= 0 or stop <= 0:
            raise RangeError(f"{text!r}: a geometric range needs positive ends")
        return [float(v) for v in np.geomspace(start, stop, count)]
    step = number(how)
    if step == 0 or (stop - start) * step < 0:
        raise RangeError(f"{text!r}: the step {how} does not lead from {parts[0]} to {parts[1]}")
    count = int(np.floor((stop - start) / step + 1e-9)) + 1
    if count > MAX_VALUES:
        raise RangeError(f"{text!r}: {count:,} values, more than {MAX_VALUES:,}")
    return [float(start + k * step) for k in range(count)]


def number(text: str) -> float:
    """A constant in the expression language (``1e5``, ``2^10``); RangeError naming the text otherwise."""
    from ma_core.expr import parse_expression

    text = text.strip()
    try:
        expression = parse_expression(text)
    except MAError as exc:
        raise RangeError(f"{text!r} is not a number ({exc})") from None
    if expression.symbols:
        raise RangeError(f"{text!r} is not a number (it names {', '.join(sorted(expression.symbols))})")
    try:
        value = float(expression.evaluate({}))
    except (MAError, OverflowError) as exc:
        raise RangeError(f"{text!r} cannot be evaluated ({exc})") from None
    if not np.isfinite(value):
        raise RangeError(f"{text!r} is not finite")
    return value


def _split_top_level(text: str, separator: str) -> list[str]:
    """Split on ``separator`` outside parentheses (``min(1,2),3`` is two items)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise RangeError(f"{text!r}: unbalanced ')' at column {i + 1}")
        elif char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise RangeError(f"{text!r}: unbalanced '('")
    parts.append(text[start:])
    return parts


def is_geometric(values: Sequence[float] | np.ndarray) -> bool:
    """Whether an axis reads best on a log scale: positive with equal ratios, or spanning over two decades."""
    v = np.asarray(values, dtype=float)
    if v.size < 2 or np.any(v <= 0):
        return False
    lo, hi = float(v.min()), float(v.max())
    if hi / lo > 100:
        return True
    if v.size < 3:
        return False
    ratios = v[1:] / v[:-1]
    return bool(np.allclose(ratios, ratios[0], rtol=1e-6) and abs(ratios[0] - 1) > 1e-6)
