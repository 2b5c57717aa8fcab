"""The Fortran API: the ``ma`` module (``use ma``), written from one table, and built with the MPI's Fortran compiler.

The module has the paper's names and argument order (Figures 2, 4, 5: ``call ma_loop_start('conj_loop', 'niter',
niter)``); each name is a generic interface whose specific procedures take default (4-byte) or 8-byte integers
for every integer argument. Strings are passed as address and length to the C runtime's Fortran entry points
(``libma/ma_fortran.c``), which drop trailing blanks: a program writes no ``C_NULL_CHAR``.

Two modules come from the same table, so their interfaces cannot drift apart:

- ``ma`` in ``<build>/fortran/``: the procedures call libma; linked as ``-lmafort -lma -lmapmpi``;
- the same ``ma`` in ``<build>/fortran-disabled/``, every procedure empty, in a static ``libmafort_disabled.a``
  that needs neither libma nor libmapmpi (``ma config --disabled``: the counterpart of the C API's
  ``-DMA_DISABLE``).

The module is compiled by the MPI's Fortran wrapper (``mpifort``; ``MA_MPIFC``) when the MPI has one, else by
``MA_FC`` or ``gfortran``: a ``.mod`` file is only read by the compiler that wrote it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ma_runtime.built import stamp_path

from .build import build, compile_into
from .mpis import MpiInstall, selected
from .toolchain import find_program, run_compiler

LIBRARY_NAME = "mafort"  # libmafort.so
DISABLED_LIBRARY_NAME = "mafort_disabled"  # libmafort_disabled.a
MODULE_DIR = "fortran"
DISABLED_MODULE_DIR = "fortran-disabled"
API_VERSION = "0.1.0"

# The integer kinds every integer argument accepts: (suffix of the specific procedure, kind).
INTEGER_KINDS = (("i4", "int32"), ("i8", "int64"))
MPI_TYPES = ("mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast", "mpi_reduce",
             "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather", "mpi_alltoall", "mpi_barrier")
COUNTER_TYPES = ("flop", "loadstore", "heap_memory", "stack_memory")


@dataclass(frozen=True)
class Argument:
    name: str
    kind: str  # "text": character(len=*); "int": 4- or 8-byte integer; "real": real(real64); "reals": real32 or real64

    def declaration(self, fortran_kind: str | None) -> str:
        if self.kind == "text":
            return f"character(len=*), intent(in) :: {self.name}"
        if self.kind == "int":
            return f"integer({fortran_kind}), intent(in) :: {self.name}"
        return f"real({fortran_kind or 'real64'}), intent(in) :: {self.name}"

    def to_c(self) -> str:
        """The argument as the C entry point takes it: a text is its address and its length."""
        if self.kind == "text":
            return f"{self.name}, len({self.name}, kind=c_size_t)"
        if self.kind == "int":
            return f"int({self.name}, c_long_long)"
        return f"real({self.name}, c_double)"


@dataclass(frozen=True)
class Procedure:
    """One public name: a generic interface over the integer (and real) kinds of its arguments."""

    name: str
    arguments: tuple[Argument, ...]
    call: str  # the C entry point's call; {name} is the argument as to_c() gives it
    doc: str

    def variants(self) -> Iterator[tuple[str, dict[str, str | None]]]:
        """(suffix, {argument: kind}) for every combination of the kinds of its numeric arguments."""
        numeric = [a for a in self.arguments if a.kind in ("int", "reals")]
        choices = [INTEGER_KINDS if a.kind == "int" else (("r4", "real32"), ("r8", "real64")) for a in numeric]
        for combination in itertools.product(*choices):
            suffix = "_".join(tag for tag, _ in combination)
            kinds: dict[str, str | None] = {a.name: kind for a, (_, kind) in zip(numeric, combination, strict=True)}
            yield suffix, kinds


def _text(*names: str) -> tuple[Argument, ...]:
    return tuple(Argument(n, "text") for n in names)


def _procedures() -> list[Procedure]:
    integer = lambda name: Argument(name, "int")  # noqa: E731 -- a short spelling for the table below
    table = [
        Procedure("ma_def_variable_int", (*_text("name"), integer("value")),
                  "c_variable({name}, {value})", "an input variable"),
        Procedure("ma_def_variable_double", (*_text("name"), Argument("value", "reals")),
                  "c_variable_double({name}, {value})", "an input variable with a real value"),
        Procedure("ma_def_variable_assign_int", (*_text("name", "expr"), integer("value")),
                  "c_assign({name}, {expr}, {value})",
                  "a derived variable: binds the value of expr; value (or MA_NO_VALUE) is checked against it"),
        Procedure("ma_loop_start", (*_text("id", "expr"), integer("value")),
                  "c_start(T_LOOP, {id}, {expr}, {value})", "a loop of expr trips"),
        Procedure("ma_loop_end", (*_text("id"), integer("iterations")),
                  "c_end(T_LOOP, {id}, {iterations})", "its end, with the trips it made (MA_NO_VALUE: none)"),
        Procedure("ma_loop_next", _text("id"), "c_loop_next({id})",
                  "the start of an iteration: counts it and makes the next value of iter (from 0)"),
        Procedure("ma_subroutine_start", _text("id"), "c_subroutine_start({id})", "a level of the site tree"),
        Procedure("ma_subroutine_end", _text("id"), "c_end(T_SUBROUTINE, {id}, MA_NO_VALUE)", "its end"),
    ]
    starts = {"flop": ("ma_flop_start", "ma_flop_stop", "floating-point operations inside"),
              "loadstore": ("ma_loadstore_start", "ma_loadstore_stop", "loads and stores inside"),
              "heap_memory": ("ma_heap_memory_start", "ma_heap_memory_stop",
                              "net heap bytes allocated inside and still allocated at the stop"),
              "stack_memory": ("ma_stack_memory_start", "ma_stack_memory_stop",
                               "stack bytes (asserted and modelled; no counter measures them)")}
    for kind, (start, stop, doc) in starts.items():
        constant = f"T_{kind.upper()}"
        table.append(Procedure(start, (*_text("id", "expr"), integer("value")),
                               f"c_start({constant}, {{id}}, {{expr}}, {{value}})", doc))
        table.append(Procedure(stop, _text("id"), f"c_end({constant}, {{id}}, MA_NO_VALUE)", "its end"))
    for mpi_type in MPI_TYPES:
        table.append(Procedure(f"ma_{mpi_type}", (*_text("id", "expr"), integer("value"), integer("count")),
                               f"c_mpi(T_{mpi_type.upper()}, {{id}}, {{expr}}, {{value}}, {{count}})",
                               "bytes per message (expr) and number (count) of the next calls"))
    table += [
        Procedure("ma_mpi", (*_text("type", "id", "expr"), integer("value"), *_text("count_expr"), integer("count")),
                  "c_mpi_typed({type}, {id}, {expr}, {value}, {count_expr}, {count})",
                  "any MPI assertion type, with the count as an expression"),
        Procedure("ma_mpi_peer", _text("expr"), "c_mpi_peer({expr})",
                  "right after an MPI assertion: its partner rank, an expression of rank"),
        Procedure("ma_vec_loop_start",
                  (*_text("id", "vloadstore"), integer("vloadstore_value"), *_text("vflops"),
                   integer("vflops_value"), *_text("avl"), Argument("avl_value", "real"), integer("mv")),
                  "c_vec_loop_start({id}, {vloadstore}, {vloadstore_value}, {vflops}, {vflops_value}, {avl}, "
                  "{avl_value}, int(mv, c_int))",
                  "the vector paper's loop assertion (MA_NO_VALUE, MA_NO_REAL_VALUE: no value of the program's)"),
        Procedure("ma_vec_loop_stop", _text("id"), "c_vec_loop_stop({id})", "its end"),
        Procedure("ma_vec_loop_gathers",
                  (*_text("id", "gathers"), integer("gathers_value"), *_text("bytes"), integer("bytes_value")),
                  "c_vec_loop_gathers({id}, {gathers}, {gathers_value}, {bytes}, {bytes_value})",
                  "inside ma_vec_loop_start/stop: its indexed loads"),
    ]
    return table


PROCEDURES: tuple[Procedure, ...] = tuple(_procedures())
# Calls without arguments: bound straight to the C functions of ma.h.
PLAIN_CALLS = ("ma_init", "ma_finalize", "ma_flush", "ma_set_tracing", "ma_unset_tracing")

# The C entry points (libma/ma_fortran.c): name, binding label, arguments (name, declaration).
_C_INTERFACES: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("c_variable", "ma_fortran_variable", (("name", "text"), ("value", "long"))),
    ("c_variable_double", "ma_fortran_variable_double", (("name", "text"), ("value", "double"))),
    ("c_assign", "ma_fortran_assign", (("name", "text"), ("expr", "text"), ("value", "long"))),
    ("c_start", "ma_fortran_start", (("type", "cstring"), ("id", "text"), ("expr", "text"), ("value", "long"))),
    ("c_subroutine_start", "ma_fortran_subroutine_start", (("id", "text"),)),
    ("c_loop_next", "ma_fortran_loop_next", (("id", "text"),)),
    ("c_end", "ma_fortran_end", (("type", "cstring"), ("id", "text"), ("measured", "long"))),
    ("c_mpi", "ma_fortran_mpi", (("type", "cstring"), ("id", "text"), ("expr", "text"), ("value", "long"),
                                 ("count", "long"))),
    ("c_mpi_typed", "ma_fortran_mpi_typed", (("type", "text"), ("id", "text"), ("expr", "text"), ("value", "long"),
                                             ("count_expr", "text"), ("count", "long"))),
    ("c_mpi_peer", "ma_fortran_mpi_peer", (("expr", "text"),)),
    ("c_vec_loop_start", "ma_fortran_vec_loop_start",
     (("id", "text"), ("vloadstore", "text"), ("vloadstore_value", "long"), ("vflops", "text"),
      ("vflops_value", "long"), ("avl", "text"), ("avl_value", "double"), ("mv", "int"))),
    ("c_vec_loop_stop", "ma_fortran_vec_loop_stop", (("id", "text"),)),
    ("c_vec_loop_gathers", "ma_fortran_vec_loop_gathers",
     (("id", "text"), ("gathers", "text"), ("gathers_value", "long"), ("bytes", "text"), ("bytes_value", "long"))),
)


def _c_interface(name: str, label: str, arguments: Sequence[tuple[str, str]]) -> list[str]:
    dummies: list[str] = []
    lines: list[str] = []
    for argument, kind in arguments:
        if kind == "text":
            dummies += [argument, f"{argument}_len"]
            lines += [f"character(kind=c_char), intent(in) :: {argument}(*)",
                      f"integer(c_size_t), value :: {argument}_len"]
        elif kind == "cstring":
            dummies.append(argument)
            lines.append(f"character(kind=c_char), intent(in) :: {argument}(*)")
        else:
            dummies.append(argument)
            c_kind = {"long": "c_long_long", "double": "c_double", "int": "c_int"}[kind]
            lines.append(f"{'real' if kind == 'double' else 'integer'}({c_kind}), value :: {argument}")
    head = f"subroutine {name}({', '.join(dummies)}) bind(C, name='{label}')"
    return [*_wrap(head, 8), "    import :: c_char, c_size_t, c_long_long, c_double, c_int",
            *[f"    {line}" for line in lines], f"end subroutine {name}"]


def _wrap(line: str, indent: int, width: int = 110) -> list[str]:
    """Split a long Fortran statement at ", " with free-form continuation lines."""
    out: list[str] = []
    while len(line) > width:
        cut = line.rfind(", ", 0, width - 2)
        if cut < 0:
            break
        out.append(line[:cut + 1] + " &")
        line = " " * indent + line[cut + 2:]
    out.append(line)
    return out


def _specific(procedure: Procedure, suffix: str, kinds: dict[str, str | None], disabled: bool) -> list[str]:
    name = f"{procedure.name}_{suffix}" if suffix else procedure.name
    dummies = ", ".join(a.name for a in procedure.arguments)
    lines = [f"subroutine {name}({dummies})"]
    lines += [f"    {a.declaration(kinds.get(a.name))}" for a in procedure.arguments]
    if disabled:
        lines.append("    ! disabled build: nothing happens, nothing is linked")
    else:
        call = procedure.call.format(**{a.name: a.to_c() for a in procedure.arguments})
        lines += _wrap(f"    call {call}", 8)
    lines.append(f"end subroutine {name}")
    return lines


def module_source(disabled: bool = False) -> str:
    """The text of the ``ma`` module (``disabled``: the same interface, every procedure empty)."""
    out = [
        "! ma.f90 -- the Fortran API of the Modeling Assertions SDK ("
        f"{'disabled: every call does nothing' if disabled else 'calls the C runtime libma'}).",
        "! Written by ma_tools/fortran.py (do not edit); built by `ma tools build`; see docs/fortran.md.",
        "! SPDX-License-Identifier: BSD-3-Clause",
        "module ma",
        "    use, intrinsic :: iso_c_binding, only: c_char, c_size_t, c_long_long, c_double, c_int, c_null_char",
        "    use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64",
        "    implicit none",
        "    private",
        "",
        "    ! Pass as a value when the program has no value of its own for the expression (the C API's MA_NO_VALUE).",
        "    integer(int64), parameter, public :: MA_NO_VALUE = -huge(0_int64) - 1_int64",
        "    ! ma_vec_loop_start's avl_value when the program has none (a quiet NaN, the C API's NAN).",
        "    real(real64), parameter, public :: MA_NO_REAL_VALUE = &",
        "        transfer(int(z'7FF8000000000000', int64), 1.0_real64)",
        f"    character(len=*), parameter, public :: MA_FORTRAN_API_VERSION = '{API_VERSION}'",
        f"    logical, parameter, public :: MA_ENABLED = .{'false' if disabled else 'true'}.",
        "",
    ]
    names = [*PLAIN_CALLS, *(p.name for p in PROCEDURES), "ma_evaluate"]
    out += _wrap(f"    public :: {', '.join(names)}", 14)
    out.append("")
    if not disabled:
        out.append("    ! the type names the C entry points take, NUL-terminated")
        for kind in ("loop", "subroutine", *COUNTER_TYPES, *MPI_TYPES):
            out.append(f"    character(kind=c_char, len=*), parameter :: T_{kind.upper()} = '{kind}'//c_null_char")
        out.append("")
    for procedure in PROCEDURES:
        variants = list(procedure.variants())
        if len(variants) > 1 or variants[0][0]:
            out.append(f"    interface {procedure.name}  ! {procedure.doc}")
            out += _wrap("        module procedure " + ", ".join(f"{procedure.name}_{s}" for s, _ in variants), 12)
            out.append(f"    end interface {procedure.name}")
    out.append("")
    if not disabled:
        out.append("    interface  ! libma: ma.h, and the Fortran entry points of ma_fortran.c")
        for call in PLAIN_CALLS:
            out += [f"        subroutine {call}() bind(C, name='{call}')", f"        end subroutine {call}"]
        for name, label, arguments in _C_INTERFACES:
            out += ["        " + line for line in _c_interface(name, label, arguments)]
        out += ["        function c_evaluate(expr, expr_len, bindings, bindings_len, text, text_len) result(status) &",
                "                bind(C, name='ma_fortran_evaluate')",
                "            import :: c_char, c_size_t, c_int",
                "            character(kind=c_char), intent(in) :: expr(*), bindings(*)",
                "            character(kind=c_char), intent(out) :: text(*)",
                "            integer(c_size_t), value :: expr_len, bindings_len, text_len",
                "            integer(c_int) :: status",
                "        end function c_evaluate",
                "    end interface"]
    out += ["", "contains", ""]
    if disabled:
        for call in PLAIN_CALLS:
            out += [f"subroutine {call}()", f"end subroutine {call}", ""]
    for procedure in PROCEDURES:
        for suffix, kinds in procedure.variants():
            out += [*_specific(procedure, suffix, kinds, disabled), ""]
    out += ["! Evaluate expr with bindings ('n=4, x=2.5') without touching the runtime: 0 and the value in text,",
            "! or -1 and the error message (blank-padded).",
            "function ma_evaluate(expr, bindings, text) result(status)",
            "    character(len=*), intent(in) :: expr, bindings",
            "    character(len=*), intent(out) :: text",
            "    integer :: status"]
    if disabled:
        out += ["    text = 'the MA runtime is disabled'", "    status = -1"]
    else:
        out += ["    status = int(c_evaluate(expr, len(expr, kind=c_size_t), bindings, len(bindings, kind=c_size_t), &",
                "                            text, len(text, kind=c_size_t)))"]
    out += ["end function ma_evaluate", "", "end module ma", ""]
    return "\n".join(out)


# --- building ------------------------------------------------------------------------------------
def fortran_compiler(mpi: MpiInstall) -> Path:
    """The compiler that builds the module: the MPI's Fortran wrapper, else MA_FC, else gfortran."""
    from ma_core.errors import ToolBuildError

    wrapper = mpi.mpifc
    if wrapper is not None:
        return wrapper
    named = os.environ.get("MA_FC") or "gfortran"
    found = Path(named) if os.sep in named else find_program(named)
    if found is None or not found.is_file():
        raise ToolBuildError(f"no Fortran compiler: {mpi.mpicc} has no mpifort beside it and {named!r} is not "
                             "installed (apt-get install gfortran, or set MA_FC / MA_MPIFC)")
    return found


