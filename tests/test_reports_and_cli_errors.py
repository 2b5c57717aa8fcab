"""Reports that show every problem, and CLI errors users can act on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env
from post_fixtures import Loop, Op, Var, cg_program, make_trace, write_run
from test_c_runtime import compile_c, environment

from ma_cli.main import main
from ma_core.trace_format import rank_file

ANOMALIES = [
    {"kind": "unbalanced", "path": "l", "message": "loop 'l' was still open at exit", "count": 1,
     "file": "prog.py", "line": 3},
    {"kind": "mismatched_end", "path": "l", "message": "end of loop 'x', which is not open", "count": 2,
     "file": "prog.py", "line": 4},
    {"kind": "exception", "path": "l", "message": "ValueError raised inside loop 'l'", "count": 1,
     "file": "prog.py", "line": 5},
    {"kind": "evaluation", "path": "l", "message": "expression 'n/0' at column 2: division by zero", "count": 3,
     "file": "prog.py", "line": 6},
    {"kind": "unrepresentable", "path": "", "message": "variables[0].value: a non-finite number", "count": 1,
     "file": None, "line": None},
]


@pytest.fixture
def run_with_anomalies(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    directory.mkdir()
    rank_file(directory, 0).write_text(json.dumps(make_trace([Var("n", 3), Loop("l", "n")], anomalies=ANOMALIES)))
    return directory


def test_anomalies_are_in_every_format_with_file_and_line_and_fail_the_run(
        run_with_anomalies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(run_with_anomalies)]) == 1
    lines = capsys.readouterr()
    assert lines.out == "l:ma_loop:3:3:0.0:PASS=1:FAIL=0\n"  # stdout keeps the paper's format
    assert "1 PASS, 0 FAIL, 0 UNMEASURED (the runtime's tolerance); 8 anomalies" in lines.err
    for kind, line in (("unbalanced", 3), ("mismatched_end", 4), ("exception", 5), ("evaluation", 6)):
        assert f"prog.py:{line}: anomaly: {kind} at l: " in lines.err
    assert "anomaly: unrepresentable at (top): variables[0].value" in lines.err

    assert main(["validate", str(run_with_anomalies), "--format", "table"]) == 1
    table = capsys.readouterr().out
    assert "prog.py:6: anomaly: evaluation at l: expression 'n/0' at column 2: division by zero (x3, ranks 0)" in table

    assert main(["validate", str(run_with_anomalies), "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(a["kind"], a["file"], a["line"], a["count"]) for a in document["anomalies"]] == [
        (a["kind"], a["file"], a["line"], a["count"]) for a in ANOMALIES]
    assert document["summary"]["problems"] == ["5 kinds of anomaly"] and document["summary"]["ok"]

    assert main(["validate", str(run_with_anomalies), "--anomalies", "warn"]) == 0  # shown, not failing
    assert "prog.py:3: anomaly: unbalanced" in capsys.readouterr().err


REDECLARED_PY = """
import ma
ma.variable("n", 5)
ma.variable("n", 5)      # the same value again: fine
ma.variable("n", 7)      # line 5
ma.variable("n", 9)
"""

REDECLARED_C = r"""
#include "ma.h"

