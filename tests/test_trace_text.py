"""Traces are always readable: text that is not valid Unicode and site trees too deep to write are refused at the
annotation that makes them, with its file and line (docs/reliability.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import clean_env
from test_c_runtime import compile_c, environment

from ma_core.trace_format import rank_file
from ma_runtime.sites import MAX_SITE_DEPTH

SURROGATES = """
import ma
for call in (lambda: ma.flop("f\\udcff", "1"), lambda: ma.flop("g", "n\\ud800 + 1"),
             lambda: ma.subroutine("s\\udc80"), lambda: ma.assign("x", "\\udcffn")):
    try:
        with call() or ma.no_tracing():
            pass
    except ma.AnnotationError as error:
        print(ascii(str(error)))
with ma.flop("ok", "1"):
    pass
"""


def run_python(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prog.py").write_text(textwrap.dedent(program))
    return subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=clean_env(MA_TRACE_DIR="traces"),
                          capture_output=True, text=True, timeout=120)


def test_lone_surrogates_are_refused_at_the_call_with_file_and_line(tmp_path: Path) -> None:
    done = run_python(tmp_path, SURROGATES)
    assert done.returncode == 0, done.stderr
    prog = tmp_path / "prog.py"
    lines = [line.strip('"') for line in done.stdout.splitlines()]  # as ascii() prints them
    assert len(lines) == 4, done.stdout
    assert lines[0].startswith(f"{prog}:6: flop id 'f\\\\udcff' is not valid Unicode text (it holds a lone surrogate")
    assert lines[1].startswith(f"{prog}:6: flop expression 'n\\\\ud800 + 1' is not valid Unicode text")
    assert lines[2].startswith(f"{prog}:6: subroutine id 's\\\\udc80' is not valid Unicode text")
    assert lines[3].startswith(f"{prog}:4: ma.assign('x', ...): the expression '\\\\udcffn' is not valid Unicode")
    text = rank_file(tmp_path / "traces", 0).read_bytes()
    assert b"\\ud" not in text and b"\\udc" not in text  # nothing of them reached the trace
    json.loads(text.decode("utf-8"))


DEEP = """
import contextlib
import ma

with contextlib.ExitStack() as stack:
    for level in range({depth}):
        stack.enter_context(ma.subroutine(f"s{{level % 3}}"))
    ma.flush()
print("ran")
"""


def test_a_site_tree_as_deep_as_allowed_is_written_and_read(tmp_path: Path) -> None:
    done = run_python(tmp_path, DEEP.format(depth=MAX_SITE_DEPTH))
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")
    validate = subprocess.run([sys.executable, "-m", "ma_cli.main", "validate", "traces"], cwd=tmp_path,
                              env=clean_env(), capture_output=True, text=True, timeout=120)
    assert validate.returncode == 0, validate.stderr


def test_a_deeper_site_tree_is_refused_at_the_call_with_file_and_line(tmp_path: Path) -> None:
    done = run_python(tmp_path, DEEP.format(depth=MAX_SITE_DEPTH + 100))
    assert done.returncode == 1 and "RecursionError" not in done.stderr
    assert (f"ma_core.errors.AnnotationError: {tmp_path / 'prog.py'}:7: subroutine 's1' would open level "
            f"{MAX_SITE_DEPTH + 1} of the site tree; it is at most {MAX_SITE_DEPTH} levels deep") in done.stderr
    trace = json.loads(rank_file(tmp_path / "traces", 0).read_text())
    assert trace["header"]["status"] == "exception"  # written, with the levels opened before the refusal


NON_UTF8_C = r"""
#include <ma.h>
int main(void) {
    ma_init();
    ma_flop_start("f\xff", "1", MA_NO_VALUE);
    ma_flop_stop("f\xff");
    ma_finalize();
    return 0;
}
"""


@pytest.mark.xfail(strict=True, reason="the C runtime writes the id's bytes as they are: libma's JSON writer must "
                                       "escape or refuse bytes that are not UTF-8 (ma_trace.c)")
def test_a_c_id_that_is_not_utf8_leaves_a_readable_trace(tmp_path: Path) -> None:
    source = tmp_path / "bytes.c"
    source.write_bytes(NON_UTF8_C.lstrip("\n").encode("latin-1"))
    program = compile_c(source, tmp_path / "bytes", "-Wno-error")
    done = subprocess.run([str(program)], cwd=tmp_path, env=environment(tmp_path / "traces"), capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    json.loads(rank_file(tmp_path / "traces", 0).read_bytes().decode("utf-8"))


DEEP_C = r"""
#include <ma.h>
int main(void) {
    ma_init();
    for (int level = 0; level < 10000; level++)
        ma_subroutine_start("s");
    for (int level = 0; level < 10000; level++)
        ma_subroutine_end("s");
    ma_finalize();
    return 0;
}
"""
MEASURE_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=False, capture_output=True); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the C runtime's memory grows faster than the nesting depth (200-600 MB "
                                       "for 10,000 levels): libma must keep per-level state linear (ma_runtime.c)")
def test_c_memory_stays_linear_in_the_nesting_depth(tmp_path: Path) -> None:
    source = tmp_path / "deep.c"
    source.write_text(DEEP_C.lstrip("\n"))
    program = compile_c(source, tmp_path / "deep")
    done = subprocess.run([sys.executable, "-c", MEASURE_RSS, str(program)], cwd=tmp_path,
                          env=environment(tmp_path / "traces"), capture_output=True, text=True, timeout=600)
    peak_kib = int(done.stdout)
    assert peak_kib < 64 * 1024, f"{peak_kib / 1024:.0f} MiB for 10,000 nested subroutines"
