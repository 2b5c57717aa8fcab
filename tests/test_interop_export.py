"""Hatchet and Extra-P exports, each loaded by the real tool (docs/interop.md).

Hatchet (``llnl-hatchet``, in the dev extra) reads the literal in this process. Extra-P pins numpy<2, so it
lives in its own virtual environment, ``.venv-extrap`` (made by scripts/setup.sh; ``MA_EXTRAP_PYTHON``
overrides), and runs there as a subprocess that prints its fitted models evaluated at a new point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from post_fixtures import cg_program, write_run

import ma_post
from ma_core.errors import MAError
from ma_post.interop.extrap import extrap_document
from ma_post.interop.hatchet import graphframe

ROOT = Path(__file__).resolve().parents[1]


def run_ma(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ma_cli.main", *args], capture_output=True, text=True, cwd=ROOT)


def test_hatchet_literal_loads_with_rank_index(tmp_path: Path) -> None:
    pytest.importorskip("hatchet")
    trace_dir = write_run(tmp_path / "run", cg_program(flop_noise=0.1), size=4)
    out = tmp_path / "h.json"
    result = run_ma("export", str(trace_dir), "--hatchet", str(out))
    assert result.returncode == 0, result.stderr
    gf = graphframe(out)
    frame = gf.dataframe
    assert list(frame.index.names) == ["node", "rank"]
    ts = ma_post.load(trace_dir)
    # one row per (site or program root, rank)
    assert len(frame) == len(ts.sites) * 4
    flopq = ts.find("conj_loop/conj_grad/cgit/flopq", "flop")
    rows = frame[frame["name"] == "flopq"]
    node = next(n for n in gf.graph.traverse() if n.frame["path"] == flopq.path)
    per_rank = frame.loc[node]
    np.testing.assert_array_equal(per_rank.index.to_numpy(), [0, 1, 2, 3])
    np.testing.assert_allclose(per_rank["measured"].to_numpy(), flopq.measured.sum.sum(axis=1))
    assert len(rows) == 8  # flopq under the warm-up and under the timed loop
    # the noise makes ranks differ: rank is a real index level, not a broadcast
    assert per_rank["measured"].nunique() > 1
    # the tree: cgit's children below conj_grad below conj_loop, printed by Hatchet itself
    tree = gf.tree(metric_column="calls")
    assert "conj_loop" in tree and "flopq" in tree
    parents = [p.frame["name"] for p in node.parents]
    assert parents == ["cgit"]
    # exclusive time never exceeds inclusive time
    assert (frame["time"] <= frame["time (inc)"] + 1e-12).all()


def extrap_python() -> Path | None:
    candidate = Path(os.environ.get("MA_EXTRAP_PYTHON", ROOT / ".venv-extrap" / "bin" / "python"))
    return candidate if candidate.exists() else None


EXTRAP_SCRIPT = textwrap.dedent("""
    import json, sys
    from extrap.fileio.file_reader.json_file_reader import JsonFileReader
    from extrap.modelers.model_generator import ModelGenerator
    experiment = JsonFileReader().read_experiment(sys.argv[1])
    generator = ModelGenerator(experiment)
    generator.model_all()
    at = float(sys.argv[2])
    out = {}
    for (callpath, metric), model in generator.models.items():
        function = model.hypothesis.function
        out[callpath.name + "|" + metric.name] = {"function": str(function), "value": float(function.evaluate(at))}
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_extrap_fits_the_annotated_model(tmp_path: Path) -> None:
    python = extrap_python()
    # scripts/setup.sh always makes it: a missing one is a broken set-up, not a reason to skip
    assert python is not None, "Extra-P's environment .venv-extrap is missing: run scripts/setup.sh"
    dirs = [write_run(tmp_path / f"na{na}", cg_program(na=na), size=4) for na in (1000, 2000, 4000, 8000, 16000)]
    out = tmp_path / "extrap.json"
    result = run_ma("export", *map(str, dirs), "--extrap", str(out))
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["parameters"] == ["na"]
    script = tmp_path / "fit.py"
    script.write_text(EXTRAP_SCRIPT)
    new_na = 64000.0
    fitted = subprocess.run([str(python), str(script), str(out), str(new_na)], capture_output=True, text=True,
                            check=True)
    models = json.loads(fitted.stdout)
    ts = ma_post.load(dirs[0])
    for quantity in ("flops", "loadstore", "send_bytes"):
        expected = float(ma_post.model(ts, quantity).evaluate({"na": new_na}))
        got = models[f"<program>|{quantity}"]["value"]
        assert got == pytest.approx(expected, rel=1e-6), (quantity, models[f"<program>|{quantity}"]["function"])
    # a site: flopq's per-rank total is calls x 2*nonzer*(nonzer+1)*na/nprocs, linear in na
    flopq = models["<program>->conj_loop->conj_grad->cgit->flopq|measured"]
    assert flopq["value"] == pytest.approx(15 * 25 * 2 * 7 * 8 * new_na / 4, rel=1e-6), flopq["function"]


def test_extrap_needs_runs_at_different_inputs(tmp_path: Path) -> None:
    run = write_run(tmp_path / "a", cg_program(), size=2)
    twin = write_run(tmp_path / "b", cg_program(), size=2)
    with pytest.raises(MAError, match="no input variable differs"):
        extrap_document([ma_post.load(run), ma_post.load(twin)])
    result = run_ma("export", str(run), str(twin), "--extrap", str(tmp_path / "x.json"), "--param", "bogus")
    assert result.returncode == 2
    assert "bogus" in result.stderr and str(run) in result.stderr


def test_synth_names_the_site_without_a_partner(tmp_path: Path) -> None:
    from ma_post.interop.synth import SynthError, synthesize

    run = write_run(tmp_path / "run", cg_program(), size=4)
    with pytest.raises(SynthError, match=r"mpi_irecv 'init_loop/conj_grad/cgit/l2q/l2rcv'.*needs its partner"):
        synthesize(ma_post.load(run), tmp_path / "out", {"nprocs": 8})
    result = run_ma("synth", str(run), str(tmp_path / "out2"), "--set", "nprocs=8", "--replay")
    assert result.returncode == 2 and "--latency, --bandwidth, --speed" in result.stderr


def test_extrap_document_covers_every_point(tmp_path: Path) -> None:
    # at 1 process CG's butterflies run no step: their sites are absent there and count zeros
    runs = [ma_post.load(write_run(tmp_path / f"p{p}", cg_program(), size=p)) for p in (1, 4, 16)]
    document = extrap_document(runs)
    assert document["parameters"] == ["nprocs"]
    points = [[1.0], [4.0], [16.0]]
    for callpath, metrics in document["measurements"].items():
        for metric, entries in metrics.items():
            assert [e["point"] for e in entries] == points, (callpath, metric)
    l2rcv = document["measurements"]["<program>->init_loop->conj_grad->cgit->l2q->l2rcv"]["calls"]
    assert l2rcv[0]["values"] == [0.0] and len(l2rcv[2]["values"]) == 16 and min(l2rcv[2]["values"]) > 0