def mpi_fortran_compiler(mpi: MpiInstall) -> Path:
    """The MPI's Fortran compiler wrapper, to compile a Fortran MPI program with (``ma config --mpifc``)."""
    from ma_core.errors import ToolBuildError

    wrapper = mpi.mpifc
    if wrapper is None:
        raise ToolBuildError(
            f"{mpi.mpicc} ({mpi.family} {mpi.version}) has no Fortran compiler wrapper (mpifort, mpif90) beside it: "
            "this MPI has no Fortran bindings (the mpich wheel ships none: no mpifort, no mpi.mod or mpif.h, no "
            "Fortran symbols in its libmpi). Build Fortran MPI programs against a distribution MPI, e.g. "
            "ma config --mpicc /usr/bin/mpicc.mpich --mpifc (docs/mpi.md)")
    return wrapper


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)


def _archive(source: Path, compile_object: list[str], target: Path) -> None:
    """Compile ``source`` to an object and archive it as ``target`` (static: nothing to load at run time)."""
    obj = target.with_name(f".{source.stem}.{os.getpid()}.o")
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        run_compiler([*compile_object, "-c", source, "-o", obj], f"the object of {source.name}")
        run_compiler(["ar", "rcs", temporary, obj], f"the archive {target.name}")
        os.replace(temporary, target)
    finally:
        obj.unlink(missing_ok=True)
        temporary.unlink(missing_ok=True)


