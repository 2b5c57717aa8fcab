"""Finding backends: every class registered under the entry-point group ``ma.backends``.

The project registers its own backends in ``pyproject.toml`` the same way a third-party package would::

    [project.entry-points."ma.backends"]
    maps = "backends.maps:MapsBackend"
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from ma_core.errors import BackendError

from .base import Backend

GROUP = "ma.backends"


@dataclass(frozen=True)
class BackendInfo:
    """One registered backend: its name, the object reference and the distribution that registers it."""

    name: str
    value: str
    distribution: str

    def load(self) -> type[Backend]:
        return load(self.name)


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: ep.name)


def installed() -> list[BackendInfo]:
    """Registered backends, by name (nothing is imported)."""
    infos = []
    for ep in _entry_points():
        dist = ep.dist.name if ep.dist is not None else "?"
        infos.append(BackendInfo(ep.name, ep.value, dist))
    return infos


def load(name: str) -> type[Backend]:
    """The backend class registered as ``name``; BackendError when it is missing or not a Backend."""
    matches = [ep for ep in _entry_points() if ep.name == name]
    if not matches:
        known = ", ".join(ep.name for ep in _entry_points()) or "none"
        raise BackendError(f"no backend named {name!r} is installed (entry-point group {GROUP!r}; installed: {known})")
    ep = matches[0]
    try:
        obj = ep.load()
    except Exception as exc:  # any import failure of third-party code becomes one clear error
        raise BackendError(f"backend {name!r} ({ep.value}) cannot be imported: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(obj, type) and issubclass(obj, Backend)):
        raise BackendError(f"backend {name!r} ({ep.value}) is not a subclass of backends.base.Backend")
    if name != obj.NAME:
        raise BackendError(f"backend {name!r} ({ep.value}) has NAME {obj.NAME!r}: the two must agree")
    return obj


def create(name: str) -> Backend:
    """An instance of the backend registered as ``name``."""
    return load(name)()
