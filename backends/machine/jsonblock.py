"""Writing a typed block back as the JSON document holds it: optional fields only where they hold something."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def present(**fields: Any) -> dict[str, Any]:
    """The fields that hold something (not None, not an empty list or object), a typed block as its ``to_json``."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None or (isinstance(value, (Mapping, list, tuple)) and not value):
            continue
        if hasattr(value, "to_json"):
            value = value.to_json()
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, tuple):
            value = [v.to_json() if hasattr(v, "to_json") else v for v in value]
        out[name] = value
    return out
