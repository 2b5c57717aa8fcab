"""Symbolic models: construction, notes on what a product of trip counts cannot express, evaluation, msgdist."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy
from post_fixtures import (
    Assign,
    If,
    Loop,
    Op,
    Sub,
    Var,
    cg_program,
    checked,
    make_trace,
    site_node,
    trace_doc,
    write_run,
)

from ma_cli.main import main
from ma_core.errors import MAError
from ma_post.evaluation import evaluate, exact_value
from ma_post.models import DEFAULT_QUANTITIES, ModelBuilder, ModelError, model
from ma_post.msgdist import measured_distribution, message_distribution
from ma_post.traceset import TraceSet, from_traces, load

S = sympy.Symbol


def run_of(program: list, size: int = 1, **kwargs: Any) -> TraceSet:
    return from_traces([make_trace(program, r, size, **kwargs) for r in range(size)])


def test_cg_model_at_one_parameter_set_predicts_another_run(tmp_path: Path) -> None:
    small = load(write_run(tmp_path / "small", cg_program(na=1400, nonzer=7, niter=15), size=4))
    big = load(write_run(tmp_path / "big", cg_program(na=7000, nonzer=8, niter=3), size=16))
    small_builder, big_builder = ModelBuilder(small), ModelBuilder(big)
    for quantity in (*DEFAULT_QUANTITIES, "mpi_allreduce_bytes", "recv_count", "bytes_per_message"):
        m = small_builder.model(quantity)
        assert not [n for n in m.notes if n.kind == "check"], m.notes
        # The run at the other parameters: what its own assertions predicted, per rank.
        if quantity == "bytes_per_message":
            truth = (checked(big_builder.model("mpi_bytes")).trace_predicted
                     / checked(big_builder.model("mpi_count")).trace_predicted)
        else:
            truth = checked(big_builder.model(quantity)).trace_predicted
        value = m.evaluate({"na": 7000, "nonzer": 8, "niter": 3, "nprocs": 16})
        assert value == pytest.approx(float(truth[0]), rel=1e-12), quantity
        assert np.all(truth == truth[0])


def test_cg_model_structure() -> None:
    ts = run_of(cg_program(), size=4)
    flops = model(ts, "flops")
    assert flops.inputs == ["cgitmax", "na", "niter", "nonzer", "nprocs"]
    assert list(flops.definitions) == ["num_proc_cols", "num_proc_rows"]  # dependencies first
    assert flops.definitions["num_proc_rows"] == S("nprocs") / S("num_proc_cols")
    term = next(t for t in flops.terms if t.site.path == "conj_loop/conj_grad/cgit/flopq")
    assert term.multiplier == S("niter") * S("cgitmax")
    assert term.value == 2 * S("nonzer") * (S("nonzer") + 1) * S("na") / S("nprocs")
    inline = model(ts, "flops", inline=True)
    assert inline.definitions == {} and S("num_proc_rows") not in inline.expr.free_symbols
    assert sympy.simplify(inline.expr - flops.inlined()) == 0
    point = {"na": 150000, "nonzer": 15, "niter": 75, "nprocs": 1024, "cgitmax": 25}
    assert inline.evaluate(point) == pytest.approx(flops.evaluate(point), rel=1e-14)
    assert float(exact_value(flops, point)) == pytest.approx(flops.evaluate(point), rel=1e-14)
    # The per-subroutine parts add up to the model.
    parts = flops.by_subroutine()
    assert set(parts) == {"makea", "init_loop/conj_grad", "conj_loop/conj_grad", ""}
    assert sympy.simplify(sum(parts.values()) - flops.expr) == 0
    by_name = flops.by_subroutine(by="name")
    assert set(by_name) == {"makea", "conj_grad", ""}
    assert sympy.expand(by_name["conj_grad"] - parts["init_loop/conj_grad"] - parts["conj_loop/conj_grad"]) == 0
    mpi = model(ts, "mpi_bytes")
    send = model(ts, "send_bytes")
    assert 0 < send.evaluate({}) < mpi.evaluate({})
    assert model(ts, "mpi_barrier_count").expr == 1


def test_repeated_subroutine_gets_its_factor() -> None:
    body = [Sub("s", [Op("flop", "f", "3*n")]), Op("flop", "g", "1"), Sub("s", [Op("flop", "f", "3*n")])]
    ts = run_of([Var("n", 7), Loop("l", "n", body)])
    m = model(ts, "flops")
    assert m.expr == 2 * 3 * S("n") * S("n") + S("n")
    assert any(n.kind == "repeated" and n.path == "l/s" and "2 times" in n.message for n in m.notes)
    assert checked(m).max_rel_diff() == 0


def test_conditional_site_is_flagged_and_observed_factor_is_optional() -> None:
    program = [Var("n", 10), Loop("l", "n", [If(lambda e: e["i"] % 2 == 0, [Op("flop", "f", "100")])], index="i")]
    ts = run_of(program)
    literal = model(ts, "flops")
    assert literal.expr == 100 * S("n")
    kinds = {n.kind for n in literal.notes}
    assert {"conditional", "check"} <= kinds
    cond = next(n for n in literal.notes if n.kind == "conditional")
    assert cond.path == "l/f" and "runs 0.5 times per loop iteration" in cond.message and "1/2" in cond.message
    assert checked(literal).trace_predicted[0] == 500 and checked(literal).model[0] == 1000
    observed = model(ts, "flops", conditional="observed")
    assert observed.expr == 50 * S("n")
    assert checked(observed).max_rel_diff() == 0
    with pytest.raises(ModelError):
        ModelBuilder(ts, conditional="maybe")


def test_varying_trip_count_is_flagged() -> None:
    # A triangular loop: the inner trip count depends on the outer index.
    program = [Var("n", 6), Loop("outer", "n", [Loop("inner", "n - i", [Op("flop", "f", "1")])], index="i")]
    m = model(run_of(program), "flops")
    notes = {(n.kind, n.path) for n in m.notes}
    assert ("varying", "outer/inner") in notes  # "n - i" changes between calls
    assert ("varying", "outer") in notes  # input i takes several values
    assert checked(m).trace_predicted[0] == 21


def test_loop_assertion_that_fails_is_flagged() -> None:
    program = [Var("n", 8), Loop("l", "n", [Op("flop", "f", "2")], actual="n + 1")]
    m = model(run_of(program), "flops")
    assert any(n.kind == "loop_mismatch" and n.path == "l" for n in m.notes)
    assert m.expr == 2 * S("n")


def test_rank_dependent_input_gives_per_rank_values(tmp_path: Path) -> None:
    program = [Var("local", lambda e: 100 + 2 * e["__rank"]), Var("n", 5),
               Loop("l", "local", [Op("flop", "f", "n")])]
    ts = run_of(program, size=3)
    m = model(ts, "flops")
    assert m.rank_dependent_inputs() == {"local": (100.0, 104.0)}
    assert any(n.kind == "rank_dependent" for n in m.notes)
    result = evaluate(m, {"n": 10})
    assert result.per_rank is not None
    assert result.per_rank.tolist() == [1000, 1020, 1040] and result.value == 1020
    assert result.worst_rank() == (2, 1040)
    assert evaluate(m, {"n": 10}, rank=1).value == 1020
    assert evaluate(m, {"n": 10}, rank="max").value == 1040
    grid = evaluate(m, {"n": np.array([1.0, 2.0])})
    assert grid.per_rank is not None and grid.per_rank.shape == (3, 2) and grid.value.tolist() == [102, 204]
    assert evaluate(m, {"local": 7, "n": 2}).per_rank is None  # nothing left per rank
    with pytest.raises(ModelError, match="rank 9 is not in the trace"):
        evaluate(m, {}, rank=9)


def test_conflicting_derived_definitions_resolve_by_scope() -> None:
    program = [Var("n", 4),
               Sub("a", [Assign("m", "2*n"), Op("flop", "fa", "m")]),
               Sub("b", [Assign("m", "3*n"), Op("flop", "fb", "m")])]
    m = model(run_of(program), "flops")
    assert m.expr == 5 * S("n") and m.definitions == {}
    assert checked(m).max_rel_diff() == 0


def test_derived_variable_redefined_from_an_outer_one() -> None:
    program = [Var("n", 40), Assign("m", "n/2"), Sub("s", [Assign("m", "m/2"), Op("flop", "f", "m")]),
               Op("flop", "g", "m")]
    m = model(run_of(program), "flops")
    assert sympy.simplify(m.inlined() - (S("n") / 4 + S("n") / 2)) == 0
    assert checked(m).max_rel_diff() == 0


def test_undeclared_variable_becomes_a_parameter() -> None:
    doc = trace_doc([site_node("flop", "f", "f", "q*2", 1, predicted=None)])
    m = model(from_traces([doc]), "flops")
    assert m.inputs == ["q"] and any(n.kind == "undeclared" for n in m.notes)
    with pytest.raises(ModelError, match="input 'q' has no value in the trace"):
        m.evaluate({})
    assert m.evaluate({"q": 21}) == 42


def test_threads_add_up() -> None:
    work = [Var("n", 4), Loop("work", "n", [Op("flop", "f", "10")])]
    ts = from_traces([make_trace(work, threads=[work])])
    m = model(ts, "flops")
    assert m.expr == 2 * 10 * S("n")
    assert any(n.kind == "threads" for n in m.notes) and checked(m).max_rel_diff() == 0


def test_ratios_and_unknown_quantities() -> None:
    ts = run_of(cg_program(), size=4)
    ratio = model(ts, "bytes_per_message")
    expected = model(ts, "mpi_bytes").evaluate({}) / model(ts, "mpi_count").evaluate({})
    assert ratio.evaluate({}) == pytest.approx(expected)
    generic = model(ts, "loadstore/flops")
    assert generic.evaluate({}) == pytest.approx(model(ts, "loadstore_per_flop").evaluate({}))
    with pytest.raises(MAError, match="unknown quantity 'flips'"):
        model(ts, "flips")


def test_message_distribution_matches_pmpi_and_extrapolates(tmp_path: Path) -> None:
    small = load(write_run(tmp_path / "a", cg_program(na=1400), size=4))
    classes = message_distribution(small)
    measured = measured_distribution(small)
    # Every predicted size falls in a measured bucket with the same number of messages per rank.
    for c in classes:
        bucket = next(b for b in measured if b.lo <= c.size <= b.hi)
        assert bucket.per_rank == pytest.approx(c.per_rank)
    assert sum(c.share for c in classes) == pytest.approx(1.0)
    big = load(write_run(tmp_path / "b", cg_program(na=15000), size=16))
    predicted = {c.size: c.per_rank for c in message_distribution(small, {"na": 15000, "nprocs": 16})}
    for bucket in measured_distribution(big):
        inside = sum(n for size, n in predicted.items() if bucket.lo <= size <= bucket.hi)
        assert inside == pytest.approx(bucket.per_rank)


# --- CLI --------------------------------------------------------------------------------------------------------


def test_cli_model_eval_msgdist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "cg", cg_program(), size=4)
    assert main(["model", str(run), "-q", "flops", "--by-subroutine"]) == 0
    out = capsys.readouterr().out
    assert "flops = " in out and "num_proc_cols = 2^ceiling(log(nprocs)/(2*log(2)))" in out
    assert "conj_loop/conj_grad: " in out and "at the traced inputs (4 ranks)" in out
    assert main(["model", str(run), "--format", "json", "--inline"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert {d["quantity"] for d in docs} == set(DEFAULT_QUANTITIES)
    assert all(d["definitions"] == {} for d in docs)
    assert main(["eval", str(run), "-q", "mpi_bytes", "-q", "flops", "--set", "nprocs=4,16", "--set", "na=1400",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["nprocs"] for r in rows] == [4, 16]
    ts = load(run)
    assert rows[0]["mpi_bytes"] == pytest.approx(checked(model(ts, "mpi_bytes")).trace_predicted[0])
    assert main(["eval", str(run), "-q", "flops", "--set", "nprocs=x"]) == 2
    assert "'x' is not a number" in capsys.readouterr().err
    assert main(["msgdist", str(run), "--set", "nprocs=1024", "--set", "na=150000", "--measured"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["size_bytes", "messages_per_rank", "share", "volume_share", "sites"]
    assert "37500" in out and "measured by PMPI" in out


def test_cli_eval_rank_dependent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, [Var("local", lambda e: 10 + e["__rank"]), Var("k", 3),
                               Loop("l", "local", [Op("flop", "f", "k")])], size=2)
    assert main(["eval", str(run), "-q", "flops", "--set", "k=2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["k  flops  flops:min  flops:max  flops:max_rank",
                                         "2  21     20         22         1"]
    assert "local = 10..11 (per traced rank)" in captured.err
    assert main(["eval", str(run), "-q", "flops", "--set", "k=2", "--rank", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["2", "20"]


# --- counts that depend on the iteration: ``iter`` summed exactly over the trip count --------------------------


def kernel_program(max_iter: int, n: int = 50) -> list:
    """A kernel called once in the first iteration and twice in every later one (the inner loop's trip count is
    an expression of the outer loop's iteration), and a flop count that grows with the iteration."""
    return [Var("n", n), Var("max_iter", max_iter),
            Loop("it", "max_iter", [Loop("calls", "1 + min(iter, 1)", [Op("flop", "kernel", "2*n")]),
                                    Op("flop", "ramp", "n*min(iter, 3)")])]


def test_iteration_dependent_counts_are_summed_exactly_at_any_trip_count() -> None:
    builder = ModelBuilder(run_of(kernel_program(max_iter=5)))
    m = builder.model("flops")
    assert not [n for n in m.notes if n.kind in ("conditional", "varying", "check", "calls", "iteration")], m.notes
    kernel = next(t for t in m.terms if t.site.id == "kernel")
    assert sympy.simplify(kernel.expr.subs(S("max_iter"), S("N")) - 2 * S("n") * (2 * S("N") - 1)).subs(
        S("N"), 7) == 0
    assert "2*max_iter - 1" in str(kernel.expr)
    for max_iter in (0, 1, 2, 3, 4, 5, 9, 40):
        truth = checked(ModelBuilder(run_of(kernel_program(max_iter))).model("flops")).trace_predicted
        assert m.evaluate({"max_iter": max_iter}) == float(truth[0]), max_iter
        # Exact in SymPy too: the sum has no float in it.
        assert exact_value(m, {"max_iter": max_iter, "n": 50}) == int(truth[0])
    calls = builder.executions(builder.ts.find("it/calls", "loop"))
    assert [calls.subs(S("max_iter"), k) for k in (0, 1, 2, 6)] == [0, 1, 3, 11]


def test_iter_declared_by_the_program_is_a_variable() -> None:
    program = [Var("n", 4), Loop("l", "3", [Op("flop", "f", "n*iter")], index="iter")]
    m = model(run_of(program), "flops")
    assert m.expr == 3 * S("n") * S("iter")  # the program's own variable: no sum over the iterations


def test_iteration_sum_that_has_no_closed_form_is_a_note() -> None:
    program = [Var("n", 4), Loop("l", "n", [Op("flop", "f", "mod(iter, 2)")])]
    m = model(run_of(program), "flops")
    assert any(n.kind == "iteration" and "mod of iter" in n.message for n in m.notes), m.notes


@pytest.mark.octave
def test_iteration_sum_exports_to_octave(tmp_path: Path) -> None:
    from post_fixtures import octave_value

    m = ModelBuilder(run_of(kernel_program(max_iter=5))).model("flops")
    for max_iter in (0, 1, 7):
        assert octave_value(m, {"max_iter": max_iter, "n": 50}, tmp_path / str(max_iter)) == m.evaluate(
            {"max_iter": max_iter})


# --- models in rank: evaluated on the ranks of the evaluated job ----------------------------------------------


def halo_program(nx: int = 10) -> list:
    """A 1-D halo exchange: a rank has a neighbour on each side but the first and the last have one."""
    from post_fixtures import Mpi

    return [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]), Var("nx", nx),
            Assign("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)"),
            Loop("steps", "3", [Mpi("mpi_isend", "halo", "8*nx", count="nbr"), Op("flop", "stencil", "5*nx")])]


