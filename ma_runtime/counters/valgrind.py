"""The ``valgrind`` counter provider: exact software counts from the ``maflops`` Valgrind tool.

Hosts without a hardware PMU (most VMs and CI runners) give PAPI no events. There, ``ma run --counters
valgrind`` starts every rank under ``maflops`` (ma_runtime/counters/vgtool, GPL-2), which counts the
floating-point operations and the memory operations of everything the process executes. The provider
reads the running totals through a tiny shim library (csrc/ma_vgclient.c) with one ctypes call per read.

This module is BSD-3-Clause: it only builds the tool and talks to it through client requests.
Importing it is cheap; the shim is loaded on first use.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ma_core.errors import ToolBuildError
from ma_runtime.counters.base import CounterProvider, ProviderStatus, Reader

# ctypes, platform and ma_runtime.toolchain (which pulls in subprocess) are imported where they are
# used: a rank under Valgrind pays ~50x for every module it imports.

TOOL_NAME = "maflops"
TOOL_VERSION = "0.1.0"  # MF_VERSION_* in vgtool/mf_main.c
SHIM_NAME = "libmavgclient.so"
STAMP_NAME = "build.json"

_TOOL_SOURCES = (Path(__file__).resolve().parent / "vgtool" / "mf_main.c",)
_CSRC = Path(__file__).resolve().parent.parent / "csrc"
_SHARED_HEADER = _CSRC / "ma_vgcount.h"
_SHIM_SOURCE = _CSRC / "ma_vgclient.c"
_COUNTER_NAMES = ("dp_flops", "sp_flops", "loads", "stores", "load_bytes", "store_bytes")
_CACHE_VALUES = 6  # MA_VG_CACHE_VALUES of ma_vgcount.h: levels, line accesses, hits of up to 4 levels
_VEC_COUNTER_NAMES = ("vec_flops", "scalar_flops", "vec_fp_insns", "vec_lanes", "vec_loads", "vec_stores",
                      "scalar_loads", "scalar_stores")  # ma_vg_vec_counts of ma_vgcount.h

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


@dataclass(frozen=True)
class VgCounts:
    """One reading of the tool's six running totals."""

    dp_flops: int
    sp_flops: int
    loads: int
    stores: int
    load_bytes: int
    store_bytes: int

    def __sub__(self, other: VgCounts) -> VgCounts:
        return VgCounts(*(a - b for a, b in zip(self._values(), other._values(), strict=False)))

    def _values(self) -> tuple[int, ...]:
        return (self.dp_flops, self.sp_flops, self.loads, self.stores, self.load_bytes, self.store_bytes)

    @property
    def flops(self) -> int:
        return self.dp_flops + self.sp_flops


@dataclass(frozen=True)
class CacheCounts:
    """One reading of the tool's cache simulation (``--ma-cache``): line accesses (loads and stores, each
    line an access touches) and the accesses each level served, innermost first."""

    accesses: int
    hits: tuple[int, ...]

    def __sub__(self, other: CacheCounts) -> CacheCounts:
        return CacheCounts(self.accesses - other.accesses,
                           tuple(a - b for a, b in zip(self.hits, other.hits, strict=True)))

    def hit_rates(self) -> list[float]:
        """Cumulative h_1..h_n, then 1 for main memory (the machine profile's convention); NaN without accesses."""
        if self.accesses <= 0:
            return [float("nan")] * len(self.hits) + [1.0]
        total, out = 0, []
        for served in self.hits:
            total += served
            out.append(total / self.accesses)
        return [*out, 1.0]


@dataclass(frozen=True)
class VgVecCounts:
    """One reading of the tool's vector metrics (the X1E's vector counters in SIMD terms).

    A vector FP instruction does floating-point work in two or more lanes; a vector load (store) reads
    (writes) 16 bytes or more. ``avl`` is the average vector length in lanes of the vector FP
    instructions (0 when there were none).
    """

    vec_flops: int
    scalar_flops: int
    vec_fp_insns: int
    vec_lanes: int
    vec_loads: int
    vec_stores: int
    scalar_loads: int
    scalar_stores: int

    def __sub__(self, other: VgVecCounts) -> VgVecCounts:
        return VgVecCounts(*(a - b for a, b in zip(self._values(), other._values(), strict=True)))

    def _values(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in _VEC_COUNTER_NAMES)

    @property
    def avl(self) -> float:
        return self.vec_lanes / self.vec_fp_insns if self.vec_fp_insns else 0.0

    @property
    def vec_loadstores(self) -> int:
        return self.vec_loads + self.vec_stores

    @property
    def scalar_loadstores(self) -> int:
        return self.scalar_loads + self.scalar_stores


# ---------------------------------------------------------------------------------------------------
# Locating Valgrind


