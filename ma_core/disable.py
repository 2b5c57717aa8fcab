"""``MA_DISABLE``: the switch that turns every annotation off (the Python API binds no-ops, libma returns at once,
``ma run`` says so instead of asking for traces). The C runtime reads the same words (env_true in libma)."""

from __future__ import annotations

from collections.abc import Mapping

VARIABLE = "MA_DISABLE"
TRUE_WORDS = ("1", "true", "yes", "on")


def annotations_disabled(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` turns the annotations off (``MA_DISABLE=1``, ``true``, ``yes`` or ``on``)."""
    return environ.get(VARIABLE, "").strip().lower() in TRUE_WORDS


__all__ = ["TRUE_WORDS", "VARIABLE", "annotations_disabled"]
