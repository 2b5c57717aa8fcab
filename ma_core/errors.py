"""The one exception tree of the project: every error the SDK raises on purpose derives from MAError, and every
class of the tree is defined here (the modules that raise them import them from here).

    MAError
    ├── ExpressionError              an expression that cannot be parsed or evaluated
    │   ├── UndefinedVariableError   it names a variable not declared where it is evaluated
    │   └── ExpressionDomainError    division by zero, log of a non-positive number
    ├── AnnotationError              an annotation used wrongly                       (ma, ma_runtime)
    ├── CounterError                 a counter provider that cannot be set up         (ma_runtime.counters)
    ├── LaunchError                  ``ma run`` could not start the job               (ma_tools.launch)
    ├── ToolBuildError               a C part could not be built                      (ma_tools)
    ├── TraceError                   a trace file missing, corrupt, of another schema (ma_post)
    ├── SiteNotFoundError            a site path the trace set does not have          (ma_post)
    ├── ModelError                   a model that cannot be built or evaluated        (ma_post)
    │   └── IterationSumError        an expression in iter with no closed-form sum   (ma_post.itersum)
    ├── RangeError                   a --set / --at value that is no number or range  (ma_post.studies)
    ├── LoopmarkError                the compiler's vectorisation report failed       (ma_post.loopmark)
    ├── SynthError                   a site tree that cannot become a synthetic trace (ma_post.interop)
    ├── ReplayError                  SimGrid's replay missing or failed               (ma_post.interop)
    ├── ProfileError                 a machine profile missing or with a bad field    (backends)
    ├── BackendError                 a backend missing or not implementing the API    (backends)
    ├── FitError                     data the bandwidth fit cannot use                (backends.machine)
    └── ProbeError                   a measurement of the machine probe that failed   (backends.machine)
        ├── CPUTermsError            a CPU-term kernel timed at zero or less
        ├── PythonExchangeError      the Python exchange probe failed
        └── SubscriptProbeError      a subscript loop timed no slower than its bare twin

``ma_cli`` is the one place that turns them into a one-line message and an exit status.
"""

from __future__ import annotations


class MAError(Exception):
    """Root of every error the SDK raises on purpose."""


class ExpressionError(MAError):
    """An expression that cannot be parsed or evaluated.

    ``text`` is the expression, ``column`` the 1-based column of the problem (0 when it concerns the
    whole expression) and ``expected`` a short description of what would have been valid there.
    """

    def __init__(self, text: str, message: str, column: int = 0, expected: str = "") -> None:
        self.text = text
        self.column = column
        self.expected = expected
        where = f" at column {column}" if column else ""
        hint = f" (expected {expected})" if expected else ""
        super().__init__(f"expression {quoted_head(text)}{where}: {message}{hint}{pointer_lines(text, column)}")


# An expression may be megabytes long: messages quote its start and a window around the column, never all of it.
# The C runtime (ma_expr.c, report()) formats the same way, so both runtimes print the same message.
HEAD_CHARS = 100
WINDOW_CHARS = 40


def quoted_head(text: str) -> str:
    """``repr`` of the text, cut after HEAD_CHARS characters with '...' inside the quotes."""
    return repr(text if len(text) <= HEAD_CHARS else text[:HEAD_CHARS] + "...")


def pointer_lines(text: str, column: int) -> str:
    """The text around ``column`` (1-based, counted from the start of the whole text) and a caret under it.

    Line breaks and tabs show as spaces so that the caret stays under the character it points at.
    """
    if not column:
        return ""
    at = column - 1
    start, end = max(0, at - WINDOW_CHARS), min(len(text), at + WINDOW_CHARS)
    before = "..." if start > 0 else ""
    after = "..." if end < len(text) else ""
    window = "".join(c if c.isprintable() else " " for c in text[start:end])
    return f"\n    {before}{window}{after}\n    {' ' * (len(before) + at - start)}^"


class UndefinedVariableError(ExpressionError):
    """An expression names a variable that is not declared in the scope where it is evaluated."""

    def __init__(self, text: str, name: str, column: int = 0) -> None:
        self.name = name
        super().__init__(text, f"variable {name!r} is not defined", column,
                         "a variable declared with ma.variable or ma.assign")


class ExpressionDomainError(ExpressionError):
    """Division by zero, the logarithm of a non-positive number and the like."""


class AnnotationError(MAError):
    """An annotation used wrongly (bad identifier, wrong type of value, misuse of the API)."""


class CounterError(MAError):
    """A counter provider that cannot be set up as asked."""


class LaunchError(MAError):
    """``ma run`` could not start the job (no launcher, bad arguments)."""


class ToolBuildError(MAError):
    """A C part of the project (PMPI library, C runtime, Valgrind tool) could not be built."""


class ModelError(MAError):
    """A model that cannot be built or evaluated as asked (unknown quantity, inconsistent definitions, an input
    with no value)."""


class IterationSumError(ModelError):
    """An expression in ``iter`` whose sum over a loop's iterations has no closed form here."""


class SiteNotFoundError(MAError):
    """A site asked for by path that the trace set does not have (or has more than once)."""


class TraceError(MAError):
    """A trace file that is missing, truncated, corrupt or of an unknown schema version."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class ProfileError(MAError):
    """A machine profile that is missing, not JSON, of an unknown schema version or with a bad field.

    ``path`` is the file, ``field`` the JSON path of the offending field (``caches[1].size_bytes``; empty when
    the problem concerns the whole document).
    """

    def __init__(self, path: str, message: str, field: str = "") -> None:
        self.path = path
        self.field = field
        where = f": field {field!r}" if field else ""
        super().__init__(f"{path}{where}: {message}")


class BackendError(MAError):
    """A machine backend that is not installed, cannot be imported or does not implement the interface."""


class FitError(MAError):
    """Data the bandwidth fit cannot use (shapes, hit rates that are not cumulative, bandwidths <= 0)."""


class ProbeError(MAError):
    """A measurement of the probe that failed (the MPI ping-pong, an allocation)."""


class CPUTermsError(ProbeError):
    """A CPU-term measurement that gave no usable figure (a kernel timed at zero or less)."""


class PythonExchangeError(ProbeError):
    """The Python exchange probe failed (no mpiexec, a rank's error, unreadable output)."""


class SubscriptProbeError(ProbeError):
    """A subscript timing that gave no usable figure (a loop timed no slower than its bare twin)."""


class RangeError(MAError):
    """A --set or --at value that is not a number, list or range."""


class LoopmarkError(MAError):
    """The compiler could not be run on the source, or the source could not be read."""


class SynthError(MAError):
    """The site tree cannot be turned into a synthetic trace (names the site and what is missing)."""


class ReplayError(MAError):
    """smpirun is missing or the replay failed (its output is in the message)."""