def test_rank_dependent_model_is_evaluated_over_the_ranks_of_the_job(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ts = run_of(halo_program(), size=4)
    m = model(ts, "mpi_bytes")
    assert set(m.inputs) == {"nprocs", "nx", "rank"}
    # Traced (4 ranks: 1, 2, 2, 1 neighbours): 3 steps x 80 bytes x the neighbours, mean over the 4 ranks.
    assert evaluate(m, {}).value == 3 * 80 * 6 / 4
    # 64 ranks, by hand: ranks 0 and 63 have one neighbour, the 62 others two: 3 * 80 * (2 + 124) / 64 per rank.
    at64 = evaluate(m, {"nprocs": 64})
    assert at64.value == 3 * 80 * 126 / 64 == 472.5
    assert at64.worst_rank() == (1, 480.0) and at64.spread() is not None
    assert evaluate(m, {"nprocs": 64}, rank="min").value == 240 and evaluate(m, {"nprocs": 64}, rank=63).value == 240
    grid = evaluate(m, {"nprocs": np.array([1.0, 2.0, 64.0, 1024.0])})
    assert grid.value.tolist() == [0.0, 240.0, 472.5, 3 * 80 * (2 + 2 * 1022) / 1024]
    with pytest.raises(ModelError, match=r"rank 64 is not a rank of a job of nprocs=64 processes \(ranks 0..63\)"):
        evaluate(m, {"nprocs": 64}, rank=64)
    with pytest.raises(ModelError, match="rank 5 is not a rank of a job of nprocs=4"):
        evaluate(m, {"rank": 5})
    run = write_run(tmp_path / "halo", halo_program(), size=4)
    assert main(["eval", str(run), "-q", "mpi_bytes", "--set", "nprocs=64"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1].split() == ["64", "472.5", "240", "480", "1"]
    assert "rank = 0..63 (every rank of the evaluated job)" in captured.err
    assert main(["eval", str(run), "-q", "mpi_bytes", "--set", "nprocs=64", "--rank", "64"]) == 2
    assert "rank 64 is not a rank of a job of nprocs=64" in capsys.readouterr().err


def test_per_rank_input_without_an_expression_is_unknown_at_another_job_size() -> None:
    program = [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]),
               Var("local", lambda e: 10 + e["__rank"]), Op("flop", "f", "local + rank")]
    m = model(run_of(program, size=3), "flops")
    assert evaluate(m, {}).per_rank is None and evaluate(m, {}).value == (10 + 12 + 14) / 3  # the traced job
    with pytest.raises(ModelError, match=r"input 'local' differs between the traced ranks \(10..12\) and is not an "
                                         "expression of rank"):
        evaluate(m, {"nprocs": 8})


