"""The backend interface: the ABC, the Prediction hub type, entry-point discovery (the project's own backend and a
third party's installed as a dist-info on sys.path), and the `peak` baseline backend on a modelled CG run."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import sympy
from post_fixtures import cg_program, make_trace

from backends import registry
from backends.base import Backend, Prediction, SitePrediction
from backends.machine.profile import CPU, CacheLevel, Host, MachineProfile, Memory, NetworkProfile
from backends.peak import PeakBackend
from ma_cli.main import main
from ma_core.errors import BackendError, MAError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

THIRD_PARTY = '''
import sympy
from backends.base import Backend, Prediction, SitePrediction

class ToyBackend(Backend):
    NAME = "toy"
    DESCRIPTION = "one second per input n"

    def predict(self, model, machine, parameters=None):
        n = sympy.Symbol("n")
        site = SitePrediction("main", n * 1.0, sympy.Integer(0), sympy.Integer(0))
        return Prediction(self.NAME, machine.name, (site,), dict(parameters or {}))

class NotABackend:
    NAME = "plain"

class Misnamed(ToyBackend):
    NAME = "something-else"
'''


def install_dist(root: Path, entry_points: str) -> Path:
    """A minimal installed distribution (what pip leaves in site-packages) with `ma.backends` entry points."""
    (root / "toy_ma_backend").mkdir(parents=True)
    (root / "toy_ma_backend" / "__init__.py").write_text(THIRD_PARTY)
    dist = root / "toy_ma_backend-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-ma-backend\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ma.backends]\n" + textwrap.dedent(entry_points))
    return root


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = install_dist(tmp_path / "site", """\
        toy = toy_ma_backend:ToyBackend
        plain = toy_ma_backend:NotABackend
        renamed = toy_ma_backend:Misnamed
        gone = toy_ma_backend_missing:Backend
        """)
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("toy_ma_backend", None)


def machine() -> MachineProfile:
    return MachineProfile(name="test-machine", host=Host("h", "c", 1), caches=(CacheLevel(1, 32768, 8, 64),),
                          cpu=CPU(2.0e9), memory=Memory(4e9),
                          network=NetworkProfile(latency_s=1e-6, bandwidth_bytes_per_s=1e9))


def test_the_projects_backend_is_registered_by_entry_point() -> None:
    infos = {info.name: info for info in registry.installed()}
    assert infos["peak"].value == "backends.peak:PeakBackend"
    assert infos["peak"].distribution == "modeling-assertions"
    assert registry.load("peak") is PeakBackend


def test_third_party_backend_found_through_the_same_group(third_party: Path, capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    infos = {info.name: info for info in registry.installed()}
    assert infos["toy"].distribution == "toy-ma-backend"
    backend = registry.create("toy")
    assert isinstance(backend, Backend)
    prediction = backend.predict(None, machine(), {})  # type: ignore[arg-type]
    assert prediction.evaluate({"n": 3}) == pytest.approx(3.0)
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "one second per input n" in out and "peak" in out
    assert "plain" in out and "BROKEN" in out  # a broken registration is listed, not fatal


@pytest.mark.parametrize(("name", "message"), [
    ("plain", "not a subclass of backends.base.Backend"),
    ("renamed", "has NAME 'something-else'"),
    ("gone", "cannot be imported: ModuleNotFoundError"),
    ("nonexistent", "no backend named 'nonexistent' is installed"),
])
def test_bad_registrations_raise_backend_errors(third_party: Path, name: str, message: str) -> None:
    with pytest.raises(BackendError, match=message):
        registry.load(name)


def test_abstract_interface() -> None:
    class Incomplete(Backend):
        NAME = "incomplete"

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="must set NAME"):
        class Nameless(Backend):
            def predict(self, model, machine, parameters=None):  # type: ignore[no-untyped-def]
                raise NotImplementedError


def test_prediction_parts_and_unbound_inputs() -> None:
    n, p = sympy.symbols("n p")
    prediction = Prediction("b", "m", (SitePrediction("a", n / p, 2 * n, sympy.Integer(1)),
                                       SitePrediction("b", n, sympy.Integer(0), p)))
    assert prediction.free_inputs == ["n", "p"]
    assert prediction.part("memory") == 2 * n
    assert prediction.evaluate({"n": 4, "p": 2}) == pytest.approx(2 + 8 + 1 + 4 + 2)
    with pytest.raises(MAError, match=r"no value for input\(s\) p"):
        prediction.evaluate({"n": 4})
    with pytest.raises(ValueError, match="unknown part"):
        prediction.part("disk")


def test_peak_backend_convolves_the_cg_model_with_the_profile() -> None:
    ts = from_traces([make_trace(cg_program(), r, 4) for r in range(4)])
    builder = ModelBuilder(ts)
    point = {"na": 14000, "nonzer": 11, "niter": 15, "nprocs": 4, "cgitmax": 25, "dp": 8}
    prof = machine()
    prediction = registry.create("peak").predict(builder, prof, {"na": 14000})
    assert "na" not in prediction.free_inputs and "niter" in prediction.free_inputs  # the rest stays symbolic
    values = {k: v for k, v in point.items() if k != "na"}
    flops = builder.model("flops").evaluate(point)
    words = builder.model("loadstore").evaluate(point)
    messages, volume = builder.model("mpi_count").evaluate(point), builder.model("mpi_bytes").evaluate(point)
    compute = float(prediction.part("compute").subs(values))
    memory = float(prediction.part("memory").subs(values))
    communication = float(prediction.part("communication").subs(values))
    assert flops > 0 and words > 0 and messages > 0
    assert compute == pytest.approx(flops / 2.0e9, rel=1e-9)
    assert memory == pytest.approx(8 * words / 4.0e9, rel=1e-9)
    assert communication == pytest.approx(messages * 1e-6 + volume / 1e9, rel=1e-9)
    assert prediction.evaluate(values) == pytest.approx(compute + memory + communication, rel=1e-9)
    assert {s.path for s in prediction.sites} >= {"conj_loop/conj_grad/cgit/flopq"}

