"""Progress bars for long work: shown on a terminal (stderr), silent when stderr is not one."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def enabled() -> bool:
    return sys.stderr.isatty()


def progress(items: Iterable[T], *, total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    """``items`` with a tqdm bar on a terminal; the plain iterator otherwise (pipes and logs stay clean)."""
    if not enabled():
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=desc, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True)
