"""The MAPS backend (PMaC convolution): see :mod:`.backend` and docs/maps-backend.md."""

from .backend import MapsBackend, MapsPrediction

__all__ = ["MapsBackend", "MapsPrediction"]
