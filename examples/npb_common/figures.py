"""Matplotlib for the studies' figures: files only, no display."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported here: the ports themselves never need it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> None:
    """Lay out, write at 120 dpi and free the figure."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
