"""The function that ``@ma.subroutine("id")`` puts in place of the decorated one.

Kept out of the compiled annotations module, where functions are built without binding (so that ``with``
calls the annotation methods directly) and could not carry the decorated function's name and docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def in_subroutine(region: Callable[[str], Any], site: str, func: F) -> F:
    """``func`` run inside ``with region(site):`` at every call."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with region(site):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
