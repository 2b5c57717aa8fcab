"""Golden outputs of the intermediate representation (Figure 6) and the control-flow model (Figure 11)."""

from __future__ import annotations

from pathlib import Path

import pytest
from post_fixtures import (
    Assign,
    Loop,
    Mpi,
    Op,
    Sub,
    Var,
    make_trace,
    site_node,
    stats,
    trace_doc,
    variable_entry,
    write_run,
)

from ma_cli.main import main
from ma_post.cfg import format_cfg
from ma_post.ir import format_ir
from ma_post.traceset import from_traces, load

# Figure 6 of the MA paper (an excerpt: it continues with "......").
FIGURE_6 = """\
1:num_proc_cols:2^ceil(log(nprocs)/(2*log(2)))
2:loop:niter
3:loop:l2npcols
4:mpi_irecv:dp*2
4:mpi_send:dp*2
4:loop:cgitmax
5:loop:l2npcols
6:mpi_irecv:dp*na/num_proc_cols
"""


def figure4_program() -> list:
    """The annotations of the paper's Figure 4 and the conj_grad subroutine they call."""
    return [
        Var("na", 1400), Var("nonzer", 7), Var("niter", 15), Var("nprocs", lambda e: e["__size"]),
        Var("dp", 8), Var("cgitmax", 25),
        Assign("num_proc_cols", "2^ceil(log(nprocs)/(2*log(2)))", given=2),
        Assign("l2npcols", "log(num_proc_cols)/log(2)"),
        Loop("conj_loop", "niter", [
            Loop("norm_loop", "l2npcols", [Mpi("mpi_irecv", "nrecv", "dp*2"), Mpi("mpi_send", "nsend", "dp*2")]),
            Sub("conj_grad", [
                Loop("cgit", "cgitmax", [
                    Loop("l2_loop", "l2npcols", [Mpi("mpi_irecv", "l6rcv", "dp*na/num_proc_cols"),
                                                 Mpi("mpi_send", "l6snd", "dp*na/num_proc_cols", count="2")]),
                    Op("flop", "flopzeta", "4 * na / num_proc_cols"),
                ]),
            ]),
        ]),
    ]


@pytest.fixture
def figure4_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "cg", figure4_program(), size=4)


def test_ir_golden_without_subroutine_lines_contains_the_paper_figure(figure4_dir: Path) -> None:
    text = format_ir(load(figure4_dir), subroutines=False)
    assert text == """\
1:num_proc_cols:2^ceil(log(nprocs)/(2*log(2)))
1:l2npcols:log(num_proc_cols)/log(2)
2:loop:niter
3:loop:l2npcols
4:mpi_irecv:dp*2
4:mpi_send:dp*2
4:loop:cgitmax
5:loop:l2npcols
6:mpi_irecv:dp*na/num_proc_cols
6:mpi_send:dp*na/num_proc_cols:count=2
5:flop:4 * na / num_proc_cols
"""
    # Every line of the paper's excerpt, in its order.
    lines = iter(text.splitlines())
    assert all(any(line == wanted for line in lines) for wanted in FIGURE_6.splitlines())


def test_ir_golden_with_subroutines_and_inputs(figure4_dir: Path) -> None:
    lines = format_ir(load(figure4_dir), inputs=True).splitlines()
    assert lines[:6] == ["0:input:na", "0:input:nonzer", "0:input:niter", "0:input:nprocs", "0:input:dp",
                         "0:input:cgitmax"]
    assert lines[11:14] == ["4:mpi_send:dp*2", "3:subroutine:conj_grad", "4:loop:cgitmax"]


def test_ir_derived_variables_only_in_the_table_and_nested_scopes() -> None:
    # A runtime that keeps derived variables only in the table (no assign node) still gets them listed,
    # at the depth of the scope that declared them.
    doc = trace_doc(
        [site_node("loop", "outer", "outer", "n", 1, predicted=stats(1, 3, 3, 3), children=[
            site_node("flop", "f", "outer/f", "half", 3, predicted=stats(3, 5, 5, 15))])],
        variables=[variable_entry("n", 3), variable_entry("m", 10, kind="derived", expr="2*n+4"),
                   variable_entry("half", 5, kind="derived", expr="m/2", scope="outer")])
    assert format_ir(from_traces([doc])) == "1:m:2*n+4\n2:loop:n\n2:half:m/2\n3:flop:half\n"


def test_cfg_golden(figure4_dir: Path) -> None:
    assert format_cfg(load(figure4_dir)) == """\
variable na = 1400
variable nonzer = 7
variable niter = 15
variable nprocs = 4
variable dp = 8
variable cgitmax = 25
num_proc_cols = 2^ceil(log(nprocs)/(2*log(2)))
l2npcols = log(num_proc_cols)/log(2)
loop conj_loop: niter
  loop norm_loop: l2npcols
    mpi_irecv nrecv: dp*2
    mpi_send nsend: dp*2
  subroutine conj_grad
    loop cgit: cgitmax
      loop l2_loop: l2npcols
        mpi_irecv l6rcv: dp*na/num_proc_cols
        mpi_send l6snd: dp*na/num_proc_cols (count 2)
      flop flopzeta: 4 * na / num_proc_cols
"""


def test_cfg_with_values_and_rank_dependent_variables(tmp_path: Path) -> None:
    write_run(tmp_path, [Var("local", lambda e: 10 * (e["__rank"] + 1)), Loop("l", "local", [Op("flop", "f", "3")])],
              size=3)
    text = format_cfg(load(tmp_path), values=True)
    assert text.splitlines() == [
        "variable local = 10..30 (per rank)  [calls/rank 1]",
        "loop l: local  [calls/rank 1; predicted 20; measured 20]",
        "  flop f: 3  [calls/rank 20; predicted 3; measured 3]",
    ]


def test_cli_ir_and_cfg(figure4_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", str(figure4_dir), "--no-subroutines"]) == 0
    assert capsys.readouterr().out.splitlines()[2:5] == FIGURE_6.splitlines()[1:4]
    assert main(["cfg", str(figure4_dir)]) == 0
    assert "  subroutine conj_grad\n" in capsys.readouterr().out
    assert main(["cfg", str(figure4_dir / "nothing")]) == 2


def test_ir_differs_per_rank_union(tmp_path: Path) -> None:
    # Rank 0 runs an extra site: the union tree keeps it, in order of first appearance.
    docs = [make_trace([Var("n", 2),
                        Loop("l", "n", [Op("flop", "f", "1"), *([Op("flop", "only0", "9")] if r == 0 else [])])],
                       r, 2) for r in range(2)]
    text = format_ir(from_traces(docs))
    assert text == "2:loop:n\n3:flop:1\n3:flop:9\n"
