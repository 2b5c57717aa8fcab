"""Loopmarks from today's compilers: every loop of a C source with its MV score (the vector paper, 4.1).

The Cray X1E's loopmark listings said, per loop, whether it was vectorised (V) and multistreamed (M). Here
GCC's ``-fopt-info-vec-all`` or Clang's ``-Rpass*=loop-vectorize`` remarks say whether a loop was
vectorised, with which vector width, and why not; an OpenMP worksharing pragma on the loop (compiled with
``-fopenmp``) stands for multistreaming. The MV score is ``2*vflag + mflag`` (0..3): the paper's tuple
``mflag: 1 vflag: 1`` is MV 3.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ma_core.errors import LoopmarkError
from ma_core.programs import run_program

DEFAULT_FLAGS = ("-O3", "-march=x86-64-v3", "-fopenmp")
_LOOP = re.compile(r"\b(for|while)\s*\(|\bdo\s*\{")
_OMP = re.compile(r"^\s*#\s*pragma\s+omp\s+(.*)$")
_GCC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>optimized|missed|note): (?P<msg>.*)$")
_CLANG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): remark: (?P<msg>.*?) \[-Rpass(?P<pass>[-a-z]*)=")


@dataclass
class Loopmark:
    """One loop of the source, as the compiler's report and the source's pragmas describe it."""

    file: str
    line: int
    vectorised: bool = False
    width_bytes: int | None = None     # GCC: widest vector used; Clang: lanes x 8 (doubles assumed)
    lanes: int | None = None           # doubles per vector (GCC: bytes / 8; Clang: its vectorization width)
    multithreaded: bool = False
    omp: str | None = None             # the OpenMP pragma on the loop, if any
    reason: str | None = None          # why the compiler did not vectorise it
    reported: bool = False             # the compiler's report mentions the loop

    @property
    def mv(self) -> int:
        return 2 * int(self.vectorised) + int(self.multithreaded)

    def describe(self) -> str:
        what = f"vectorised, {self.lanes} lanes" if self.vectorised else (
            f"not vectorised: {self.reason}" if self.reason else
            ("not vectorised" if self.reported else "not in the compiler's report"))
        threads = f"; OpenMP ({self.omp})" if self.multithreaded else ""
        return f"{self.file}:{self.line}: MV {self.mv} ({what}{threads})"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "mv": self.mv, "vectorised": self.vectorised,
                "lanes": self.lanes, "width_bytes": self.width_bytes, "multithreaded": self.multithreaded,
                "omp": self.omp, "reason": self.reason, "reported": self.reported}


def source_loops(source: Path, openmp: bool) -> dict[int, Loopmark]:
    """The loops of ``source`` by line, with the OpenMP pragma that governs each (when ``openmp``)."""
    try:
        lines = source.read_text().splitlines()
    except OSError as exc:
        raise LoopmarkError(f"cannot read {source}: {exc.strerror}") from None
    loops: dict[int, Loopmark] = {}
    pending_omp: str | None = None
    in_comment = False
    for number, text in enumerate(lines, start=1):
        code = text
        if in_comment:
            if "*/" not in code:
                continue
            code, in_comment = code.split("*/", 1)[1], False
        code = re.sub(r"/\*.*?\*/", " ", code.split("//", 1)[0])
        if "/*" in code:
            code, in_comment = code.split("/*", 1)[0], True
        omp = _OMP.match(code)
        if omp:
            pending_omp = omp.group(1).strip()
            continue
        if _LOOP.search(code):
            mark = Loopmark(str(source), number)
            if pending_omp is not None:
                mark.omp = pending_omp
                words = pending_omp.split()
                mark.multithreaded = openmp and ("for" in words or ("parallel" in words and "loop" in words))
            loops[number] = mark
        if code.strip():
            pending_omp = None
    return loops


def _run(argv: list[str]) -> str:
    return run_program(argv, LoopmarkError, "the vectorisation report", timeout=300).stderr


def compiler_report(source: Path, compiler: str, flags: tuple[str, ...] = DEFAULT_FLAGS) -> str:
    """The vectorisation report of compiling ``source`` (GCC's or Clang's own text)."""
    program = shutil.which(compiler)
    if program is None:
        raise LoopmarkError(f"{compiler} is not installed (scripts/setup.sh installs gcc and clang)")
    if compiler.startswith("clang"):
        options = ["-Rpass=loop-vectorize", "-Rpass-missed=loop-vectorize", "-Rpass-analysis=loop-vectorize"]
    else:
        options = ["-fopt-info-vec-all"]
    return _run([program, *flags, *options, "-c", str(source), "-o", "/dev/null"])


def _same_file(reported: str, source: Path) -> bool:
    return Path(reported).name == source.name


def _enclosing(loops: dict[int, Loopmark], line: int, window: int | None = None) -> Loopmark | None:
    """The nearest loop starting at or above ``line`` (at most ``window`` lines above, when given)."""
    above = [n for n in loops if n <= line and (window is None or line - n <= window)]
    return loops[max(above)] if above else None


def apply_gcc(report: str, source: Path, loops: dict[int, Loopmark]) -> None:
    """Fold GCC's -fopt-info-vec-all lines into ``loops``: a missed loop's reason is the next
    ``not vectorized:`` line, which GCC often places on the offending statement inside the loop."""
    awaiting: Loopmark | None = None
    for text in report.splitlines():
        match = _GCC.match(text)
        if match is None or not _same_file(match["file"], source):
            continue
        line, kind, message = int(match["line"]), match["kind"], match["msg"].strip()
        mark = loops.get(line)
        if mark is None and kind == "optimized":  # an OpenMP loop's outlined body is reported at its statement
            mark = _enclosing(loops, line, window=3)
        if kind == "optimized" and (width := re.search(r"loop vectorized using (\d+) byte vectors", message)):
            if mark is not None:
                mark.reported = mark.vectorised = True
                size = int(width.group(1))
                mark.width_bytes = max(mark.width_bytes or 0, size)
                mark.lanes = mark.width_bytes // 8
                mark.reason = None
        elif kind == "missed" and message.startswith("couldn't vectorize loop"):
            if mark is not None:
                mark.reported = True
            awaiting = mark
        elif kind == "missed" and "not vectorized:" in message and awaiting is not None:
            if not awaiting.vectorised and awaiting.reason is None:
                awaiting.reason = message.split("not vectorized:", 1)[1].strip().rstrip(".")
            awaiting = None


def apply_clang(report: str, source: Path, loops: dict[int, Loopmark]) -> None:
    """Fold Clang's loop-vectorize remarks into ``loops``; analysis remarks (the reason) name a column
    inside the loop, so they go to the nearest loop at or above their line."""
    for text in report.splitlines():
        match = _CLANG.match(text)
        if match is None or not _same_file(match["file"], source):
            continue
        line, message, which = int(match["line"]), match["msg"], match["pass"]
        if which == "-analysis":
            mark = _enclosing(loops, line)
            if mark is not None and not mark.vectorised and mark.reason is None:
                mark.reason = message.removeprefix("loop not vectorized:").strip()
            continue
        mark = loops.get(line)
        if mark is None:
            continue
        mark.reported = True
        if width := re.search(r"vectorization width: (\d+)", message):
            mark.vectorised = True
            mark.lanes = int(width.group(1))
            mark.width_bytes = 8 * mark.lanes
            mark.reason = None


def loopmarks(source: Path, compiler: str = "gcc", flags: tuple[str, ...] = DEFAULT_FLAGS,
              report: str | None = None) -> list[Loopmark]:
    """Every loop of ``source`` with its MV score, from the compiler's report (run unless given)."""
    loops = source_loops(source, openmp="-fopenmp" in flags)
    text = compiler_report(source, compiler, flags) if report is None else report
    (apply_clang if compiler.startswith("clang") else apply_gcc)(text, source, loops)
    return [loops[n] for n in sorted(loops)]