def test_scaling_of_a_rank_dependent_model_and_the_roles_of_the_inputs() -> None:
    from ma_post.studies.scaling import scaling

    builder = ModelBuilder(run_of([*halo_program(), Var("na", 4000), Op("flop", "spmv", "na/nprocs")], size=4))
    result = scaling([builder.model("mpi_bytes"), builder.model("flops")], [1, 2, 4, 64])
    assert result.per_rank["mpi_bytes"].tolist() == [0.0, 240.0, 360.0, 472.5]  # never negative
    assert result.input_roles == {"nx": "per rank", "na": "global"}
    shares = result.shares["flops"]
    assert all(float(share.min()) >= 0 and float(share.max()) <= 1 for share in shares.values())


@pytest.mark.parametrize("values", [{}, {"n": 10}, {"n": np.array([1.0, 2.0])}, {"nprocs": 64},
                                    {"nprocs": np.array([2.0, 64.0])}, {"nprocs": 64, "rank": 5}])
def test_several_expressions_evaluate_at_once_as_each_alone(values: dict[str, Any]) -> None:
    """A model of a tuple of expressions (a prediction's every site part, compiled once) gives each expression
    the value, per-rank values and spread it has alone: over traced ranks, a grid, and the ranks of another job."""
    program = [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]), Var("n", 5),
               Var("local", lambda e: 100 + 2 * e["__rank"]), Assign("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)"),
               Loop("l", "local", [Op("flop", "f", "n")])]
    builder = ModelBuilder(run_of(program, size=3))
    n, nbr, nprocs = S("n"), S("nbr"), S("nprocs")
    exprs = [3 * n, n * nbr, sympy.Max(n, nprocs) / 2, sympy.Integer(7)]
    if "nprocs" not in values:
        exprs.append(S("local") * n)  # a per-rank input with no expression of rank: only at the traced size
    together = evaluate(builder.submodel("all", sympy.Tuple(*exprs)), values)
    for k, expr in enumerate(exprs):
        alone = evaluate(builder.submodel(f"e{k}", expr), values)
        assert np.allclose(np.asarray(together.value)[..., k], alone.value), (expr, together.value, alone.value)
        if together.per_rank is not None:  # none when an expression is in rank: evaluated over the job's ranks
            assert np.allclose(together.per_rank[..., k], np.asarray(alone.value if alone.per_rank is None
                                                                     else alone.per_rank))
        spread = alone.spread()
        if alone.job_spread is not None and spread is not None:
            assert together.job_spread is not None
            for mine, theirs in zip(together.job_spread, alone.job_spread, strict=True):
                assert np.allclose(np.asarray(mine)[..., k], theirs)


def test_a_predictions_expressions_at_once_are_each_per_rank_alone() -> None:
    """backends.base.per_rank_table, what ``ma predict`` evaluates: the rows of expressions in rank (over the
    job's ranks, their mean on every rank) and of per-rank inputs (each traced rank's own) as each alone."""
    from backends.base import per_rank, per_rank_table

    program = [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]), Var("n", 5),
               Var("local", lambda e: 100 + 2 * e["__rank"]), Assign("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)"),
               Loop("l", "local", [Op("flop", "f", "n")])]
    builder = ModelBuilder(run_of(program, size=3))
    exprs = [3 * S("n"), S("n") * S("nbr"), S("local") * S("n"), sympy.Integer(7), S("local") + S("nbr")]
    for values in ({}, {"n": 2.0}):
        table = per_rank_table(builder, exprs, values)
        assert table.shape == (len(exprs), 3)
        for row, expr in zip(table, exprs, strict=True):
            assert np.allclose(row, per_rank(builder, expr, values)), expr
    assert table[2].tolist() == [200, 204, 208]  # per traced rank
    assert np.allclose(table[1], 2 * 4 / 3)  # 1, 2, 1 neighbours: their mean on every rank
    assert per_rank_table(builder, [], {}).shape == (0, 3)
