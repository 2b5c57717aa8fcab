"""No trace is lost: values JSON cannot carry, refused predictions, and ranks that write no trace."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env
from test_c_runtime import compile_c

POWER_PROGRAM = """
import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
k = 10000
ma.variable("k", k)
ma.variable("big", 3**k)            # 4772 digits: past CPython's JSON digit limit
ma.variable("spread", float("inf"))  # not representable in JSON either
with ma.subroutine("main"):
    try:
        with ma.loop("power", "3^k") as lp:  # 3^10000 is past the expression language's magnitude limit
            pass
    except ma.ExpressionError as error:
        print(f"rank {comm.rank} refused at column {error.column}\\n", end="", flush=True)
    with ma.loop("counted", "k") as lp:
        lp.end(k)
print("rank", comm.rank, "done", flush=True)
"""


def ma_command(tmp_path: Path, *args: str, source: str | None = None) -> subprocess.CompletedProcess[str]:
    if source is not None:
        (tmp_path / "prog.py").write_text(textwrap.dedent(source))
    return subprocess.run([str(VENV_BIN / "ma"), *args], cwd=tmp_path, env=clean_env(), capture_output=True,
                          text=True, timeout=180)


def test_unrepresentable_values_are_written_in_the_documented_form_and_read_back() -> None:
    from ma_post.reader import _number_from_text
    from ma_runtime.trace import encode

    node = {"id": "l", "type": "loop", "path": "main/l", "file": "app.py", "line": 7,
            "measured": {"n": 1, "min": 3**10000, "max": -(3**10000), "sum": float("nan")}}
    document = {"format": "ma-trace", "variables": [{"name": "x", "value": float("-inf")}],
                "threads": [{"root": {"id": "", "type": "root", "path": "", "children": [node]}}], "anomalies": []}
    text = encode(document)
    assert "NaN" not in text and "Infinity" not in text  # strict JSON
    back = json.loads(text, object_hook=_number_from_text)
    measured = back["threads"][0]["root"]["children"][0]["measured"]
    assert measured["min"] == math.inf and measured["max"] == -math.inf and math.isnan(measured["sum"])
    assert back["variables"][0]["value"] == -math.inf
    raw = json.loads(text)
    assert int(raw["threads"][0]["root"]["children"][0]["measured"]["min"]["$num"], 16) == 3**10000
    folded = sorted((a["kind"], a["path"], a["file"], a["line"], a["count"]) for a in back["anomalies"])
    assert folded == [("unrepresentable", "", None, None, 1), ("unrepresentable", "main/l", "app.py", 7, 3)]
    first = next(a["message"] for a in back["anomalies"] if a["path"] == "main/l")
    assert first.startswith("threads[0].root.children[0].measured.min: an integer of 15850 bits")
    assert encode({"a": [1, 2.5, None]}) == '{"a":[1,2.5,null]}'  # the ordinary path is plain JSON


@pytest.mark.mpi
def test_a_power_past_the_limits_loses_no_trace(tmp_path: Path) -> None:
    done = ma_command(tmp_path, "run", "-n", "2", "--", sys.executable, "prog.py", source=POWER_PROGRAM)
    assert done.returncode == 0, done.stderr
    assert "rank 0 refused at column 3" in done.stdout and "rank 1 refused at column 3" in done.stdout
    assert "2 of 2 rank traces" in done.stderr
    for rank in (0, 1):
        text = (tmp_path / "ma-traces" / f"rank-{rank}.ma.json").read_text()
        trace = json.loads(text)
        assert trace["header"]["status"] == "complete"
        evaluation = [a["message"] for a in trace["anomalies"] if a["kind"] == "evaluation"]
        assert len(evaluation) == 1 and "at column 3: result is too large" in evaluation[0]
        unrepresentable = [a for a in trace["anomalies"] if a["kind"] == "unrepresentable"]
        # big's value, min, max and spread's value, min, max in the variable table; the same in the two
        # variable sites' predictions (min, max, sum each)
        counts = {a["path"]: a["count"] for a in unrepresentable}
        assert counts == {"": 6, "big": 3, "spread": 3}, unrepresentable
        assert next(a for a in unrepresentable if a["path"] == "")["message"].startswith(
            "variables[1].value: an integer of 15850 bits")
        big = next(v for v in trace["variables"] if v["name"] == "big")
        assert int(big["value"]["$num"], 16) == 3**10000
    from ma_post import load

    traces = load(tmp_path / "ma-traces")
    assert traces is not None
    validate = ma_command(tmp_path, "validate", "ma-traces")
    assert validate.returncode == 1 and "Traceback" not in validate.stderr, validate.stderr  # the anomalies
    assert "counted:ma_loop:10000:10000" in validate.stdout
    assert "prog.py:12: anomaly: evaluation at main/power: expression '3^k' at column 3" in validate.stderr
    assert ma_command(tmp_path, "validate", "ma-traces", "--anomalies", "warn").returncode == 0


@pytest.mark.mpi
def test_ma_run_fails_when_a_rank_writes_no_trace(tmp_path: Path) -> None:
    source = """
        import os
        import ma
        if os.environ.get("PMI_RANK") != "1":   # rank 1 runs no annotation, so it writes no trace
            ma.variable("n", 1)
    """
    done = ma_command(tmp_path, "run", "-n", "2", "--", sys.executable, "prog.py", source=source)
    assert done.returncode == 1, done.stderr
    assert "ma run: exit status 0; 1 of 2 rank traces" in done.stderr
    assert "ma run: error: no trace from rank 1 (1 of 2)" in done.stderr
    assert (tmp_path / "ma-traces" / "rank-0.ma.json").is_file()


C_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "ma.h"

int main(int argc, char **argv)
{
    static char deep[1024], chain[9000];
    MPI_Init(&argc, &argv);
    ma_def_variable_int("k", 10000);
    ma_loop_start("power", "3^k", MA_NO_VALUE);        /* past the magnitude limit: an evaluation anomaly */
    ma_loop_end("power", 1);
    for (int i = 0; i < 150; i++)                     /* 150 levels of parentheses: past the depth limit */
        strcat(deep, "(");
    strcat(deep, "1");
    for (int i = 0; i < 150; i++)
        strcat(deep, ")");
    ma_loop_start("deep", deep, MA_NO_VALUE);
    ma_loop_end("deep", 1);
    strcpy(chain, "k");                               /* a 4,001-term chain: evaluated in a loop */
    for (int i = 1; i <= 4000; i++)
        strcat(chain, i % 2 ? "+1" : "-1");
    ma_loop_start("chain", chain, MA_NO_VALUE);
    ma_loop_end("chain", 10000);
    for (int i = 0; i < 2; i++) {                      /* each prediction finite, their sum is not */
        ma_loop_start("huge", "1e308", MA_NO_VALUE);
        ma_loop_end("huge", 1);
    }
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.mpi
def test_the_c_runtime_under_ma_run_reports_refused_expressions_and_keeps_its_trace(tmp_path: Path) -> None:
    source = tmp_path / "limits.c"
    source.write_text(C_PROGRAM)
    compile_c(source, tmp_path / "limits")
    done = ma_command(tmp_path, "run", "-n", "2", "--", str(tmp_path / "limits"))
    assert done.returncode == 0, done.stderr
    assert "2 of 2 rank traces" in done.stderr
    for rank in (0, 1):
        trace = json.loads((tmp_path / "ma-traces" / f"rank-{rank}.ma.json").read_text())
        assert trace["header"]["status"] == "complete"
        evaluation = {a["path"]: a["message"] for a in trace["anomalies"] if a["kind"] == "evaluation"}
        assert "at column 3: result is too large" in evaluation["power"]
        assert "at column 101: nested too deeply" in evaluation["deep"]
        assert len(evaluation["deep"]) < 600  # a bounded excerpt of the text
        chain = next(n for n in trace["threads"][0]["root"]["children"] if n["id"] == "chain")
        assert chain["predicted"]["max"] == 10000 and chain["pass"] == 1
        huge = next(n for n in trace["threads"][0]["root"]["children"] if n["id"] == "huge")
        assert huge["predicted"]["sum"] == {"$num": "inf"} and huge["predicted"]["max"] == 1e308
        assert [a["count"] for a in trace["anomalies"] if a["kind"] == "unrepresentable"] == [1]
    from ma_post import load

    assert load(tmp_path / "ma-traces") is not None  # the form reads back
