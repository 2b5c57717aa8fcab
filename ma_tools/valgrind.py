"""The build of the ``maflops`` Valgrind tool and its client shim, and how ``ma run`` starts a rank under it.

The tool (ma_runtime/counters/vgtool, GPL-2) is compiled against the installed Valgrind's headers and linked
with its static core libraries, as Valgrind's own tools are; the shim (ma_runtime/csrc/ma_vgclient.c) is what
the runtime's ``valgrind`` counter provider loads to read the tool's totals. This module is BSD-3-Clause: it
only compiles the tool and names the programs that start it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ma_core.errors import ToolBuildError
from ma_core.programs import run_program
from ma_runtime.built import SOURCE_DIR, read_stamp, valgrind_dir
from ma_runtime.counters.valgrind import SHIM_NAME, TOOL_NAME

from .build import build
from .toolchain import find_cc, find_program, run_compiler

TOOL_VERSION = "0.2.0"  # MF_VERSION_* in vgtool/mf_main.c
_TOOL_SOURCES = (SOURCE_DIR / "counters" / "vgtool" / "mf_main.c",)
_CSRC = SOURCE_DIR / "csrc"
_SHARED_HEADER = _CSRC / "ma_vgcount.h"
_SHIM_SOURCE = _CSRC / "ma_vgclient.c"

# Valgrind names its platforms <arch>-<os>; tools are linked at the core's fixed load address.
_PLATFORMS = {"x86_64": ("amd64", "0x58000000")}
_STATIC_LIBS = ("libcoregrind-{p}.a", "libvex-{p}.a", "libgcc-sup-{p}.a")
# Flags of Valgrind's Makefile.all.am / Makefile.tool.am for a tool (AM_CFLAGS_BASE, TOOL_LDFLAGS).
_TOOL_CFLAGS = ("-O2", "-g", "-Wall", "-Wmissing-prototypes", "-Wshadow", "-Wpointer-arith",
                "-Wstrict-prototypes", "-Wmissing-declarations", "-fno-stack-protector",
                "-fno-strict-aliasing", "-fno-builtin", "-fomit-frame-pointer", "-m64")
_TOOL_LDFLAGS = ("-m64", "-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start",
                 "-Wl,--build-id=none")


@dataclass(frozen=True)
class ValgrindInstall:
    """Where the parts of a Valgrind installation that the tool build needs live."""

    launcher: Path        # the `valgrind` program
    version: str          # e.g. "3.19.0"
    include_dir: Path     # holds pub_tool_basics.h, valgrind.h
    static_lib_dir: Path  # holds libcoregrind-<platform>.a, libvex-..., libgcc-sup-...
    core_lib_dir: Path    # holds vgpreload_core-<platform>.so, default.supp, the stock tools
    arch: str             # Valgrind's name of the architecture, e.g. "amd64"
    load_address: str     # where a tool of this platform is linked

    @property
    def platform(self) -> str:
        return f"{self.arch}-linux"



def _first_dir_with(candidates: list[Path], member: str) -> Path | None:
    for directory in candidates:
        if (directory / member).is_file():
            return directory
    return None


def _override(name: str) -> list[Path]:
    value = os.environ.get(name)
    return [Path(value)] if value else []


def _valgrind_version(launcher: Path) -> str:
    text = run_program([launcher, "--version"], ToolBuildError, "Valgrind's version", timeout=60).stdout.strip()
    if not text.startswith("valgrind-"):
        raise ToolBuildError(f"{launcher} --version printed {text!r}; expected 'valgrind-X.Y.Z'")
    return text.removeprefix("valgrind-")


def _header_version(include_dir: Path) -> str | None:
    config = include_dir / "config.h"
    if not config.is_file():
        return None
    for line in config.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["#define", "VERSION"]:
            return parts[2].strip('"')
    return None


def find_valgrind() -> ValgrindInstall:
    """Locate the launcher, tool headers, static core libraries and core files; ToolBuildError if any is missing.

    Debian's ``valgrind`` package has them all (/usr/bin, /usr/include/valgrind,
    /usr/lib/<triplet>/valgrind, /usr/libexec/valgrind). ``MA_VALGRIND``, ``MA_VALGRIND_INCLUDE``,
    ``MA_VALGRIND_STATIC_LIBS`` and ``MA_VALGRIND_LIBEXEC`` override the places looked at.
    """
    import platform

    machine = platform.machine()
    if not sys.platform.startswith("linux") or machine not in _PLATFORMS:
        raise ToolBuildError(f"the {TOOL_NAME} Valgrind tool is built for Linux on "
                             f"{', '.join(_PLATFORMS)} only; this host is {sys.platform}/{machine}")
    arch, load_address = _PLATFORMS[machine]
    plat = f"{arch}-linux"

    launcher_text = os.environ.get("MA_VALGRIND") or (str(find_program("valgrind") or ""))
    launcher = Path(launcher_text) if launcher_text else None
    if launcher is None or not launcher.is_file():
        where = f"MA_VALGRIND={launcher_text}" if os.environ.get("MA_VALGRIND") else "PATH"
        raise ToolBuildError(f"Valgrind is not installed (no 'valgrind' found via {where}); the valgrind "
                             "counter needs it: install Debian's 'valgrind' package (apt-get install "
                             "valgrind) or set MA_VALGRIND to the valgrind program")
    version = _valgrind_version(launcher)
    prefix = launcher.resolve().parent.parent
    triplets = [f"{machine}-linux-gnu"]

    include_candidates = _override("MA_VALGRIND_INCLUDE") or [prefix / "include" / "valgrind"]
    include_dir = _first_dir_with(include_candidates, "pub_tool_basics.h")
    if include_dir is None or not (include_dir / "valgrind.h").is_file():
        raise ToolBuildError(
            "Valgrind's tool headers (pub_tool_basics.h, valgrind.h) are missing from "
            f"{', '.join(map(str, include_candidates))}: install the full 'valgrind' package "
            "(Debian ships them in it; other distributions in valgrind-devel) or set MA_VALGRIND_INCLUDE")
    header_version = _header_version(include_dir)
    if header_version is not None and header_version != version:
        raise ToolBuildError(f"Valgrind headers in {include_dir} are version {header_version} but "
                             f"{launcher} is {version}: a tool must be built against its own core")

    libs = [name.format(p=plat) for name in _STATIC_LIBS]
    static_candidates = _override("MA_VALGRIND_STATIC_LIBS") or (
        [prefix / "lib" / t / "valgrind" for t in triplets]
        + [prefix / "lib" / "valgrind", prefix / "lib64" / "valgrind", prefix / "libexec" / "valgrind"])
    static_dir = next((d for d in static_candidates if all((d / lib).is_file() for lib in libs)), None)
    if static_dir is None:
        raise ToolBuildError(
            f"Valgrind's static core libraries ({', '.join(libs)}) are missing from "
            f"{', '.join(map(str, static_candidates))}: a Valgrind tool is linked statically with them; "
            "install the full 'valgrind' package (Debian) or valgrind-devel, or set MA_VALGRIND_STATIC_LIBS")

    core_candidates = _override("MA_VALGRIND_LIBEXEC") or (
        [prefix / "libexec" / "valgrind", prefix / "lib" / "valgrind"]
        + [prefix / "lib" / t / "valgrind" for t in triplets])
    core_member = f"vgpreload_core-{plat}.so"
    core_dir = _first_dir_with(core_candidates, core_member)
    if core_dir is None:
        raise ToolBuildError(f"Valgrind's core files ({core_member}) are missing from "
                             f"{', '.join(map(str, core_candidates))}: reinstall 'valgrind' or set "
                             "MA_VALGRIND_LIBEXEC to the directory that holds them")
    return ValgrindInstall(launcher, version, include_dir, static_dir, core_dir, arch, load_address)


# ---------------------------------------------------------------------------------------------------
# Building


def _link_core_files(install: ValgrindInstall, lib_dir: Path, tool_file: str) -> None:
    """Make ``lib_dir`` a VALGRIND_LIB: links to every core file, plus our tool (already there)."""
    for entry in lib_dir.iterdir():
        if entry.is_symlink():
            entry.unlink()
    for entry in install.core_lib_dir.iterdir():
        if entry.name != tool_file:
            (lib_dir / entry.name).symlink_to(entry)


def build_valgrind_tool(force: bool = False) -> Path:
    """Build the maflops tool and the client shim; return the directory that holds them.

    The result has ``lib/`` (to be passed as VALGRIND_LIB: the tool ``maflops-<platform>`` and links to
    the core's files) and ``libmavgclient.so``; its stamp keeps the Valgrind version and launcher. Nothing is
    rebuilt while the sources, compiler and Valgrind are unchanged, unless ``force``. Raises ToolBuildError
    naming what is missing.
    """
    install = find_valgrind()
    compiler = find_cc()
    tool_file = f"{TOOL_NAME}-{install.platform}"
    out = valgrind_dir()
    settings = [repr(install), str(compiler), *_TOOL_CFLAGS, *_TOOL_LDFLAGS]

    def make(out: Path) -> dict[str, Any]:
        lib_dir = out / "lib"
        lib_dir.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        obj = out / f"mf_main.{pid}.o"
        tool_tmp = out / f"{tool_file}.{pid}.tmp"
        shim_tmp = out / f"{SHIM_NAME}.{pid}.tmp"
        arch = install.arch
        defines = (f"-DVGA_{arch}=1", "-DVGO_linux=1", f"-DVGP_{arch}_linux=1", f"-DVGPV_{arch}_linux_vanilla=1")
        try:
            run_compiler([compiler, *_TOOL_CFLAGS, f"-I{install.include_dir}", f"-I{_CSRC}", *defines,
                          "-c", *_TOOL_SOURCES, "-o", obj], f"the {TOOL_NAME} Valgrind tool")
            static = [install.static_lib_dir / name.format(p=install.platform) for name in _STATIC_LIBS]
            # Library order of Makefile.tool.am: coregrind, vex, -lgcc, gcc-sup.
            run_compiler([compiler, *_TOOL_LDFLAGS, f"-Wl,-Ttext-segment={install.load_address}", "-o", tool_tmp,
                          obj, static[0], static[1], "-lgcc", static[2]], f"the {TOOL_NAME} Valgrind tool (link)")
            run_compiler([compiler, "-O2", "-fPIC", "-shared", "-Wall", f"-I{_CSRC}",
                          f"-I{install.include_dir.parent}", "-o", shim_tmp, _SHIM_SOURCE],
                         "the Valgrind client shim")
            os.replace(tool_tmp, lib_dir / tool_file)
            os.replace(shim_tmp, out / SHIM_NAME)
            _link_core_files(install, lib_dir, tool_file)
        finally:
            for leftover in (obj, tool_tmp, shim_tmp):
                leftover.unlink(missing_ok=True)
        return {"valgrind": install.version, "valgrind_launcher": str(install.launcher), "tool": TOOL_NAME,
                "tool_version": TOOL_VERSION, "platform": install.platform}

    return build(out, f"the {TOOL_NAME} Valgrind tool", [*_TOOL_SOURCES, _SHARED_HEADER, _SHIM_SOURCE], settings,
                 make, force, outputs=[out / "lib" / tool_file, out / SHIM_NAME])


def valgrind_launch_prefix(cache: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv prefix and environment additions that start one rank under the tool.

    ``cache`` ("SIZE:WAYS:LINE,...", bytes, innermost level first) turns on the tool's LRU cache simulation
    (``--ma-cache``); :meth:`ma_runtime.counters.valgrind.ValgrindProvider.cache_read` then reads its counts.

    ``ma run --counters valgrind -n N -- python app.py`` runs ``mpiexec -n N <prefix> python app.py``
    with the environment updated by the returned dict. Builds the tool first if needed.
    """
    out = build_valgrind_tool()
    stamp = read_stamp(out)
    argv = [stamp.get("valgrind_launcher", "valgrind"), f"--tool={TOOL_NAME}",
            "-q",            # no banner or totals on stderr: the trace has the numbers
            "--vgdb=no"]     # no gdbserver FIFOs in /tmp for every rank
    if cache:
        argv.append(f"--ma-cache={cache}")
    env = {"VALGRIND_LIB": str(out / "lib"), "MA_VALGRIND_TOOL_DIR": str(out)}
    if cache:
        env["MA_VG_CACHE"] = cache
    # Valgrind runs one thread at a time, so BLAS worker threads cannot help; their spin-waiting only
    # adds loads and time to every count. One BLAS thread, unless the user chose otherwise.
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        env["OPENBLAS_NUM_THREADS"] = "1"
    return argv, env
