"""Where the SDK's C parts are once built: the runtime finds and loads them here, and never builds them.

The PMPI library, the C runtime and the Valgrind tool are built per Python environment (they bind to the
environment's MPI) by ``ma tools build`` (package ``ma_tools``) into ``MA_BUILD_DIR`` or
``<sys.prefix>/lib/ma-sdk``. Every product has a stamp beside it, ``<product>.stamp``: a JSON object whose
``fingerprint`` says which sources and commands built it, plus what the build learnt (e.g. the Valgrind version).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

PMPI_NAME = "mapmpi"  # libmapmpi.so: the MPI wrapper library
C_RUNTIME_NAME = "ma"  # libma.so: the C runtime
VALGRIND_DIR = "valgrind"  # the Valgrind tool, its VALGRIND_LIB directory and its client shim
STAMP_SUFFIX = ".stamp"
SOURCE_DIR = Path(__file__).resolve().parent  # the runtime's package: its C sources are in csrc/ (and counters/vgtool/)


def build_dir() -> Path:
    """The directory that holds the built libraries and tools (it may not exist yet)."""
    override = os.environ.get("MA_BUILD_DIR")
    return Path(override) if override else Path(sys.prefix) / "lib" / "ma-sdk"


def pmpi_library() -> Path:
    """Where libmapmpi.so is (or will be) built."""
    return build_dir() / f"lib{PMPI_NAME}.so"


def c_runtime_library() -> Path:
    """Where libma.so is (or will be) built."""
    return build_dir() / f"lib{C_RUNTIME_NAME}.so"


def valgrind_dir() -> Path:
    """Where the Valgrind tool and its client shim are (or will be) built."""
    return build_dir() / VALGRIND_DIR


def stamp_path(product: Path) -> Path:
    return product.with_name(product.name + STAMP_SUFFIX)


def read_stamp(product: Path) -> dict[str, Any]:
    """The stamp of a built product; empty when there is none or it is not a stamp this SDK wrote."""
    try:
        data = json.loads(stamp_path(product).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
