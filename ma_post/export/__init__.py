"""Exporters of symbolic models: Octave/MATLAB function files, a NumPy module, C sources."""

from .c import c_sources, export_c
from .common import function_name
from .octave import export_octave, octave_function
from .python import export_python, python_module

__all__ = ["c_sources", "export_c", "export_octave", "export_python", "function_name", "octave_function",
           "python_module"]
