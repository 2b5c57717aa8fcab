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

from ma_core.trace_format import MAX_SITE_DEPTH, rank_file

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
    ma_flop_start("\xc3\xa9t\xc3\xa9", "1", MA_NO_VALUE);
    ma_flop_stop("\xc3\xa9t\xc3\xa9");
    ma_finalize();
    return 0;
}
"""


def test_a_c_id_that_is_not_utf8_leaves_a_readable_trace(tmp_path: Path) -> None:
    """libma's JSON writer keeps well-formed UTF-8 as it is and writes any other byte as the text \\xNN."""
    source = tmp_path / "bytes.c"
    source.write_bytes(NON_UTF8_C.lstrip("\n").encode("latin-1"))
    program = compile_c(source, tmp_path / "bytes", "-Wno-error")
    done = subprocess.run([str(program)], cwd=tmp_path, env=environment(tmp_path / "traces"), capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    text = rank_file(tmp_path / "traces", 0).read_bytes().decode("utf-8")
    json.loads(text)
    assert '"f\\\\xFF"' in text and '"\u00e9t\u00e9"' in text  # the lone byte named; UTF-8 kept as it is


DEEP_C = r"""
#include <ma.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 0;
    ma_init();
    for (int level = 0; level < depth; level++)
        ma_subroutine_start("s");
    ma_loop_start("innermost", "1", 1);
    ma_loop_end("innermost", 1);
    for (int level = 0; level < depth; level++)
        ma_subroutine_end("s");
    ma_subroutine_start("after");
    ma_subroutine_end("after");
    ma_finalize();
    return 0;
}
"""
MEASURE_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=False, capture_output=True); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


@pytest.fixture(scope="module")
def deep_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("deep_c")
    (work / "deep.c").write_text(DEEP_C.lstrip("\n"))
    return compile_c(work / "deep.c", work / "deep")


@pytest.mark.parametrize("depth", [MAX_SITE_DEPTH - 1, MAX_SITE_DEPTH + 100])
def test_a_c_tree_past_the_depth_limit_is_refused_there_and_the_trace_reads(deep_c: Path, tmp_path: Path,
                                                                           depth: int) -> None:
    """The C runtime keeps the Python runtime's limit (MAX_SITE_DEPTH): the start that would pass it is an
    anomaly naming its file and line, it and what is inside are not recorded, their ends match them, and the
    tree goes on after them."""
    import ma_post

    done = subprocess.run([str(deep_c), str(depth)], cwd=tmp_path, env=environment(tmp_path / "traces"),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ts = ma_post.load(tmp_path / "traces")
    paths = [site.path for site in ts.sites.values()]
    assert "after" in paths  # the ends of the refused starts did not close the levels below them
    anomalies = [a for a in ts.anomalies if "at most" in a.message]
    if depth < MAX_SITE_DEPTH:
        assert "/".join(["s"] * depth + ["innermost"]) in paths and not anomalies
    else:
        assert max(path.count("/") + 1 for path in paths) == MAX_SITE_DEPTH
        assert len(anomalies) == 1 and (anomalies[0].file or "").endswith("deep.c"), anomalies
        assert f"level {MAX_SITE_DEPTH + 1} of the site tree" in anomalies[0].message


NEXT_IN_DEEP_C = r"""
#include <ma.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 0; /* subroutine levels between the two loops */
    ma_init();
    ma_loop_start("l", "3", MA_NO_VALUE);
    for (int i = 0; i < 3; i++) {
        ma_loop_next("l");
        for (int level = 0; level < depth; level++)
            ma_subroutine_start("s");
        ma_loop_start("l", "4", MA_NO_VALUE); /* a loop of the same id, as a recursion makes one */
        for (int k = 0; k < 4; k++)
            ma_loop_next("l");
        ma_loop_end("l", MA_NO_VALUE);
        for (int level = 0; level < depth; level++)
            ma_subroutine_end("s");
    }
    ma_loop_end("l", MA_NO_VALUE); /* its trip count: the ma_loop_next calls it got */
    ma_subroutine_start("after");
    ma_subroutine_end("after");
    ma_finalize();
    return 0;
}
"""


@pytest.mark.parametrize("depth", [MAX_SITE_DEPTH - 2, MAX_SITE_DEPTH - 1])
def test_ma_loop_next_inside_a_loop_refused_as_too_deep_changes_nothing_recorded(tmp_path: Path, depth: int) -> None:
    """The ma_loop_next calls of a loop past the depth limit belong to it, not to the recorded loop of the same
    id around it: the outer loop's trip count stays 3, no other anomaly, and the trace reads. One level less,
    the inner loop is recorded with its 4 iterations a call."""
    import ma_post

    (tmp_path / "next.c").write_text(NEXT_IN_DEEP_C.lstrip("\n"))
    program = compile_c(tmp_path / "next.c", tmp_path / "next")
    done = subprocess.run([str(program), str(depth)], cwd=tmp_path, env=environment(tmp_path / "traces"),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ts = ma_post.load(tmp_path / "traces")
    outer = ts.sites[(("loop", "l"),)]
    assert outer.measured.per_rank().sum.tolist() == [3] and outer.fails.sum() == 0
    inner_path = "/".join(["l", *["s"] * depth, "l"])
    inner = [site for site in ts.sites.values() if site.path == inner_path]
    problems = [a.message for a in ts.anomalies]
    if depth + 2 <= MAX_SITE_DEPTH:
        assert not problems and len(inner) == 1
        assert inner[0].measured.per_rank().sum.tolist() == [12] and inner[0].fails.sum() == 0
    else:
        assert not inner and len(problems) == 1 and f"would open level {MAX_SITE_DEPTH + 1}" in problems[0], problems
        assert max(site.path.count("/") + 1 for site in ts.sites.values()) == MAX_SITE_DEPTH
    assert "after" in [site.path for site in ts.sites.values()]


@pytest.mark.slow
def test_c_memory_stays_bounded_whatever_the_nesting_depth(deep_c: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", MEASURE_RSS, str(deep_c), "10000"], cwd=tmp_path,
                          env=environment(tmp_path / "traces"), capture_output=True, text=True, timeout=600)
    peak_kib = int(done.stdout)
    assert peak_kib < 64 * 1024, f"{peak_kib / 1024:.0f} MiB for 10,000 nested subroutines"