def _first_dir_with(candidates: list[Path], member: str) -> Path | None:
    for directory in candidates:
        if (directory / member).is_file():
            return directory
    return None


def _override(name: str) -> list[Path]:
    value = os.environ.get(name)
    return [Path(value)] if value else []


def _valgrind_version(launcher: Path) -> str:
    import subprocess

    try:
        done = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolBuildError(f"cannot run {launcher} --version: {exc}") from None
    text = done.stdout.strip()
    if done.returncode != 0 or not text.startswith("valgrind-"):
        raise ToolBuildError(f"{launcher} --version printed {text!r} (exit {done.returncode}); "
                             "expected 'valgrind-X.Y.Z'")
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

    from ma_runtime.toolchain import find_program

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


def tool_dir() -> Path:
    """Where the tool, its VALGRIND_LIB directory and the shim are built (inside ``build_dir()``)."""
    from ma_runtime.toolchain import build_dir

    return build_dir() / "valgrind"


def _c_compiler() -> str:
    from ma_runtime.toolchain import find_program

    for candidate in (os.environ.get("MA_CC"), "gcc", "cc"):
        if candidate and (found := find_program(candidate)):
            return str(found)
    raise ToolBuildError("no C compiler (gcc or cc) found on PATH to build the Valgrind tool; "
                         "install gcc or set MA_CC")


