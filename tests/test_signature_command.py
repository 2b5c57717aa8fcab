"""``ma signature`` (``backends/signature.py``): the signature of NPB CG class S's signature runs (the cache
simulation and the ccalls counter, kept in ``tests/data/maps-golden``) is the one the accuracy bench made of them, and
``ma predict --signatures`` says which sites of a run it covered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from maps_golden import DATA

from backends.signature import from_traces, load_signature_file
from examples.npb_cg.conj_grad import MATVEC_ROWS
from ma_cli.main import main
from ma_core.errors import BackendError
from ma_post.traceset import load

CSR = ["--csr-rows", "matvec_ls", MATVEC_ROWS["entries"], MATVEC_ROWS["rows"]]


def test_the_signature_of_cg_s_is_the_benchs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cg.signature.json"
    assert main(["signature", str(DATA / "cg-S-cache"), "--calls", str(DATA / "cg-S-ccalls"), *CSR,
                 "--machine", "amd-epyc-zen4-kvm", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "hit rates 24, lines per flop 20, c calls 115, subscripts 115, csr rows 4, add chains 0" in printed
    assert load_signature_file(out, 4) == load_signature_file(DATA / "cg.signature.json", 4)
    # the cache run alone: its hit rates and lines, and no calls (the valgrind run did not count them)
    alone = from_traces(load(DATA / "cg-S-cache"))
    assert len(alone.hit_rates) == 24 and not alone.c_calls and not alone.csr_rows
    with pytest.raises(BackendError, match="no site of that id"):
        from_traces(load(DATA / "cg-S-cache"), csr_rows={"no_such_site": ("1", "1")})
    with pytest.raises(BackendError, match="is not an expression"):
        from_traces(load(DATA / "cg-S-cache"), csr_rows={"matvec_ls": ("na*(", "1")})


def test_a_profile_of_another_hierarchy_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hand = tmp_path / "two-levels.json"
    from test_maps_backend import profile  # one cache and memory

    profile().save(hand)
    assert main(["signature", str(DATA / "cg-S-cache"), "--machine", str(hand), "-o", str(tmp_path / "s.json")]) == 2
    assert "expected 2 cumulative hit rates" in capsys.readouterr().err


def test_ma_predict_says_which_sites_the_signature_covered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sig.json"
    assert main(["signature", str(DATA / "cg-S-cache"), "--calls", str(DATA / "cg-S-ccalls"), *CSR,
                 "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["predict", str(DATA / "cg-S-1"), "--machine", "amd-epyc-zen4-kvm", "--signatures", str(out),
                 "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    covered = report["signature_sites"]
    assert "conj_loop/conj_grad/cgit/matvec/matvec_ls" in covered["hit_rates"]
    assert len(covered["csr_rows"]) == 4 and all(p.endswith("/matvec/matvec_ls") for p in covered["csr_rows"])
    assert len(covered["c_calls"]) > 50 and report["assumed_hit_rates"] == []
    note = next(n for n in report["notes"] if n.startswith("signature file: hit rates at"))
    assert f"hit rates at {len(covered['hit_rates'])} site(s)" in note
    # the 2-rank exchanges the calls run measured are not in a 1-rank run: said, not an error
    assert any("not in this run" in n for n in report["notes"])


def test_shared_cache_runs_need_a_run_record_that_names_the_simulated_cache(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A cache run written before run records named the simulated hierarchy cannot say what K a shared run is."""
    with pytest.raises(BackendError, match="names no simulated cache"):
        from_traces(load(DATA / "cg-S-cache"), shared=[load(DATA / "cg-S-cache")])
    with pytest.raises(BackendError, match="need the cache run they share"):
        from_traces(None, shared=[load(DATA / "cg-S-cache")])
    assert main(["run", "--cache-share", "2", "--", "true"]) == 2
    assert "--cache-share K shares the last level of the simulated cache" in capsys.readouterr().err