int main(void)
{
    ma_def_variable_int("n", 5);
    ma_def_variable_int("n", 5);
    ma_def_variable_int("n", 7);   /* line 8 */
    ma_def_variable_int("n", 9);
    return 0;
}
"""


def redeclared_anomaly(trace_dir: Path) -> dict[str, object]:
    trace = json.loads(rank_file(trace_dir, 0).read_text())
    found = [a for a in trace["anomalies"] if a["kind"] == "redeclared"]
    assert len(found) == 1, trace["anomalies"]
    return found[0]


def test_a_variable_declared_again_with_another_value_names_both_values_and_places_python(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(REDECLARED_PY))
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=clean_env(MA_TRACE_DIR="traces"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    anomaly = redeclared_anomaly(tmp_path / "traces")
    program = str(tmp_path / "prog.py")
    assert anomaly["message"] == (f"variable 'n' declared again with value 7 at {program}:5; it was 5 "
                                  f"(first declared at {program}:3)")
    assert (anomaly["count"], anomaly["file"], anomaly["line"]) == (2, program, 3)
    validate = subprocess.run([str(VENV_BIN / "ma"), "validate", "traces"], cwd=tmp_path, env=clean_env(),
                              capture_output=True, text=True, timeout=120)
    assert validate.returncode == 1
    assert f"{program}:3: anomaly: redeclared at n: variable 'n' declared again with value 7" in validate.stderr


def run_c_program(tmp_path: Path, name: str, text: str) -> Path:
    """Compile ``text`` as ``name.c`` and run it with its traces in ``tmp_path/traces``; the source's path."""
    source = tmp_path / f"{name}.c"
    source.write_text(text.lstrip("\n"))
    program = compile_c(source, tmp_path / name)
    done = subprocess.run([str(program)], cwd=tmp_path, env=environment(tmp_path / "traces"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return source


def test_a_variable_declared_again_with_another_value_names_both_values_and_places_c(tmp_path: Path) -> None:
    source = run_c_program(tmp_path, "redeclared", REDECLARED_C)
    anomaly = redeclared_anomaly(tmp_path / "traces")
    assert anomaly["message"] == (f"variable 'n' declared again with value 7 at {source}:7; it was 5 "
                                  f"(first declared at {source}:5)")
    assert (anomaly["count"], anomaly["line"]) == (2, 5)


UNEVALUATED_C = r"""
#include <ma.h>
int main(void) {
    ma_init();
    ma_def_variable_int("n", 0);
    ma_loop_start("l", "7/n", MA_NO_VALUE); /* division by zero: the C runtime records it and runs on */
    ma_loop_end("l", 7);
    ma_loop_start("k", "7", MA_NO_VALUE);
    ma_loop_end("k", 7);
    ma_finalize();
    return 0;
}
"""


def test_an_unevaluated_assertion_is_never_a_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The measured trip count of `l` has no prediction to compare with: not PASS, and a problem of the run.
    source = run_c_program(tmp_path, "unevaluated", UNEVALUATED_C)
    traces = str(tmp_path / "traces")
    assert main(["validate", traces]) == 1
    lines = capsys.readouterr()
    assert lines.out == "l:ma_loop:-:7:-:PASS=0:FAIL=0:UNMEASURED=1\nk:ma_loop:7:7:0.0:PASS=1:FAIL=0\n"
    assert ("2 assertions: 1 PASS, 0 FAIL, 1 UNMEASURED (the runtime's tolerance); 1 call unevaluated; "
            "1 anomalies\n") in lines.err
    assert (f"{source}:5: unevaluated: l (loop): the prediction of 1 of 1 measured call could not be evaluated"
            in lines.err)

    assert main(["validate", traces, "--format", "json", "--tolerance", "0.5"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(site["id"], site["status"], site["unevaluated"]) for site in document["sites"]] == [
        ("l", "UNMEASURED", 1), ("k", "PASS", 0)]
    assert document["summary"]["pass"] == 1 and document["summary"]["unevaluated"] == 1
    assert document["summary"]["problems"] == ["1 kind of anomaly", "1 assertion with unevaluated calls"]

    assert main(["validate", traces, "--anomalies", "warn"]) == 0  # asked to warn: shown, not failed
    assert "unevaluated: l (loop)" in capsys.readouterr().err


FORGED = "forged:ma_flop:1:1:0.0:PASS=1:FAIL=0"


def test_a_newline_in_a_site_id_cannot_forge_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace is untrusted: a site id holding a newline and a whole validation line is printed on its own
    line, the newline escaped (``\\n``), in the lines, the notes and the table."""
    program = [Var("n", 4), Op("flop", f"f\n{FORGED}", "n", actual=lambda env: 8), Op("flop", "g", "n")]
    run = write_run(tmp_path / "run", program)
    assert main(["validate", str(run)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"f\\n{FORGED}:ma_flop:4:8:-0.5:PASS=0:FAIL=1", "g:ma_flop:4:4:0.0:PASS=1:FAIL=0"]
    assert f"\n{FORGED}" not in err and f"f\\n{FORGED}" in err  # the fail note names it, escaped
    assert main(["validate", str(run), "--format", "table"]) == 1
    table = capsys.readouterr().out
    assert not any(line.startswith("forged") for line in table.splitlines()) and f"f\\n{FORGED}" in table


# --- CLI errors ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cg_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("cg") / "run", cg_program(), size=2)


@pytest.mark.parametrize("command", [
    ["eval", "-q", "flops", "--set", "nproc=1024"],
    ["msgdist", "--set", "nproc=1024"],
    ["sweep", "-q", "flops", "--set", "nproc=2^(0:4)"],
    ["scaling", "-q", "flops", "--nprocs", "1:4", "--set", "nproc=4"],
    ["sensitivity", "-q", "flops", "--at", "nproc=4"],
])
def test_an_unknown_parameter_is_an_error_that_suggests_the_closest(
        cg_run: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    option = "--at" if "--at" in command else "--set"
    assert main([command[0], str(cg_run), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ma {command[0]}: error: {option} nproc=...: the run has no parameter 'nproc'; "
                          "did you mean 'nprocs'? known parameters: ")
    assert "na, nonzer, niter, nprocs" in err


def test_a_known_parameter_still_evaluates(cg_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(cg_run), "-q", "flops", "--set", "nprocs=4"]) == 0
    assert "nprocs" in capsys.readouterr().out


def test_an_eval_grid_past_its_cap_is_refused_before_any_work(cg_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = ",".join(str(v) for v in range(1000, 1101))  # 101 values per input: 101^3 > 10^6 points
    argv = ["eval", str(cg_run), "-q", "flops", "--set", f"na={values}", "--set", f"niter={values}",
            "--set", f"nonzer={values}"]
    assert main(argv) == 2
    assert "ma eval: error: the grid has 1,030,301 points, more than --max-points 1,000,000" in capsys.readouterr().err
    assert main([*argv[:6], "--set", "niter=1,2", "--max-points", "202", "--format", "csv"]) == 0  # 101 x 2 points
    assert len(capsys.readouterr().out.splitlines()) == 1 + 202


def test_synth_refuses_more_ranks_than_its_limit_before_writing(cg_run: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "smpi"
    assert main(["synth", str(cg_run), str(out), "--set", "nprocs=1e8"]) == 2
    assert ("ma synth: error: nprocs=100,000,000 would write 100,000,000 rank files; the limit is 65,536 "
            "(--max-ranks)") in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())
    assert main(["synth", str(cg_run), str(out), "--set", "nprocs=8", "--max-ranks", "4"]) == 2
    assert "the limit is 4" in capsys.readouterr().err


def test_ma_run_without_a_command_names_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-n", "2"]) == 2
    assert capsys.readouterr().err.startswith("ma run: error: no command to run")


def test_a_trip_count_past_64_bits_is_an_annotation_error(tmp_path: Path) -> None:
    program = textwrap.dedent("""
        import ma
        with ma.subroutine("s"):
            with ma.loop("l", "3") as lp:
                try:
                    lp.end(3**10000)
                except ma.AnnotationError as error:
                    print(error)
                lp.end(2**63 - 1)  # the largest count taken
    """)
    (tmp_path / "prog.py").write_text(program)
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=clean_env(MA_TRACE_DIR="traces"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"loop 'l' (s/l at {tmp_path / 'prog.py'}:4): end() got an integer of 15850 bits; "
                           "a trip count is at most 2^63 - 1 (9223372036854775807)\n")


def test_a_closed_pipe_ends_a_command_quietly() -> None:
    # `ma ... | head`: the reader is gone before the command writes; no traceback, SIGPIPE's status.
    proc = subprocess.Popen([str(VENV_BIN / "ma"), "machine", "show", "amd-epyc-zen4-kvm"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err