def _fingerprint(install: ValgrindInstall, compiler: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    for source in (*_TOOL_SOURCES, _SHARED_HEADER, _SHIM_SOURCE):
        digest.update(source.read_bytes())
    digest.update(repr((install, compiler, _TOOL_CFLAGS, _TOOL_LDFLAGS)).encode())
    return digest.hexdigest()


def _read_stamp(directory: Path) -> dict[str, str]:
    try:
        data = json.loads((directory / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
    the core's files), ``libmavgclient.so`` and ``build.json``. Nothing is rebuilt while the sources,
    compiler and Valgrind are unchanged, unless ``force``. Raises ToolBuildError naming what is missing.
    """
    from ma_runtime.toolchain import run_compiler

    install = find_valgrind()
    compiler = _c_compiler()
    out = tool_dir()
    lib_dir = out / "lib"
    tool_file = f"{TOOL_NAME}-{install.platform}"
    fingerprint = _fingerprint(install, compiler)
    built = (lib_dir / tool_file).is_file() and (out / SHIM_NAME).is_file()
    if built and not force and _read_stamp(out).get("fingerprint") == fingerprint:
        return out

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
    stamp = {"fingerprint": fingerprint, "valgrind": install.version, "valgrind_launcher": str(install.launcher),
             "tool": TOOL_NAME, "tool_version": TOOL_VERSION, "platform": install.platform}
    (out / STAMP_NAME).write_text(json.dumps(stamp, indent=1) + "\n")
    return out


def valgrind_launch_prefix(cache: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv prefix and environment additions that start one rank under the tool.

    ``cache`` ("SIZE:WAYS:LINE,...", bytes, innermost level first) turns on the tool's LRU cache simulation
    (``--ma-cache``); :meth:`ValgrindProvider.cache_read` then reads its counts.

    ``ma run --counters valgrind -n N -- python app.py`` runs ``mpiexec -n N <prefix> python app.py``
    with the environment updated by the returned dict. Builds the tool first if needed.
    """
    out = build_valgrind_tool()
    stamp = _read_stamp(out)
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


# ---------------------------------------------------------------------------------------------------
# The provider


class _Shim:
    """The loaded client shim with its ctypes signatures."""

    def __init__(self, path: Path) -> None:
        import ctypes

        class CCounts(ctypes.Structure):  # ma_vg_counts of ma_vgcount.h
            _fields_ = [(name, ctypes.c_ulonglong) for name in _COUNTER_NAMES]

        lib = ctypes.CDLL(str(path))
        for name in ("ma_vgc_flops", "ma_vgc_loadstores"):
            getattr(lib, name).restype = ctypes.c_ulonglong
            getattr(lib, name).argtypes = []
        lib.ma_vgc_sum.restype = ctypes.c_ulonglong
        lib.ma_vgc_sum.argtypes = [ctypes.c_ulong]
        lib.ma_vgc_read.restype = ctypes.c_int
        lib.ma_vgc_read.argtypes = [ctypes.POINTER(CCounts)]

        class CVecCounts(ctypes.Structure):  # ma_vg_vec_counts of ma_vgcount.h
            _fields_ = [(name, ctypes.c_ulonglong) for name in _VEC_COUNTER_NAMES]

        lib.ma_vgc_vec_read.restype = ctypes.c_int
        lib.ma_vgc_vec_read.argtypes = [ctypes.POINTER(CVecCounts)]
        self._vec_counts = CVecCounts()
        self._vec_counts_ref = ctypes.byref(self._vec_counts)
        for name in ("ma_vgc_running", "ma_vgc_abi"):
            getattr(lib, name).restype = ctypes.c_int
        for name in ("ma_vgc_tool_version", "ma_vgc_core_version"):
            getattr(lib, name).restype = ctypes.c_long
        lib.ma_vgc_cache_read.restype = ctypes.c_int
        lib.ma_vgc_cache_read.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)]
        self._cache_values = (ctypes.c_ulonglong * _CACHE_VALUES)()
        self.lib = lib
        self.path = path
        self.running = bool(lib.ma_vgc_running())
        self._counts = CCounts()
        self._counts_ref = ctypes.byref(self._counts)

    def cache_read(self) -> CacheCounts | None:
        if self.lib.ma_vgc_cache_read(self._cache_values) == 0:
            return None
        values = list(self._cache_values)
        levels = int(values[0])
        return CacheCounts(int(values[1]), tuple(int(v) for v in values[2:2 + levels]))

    def read(self) -> VgCounts | None:
        if self.lib.ma_vgc_read(self._counts_ref) != 1:
            return None
        return VgCounts(*(getattr(self._counts, name) for name in _COUNTER_NAMES))

    def read_vector(self) -> VgVecCounts | None:
        if self.lib.ma_vgc_vec_read(self._vec_counts_ref) != 1:
            return None
        return VgVecCounts(*(getattr(self._vec_counts, name) for name in _VEC_COUNTER_NAMES))


def _shim_path() -> Path:
    override = os.environ.get("MA_VALGRIND_TOOL_DIR")
    return (Path(override) if override else tool_dir()) / SHIM_NAME


def _unpack_version(packed: int, parts: int) -> str:
    digits = []
    for _ in range(parts):
        packed, part = divmod(packed, 100)
        digits.append(str(part))
    return ".".join([str(packed), *reversed(digits)])


class ValgrindProvider(CounterProvider):
    """Flops (DP+SP) and loads+stores from the maflops tool; available only when running under it."""

    name = "valgrind"

    def __init__(self, shim: Path | None = None) -> None:
        self._shim_file = shim
        self._shim: _Shim | None = None
        self._problem: str | None = None
        self._loaded = False

    def _load(self) -> _Shim | None:
        if not self._loaded:
            self._loaded = True
            path = self._shim_file or _shim_path()
            if not path.is_file():
                self._problem = (f"the Valgrind client shim {path} is not built: run 'ma tools build' "
                                 "(or start the program with 'ma run --counters valgrind', which builds it)")
            else:
                try:
                    self._shim = _Shim(path)
                except OSError as exc:
                    self._problem = f"cannot load the Valgrind client shim {path}: {exc}"
                else:
                    if not self._shim.running:
                        self._problem = (f"not running under the {TOOL_NAME} Valgrind tool: start the "
                                         "program with 'ma run --counters valgrind'")
        return self._shim if self._shim is not None and self._shim.running else None

    @property
    def running(self) -> bool:
        return self._load() is not None

    def status(self) -> ProviderStatus:
        shim = self._load()
        if shim is None:
            return ProviderStatus(self.name, False, reason=self._problem)
        core = _unpack_version(shim.lib.ma_vgc_core_version(), 1)  # "3.19": what the tool was built for
        built = str(_read_stamp(shim.path.parent).get("valgrind", ""))  # "3.19.0": `valgrind --version`
        valgrind = built if built.split(".")[:2] == core.split(".") else core
        tool = _unpack_version(shim.lib.ma_vgc_tool_version(), 2)
        events = {name: "ok" for name in _COUNTER_NAMES}
        return ProviderStatus(self.name, True, version=f"valgrind-{valgrind} {TOOL_NAME}-{tool}", events=events)

    def reader(self, kind: str) -> Reader | None:
        shim = self._load()
        if shim is None:
            return None
        if kind == "flop":
            return shim.lib.ma_vgc_flops  # one ctypes call per read
        if kind == "loadstore":
            return shim.lib.ma_vgc_loadstores
        return None

    def source(self, kind: str) -> str:
        return {"flop": f"{TOOL_NAME}:dp_flops+sp_flops",
                "loadstore": f"{TOOL_NAME}:loads+stores"}.get(kind, self.name)

    def read(self) -> VgCounts | None:
        """All six totals at once (None when not under the tool)."""
        shim = self._load()
        return shim.read() if shim is not None else None

    def cache_read(self) -> CacheCounts | None:
        """The cache simulation's totals (None when not under the tool or it simulates no cache)."""
        shim = self._load()
        return shim.cache_read() if shim is not None else None

    def read_vector(self) -> VgVecCounts | None:
        """The vector metrics at once (None when not under the tool)."""
        shim = self._load()
        return shim.read_vector() if shim is not None else None