def map_to_sites(marks: list[Loopmark], sites: list[tuple[str, str, int]], window: int = 3
                 ) -> dict[str, Loopmark]:
    """Annotated loop sites ``(path, file, line)`` -> the loop that starts within ``window`` lines after the
    annotation in the same file (a C ``ma_loop_start`` stands just before its loop)."""
    mapped = {}
    for path, file, line in sites:
        candidates = [m for m in marks if _same_file(file, Path(m.file)) and line <= m.line <= line + window]
        if candidates:
            mapped[path] = candidates[0]
    return mapped


@dataclass(frozen=True)
class VecLoopCheck:
    """An ``ma_vec_loop_start`` assertion next to what the compiler did to the loop it stands before."""

    id: str
    path: str
    where: str           # the annotation's FILE:LINE
    asserted_mv: int
    loop: Loopmark

    @property
    def agrees(self) -> bool:
        return self.asserted_mv == self.loop.mv

    def describe(self) -> str:
        verdict = "as asserted" if self.agrees else f"but MV {self.asserted_mv} is asserted"
        return f"vec_loop {self.id} at {self.where}: compiler MV {self.loop.mv}, {verdict} ({self.loop.describe()})"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "where": self.where, "asserted_mv": self.asserted_mv,
                "agrees": self.agrees, "loop": self.loop.to_json()}


def check_vec_loops(marks: list[Loopmark], results: list[Any], window: int = 3) -> list[VecLoopCheck]:
    """Each ``vec_loop`` record (:class:`ma_post.vector.VecLoopResult`, one per site, lowest rank first) that
    stands within ``window`` lines before a loop of the compiled source, with that loop's loopmark: the paper's
    way to catch, before any run on the target, a loop asserted vectorised that the compiler refused."""
    seen: dict[tuple[str, str], Any] = {}
    for result in results:
        if result.file is not None and result.line is not None:
            seen.setdefault((result.id, result.path), result)
    records = list(seen.values())
    mapped = map_to_sites(marks, [(str(i), r.file, r.line) for i, r in enumerate(records)], window)
    return [VecLoopCheck(r.id, r.path, r.where, r.mv, mapped[str(i)]) for i, r in enumerate(records)
            if str(i) in mapped]
