"""The one exception tree of the project: every error raised on purpose derives from MAError."""

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