def build_fortran(force: bool = False, mpi: MpiInstall | None = None) -> Path:
    """Build the ``ma`` module and libmafort.so for ``mpi`` (default: the selected MPI), and the disabled module
    and libmafort_disabled.a beside them; return the path of libmafort.so."""
    from .cparts import build_c_runtime

    mpi = mpi or selected()
    runtime = build_c_runtime(force, mpi)
    directory = runtime.parent
    compiler = str(fortran_compiler(mpi))
    flags = ["-O2", "-g", "-fPIC", "-Wall"]
    # the disabled module: a static archive of empty procedures, so that a disabled program loads no SDK library
    modules = directory / DISABLED_MODULE_DIR
    modules.mkdir(parents=True, exist_ok=True)
    source = modules / "ma.f90"
    _write_if_changed(source, module_source(disabled=True))
    compile_object = [compiler, *flags, f"-J{modules}"]
    build(modules / f"lib{DISABLED_LIBRARY_NAME}.a", "the disabled Fortran module", [source], [*compile_object, "ar"],
          lambda target: _archive(source, compile_object, target), force, outputs=[modules / "ma.mod"])
    # the module that calls libma
    modules = directory / MODULE_DIR
    modules.mkdir(parents=True, exist_ok=True)
    source = modules / "ma.f90"
    _write_if_changed(source, module_source())
    command = [compiler, *flags, "-shared", f"-J{modules}", str(source), f"-L{directory}", f"-Wl,-rpath,{directory}",
               "-Wl,--no-as-needed", "-lma"]
    what = "the Fortran module (ma.mod, libmafort)"
    return build(directory / f"lib{LIBRARY_NAME}.so", what, [source, stamp_path(runtime)], command,
                 lambda target: compile_into(target, command, what), force, outputs=[modules / "ma.mod"])


def fortran_flags(mpi: MpiInstall | None = None, disabled: bool = False) -> list[str]:
    """Compiler flags for Fortran programs with ``use ma`` (``ma config --fflags``): where ma.mod is."""
    library = build_fortran(mpi=mpi)
    return [f"-I{library.parent / (DISABLED_MODULE_DIR if disabled else MODULE_DIR)}"]


def fortran_libs(mpi: MpiInstall | None = None, disabled: bool = False) -> list[str]:
    """Linker flags for Fortran programs (``ma config --flibs``): libmafort, libma and libmapmpi before the MPI's
    own libraries (which the MPI's mpifort appends), so that libmapmpi's Fortran entry points come first."""
    directory = build_fortran(mpi=mpi).parent
    if disabled:
        return [f"-L{directory / DISABLED_MODULE_DIR}", f"-l{DISABLED_LIBRARY_NAME}"]
    return [f"-L{directory}", f"-Wl,-rpath,{directory}", "-Wl,--no-as-needed", f"-l{LIBRARY_NAME}", "-lma",
            "-lmapmpi"]


__all__ = ["API_VERSION", "PROCEDURES", "build_fortran", "fortran_compiler", "fortran_flags", "fortran_libs",
           "module_source", "mpi_fortran_compiler"]
