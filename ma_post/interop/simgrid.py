"""Replay of synthetic MPI traces in SimGrid/SMPI (``ma synth ... --replay``).

A platform file is generated for the run: a cluster of one host per rank, whose links give the machine's
MPI ping-pong latency and bandwidth, and whose hosts run ``compute`` actions at the machine's flop rate.
SimGrid 3.32's ``smpirun -replay`` then plays every rank's time-independent trace (Debian's
``libsimgrid-dev``, installed by scripts/setup.sh) and reports the simulated time. SMPI's piecewise
latency/bandwidth correction factors (calibrated for another cluster) are set to 1: the prediction uses the
machine's own figures only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ma_core.errors import MAError, ReplayError

from .synth import SynthResult

TEMPLATE = "simgrid_platform.xml.j2"
_SIMULATED = re.compile(r"Simulation time ([0-9.eE+-]+)")


@dataclass(frozen=True)
class Machine:
    """What the replay needs of a machine: MPI ping-pong latency and bandwidth, and the flop rate of a rank."""

    latency_s: float
    bandwidth_Bps: float
    flops_per_s: float

    def __post_init__(self) -> None:
        for name in ("latency_s", "bandwidth_Bps", "flops_per_s"):
            value = getattr(self, name)
            if not value > 0 and not (name == "latency_s" and value == 0):
                raise MAError(f"machine {name} must be positive, got {value!r}")


def platform_xml(nprocs: int, machine: Machine, source: str = "") -> str:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.get_template(TEMPLATE).render(
        source=source, nprocs=nprocs, latency_s=repr(machine.latency_s), link_latency_s=repr(machine.latency_s / 2),
        bandwidth_Bps=repr(machine.bandwidth_Bps), speed=repr(machine.flops_per_s))


@dataclass(frozen=True)
class Replay:
    """The replayed run: simulated time (s), the slowest rank's compute time alone, and how long SimGrid took."""

    simulated_s: float
    compute_s: float
    wall_s: float
    output: str
    rank_s: tuple[float, ...] = ()  # when each rank reached its finalize (with per_rank=True)

    @property
    def communication_s(self) -> float:
        """Time not explained by the slowest rank's computing: messages and waiting for them."""
        return max(self.simulated_s - self.compute_s, 0.0)


def smpirun() -> str:
    path = shutil.which("smpirun")
    if path is None:
        raise ReplayError("smpirun not found: install SimGrid (Debian: libsimgrid-dev; scripts/setup.sh does)")
    return path


def compute_seconds(result: SynthResult, flops_per_s: float) -> float:
    """The largest sum of ``compute`` flops over the ranks' traces, in seconds at ``flops_per_s``."""
    slowest = 0.0
    for path in result.files:
        total = 0.0
        with open(path) as lines:
            for line in lines:
                if " compute " in line:
                    total += float(line.rsplit(" ", 1)[1])
        slowest = max(slowest, total)
    return slowest / flops_per_s


def finalize_times(paje: Path, nprocs: int) -> tuple[float, ...]:
    """When each rank entered its ``finalize``, from SimGrid's Paje trace of the replay.

    The lines used: ``6 t id type parent "rank-N"`` (a rank's container), ``5 id type
    smpi_replay_run_finalize ...`` (the state's value) and ``12 t type id value`` (a rank enters a state).
    """
    containers: dict[str, int] = {}
    finalize = None
    times: dict[int, float] = {}
    with open(paje) as lines:
        for line in lines:
            fields = line.split()
            if not fields or fields[0].startswith("%"):
                continue
            if fields[0] == "6" and len(fields) >= 6 and fields[5].startswith('"rank-'):
                containers[fields[2]] = int(fields[5].strip('"').removeprefix("rank-"))
            elif fields[0] == "5" and len(fields) >= 4 and fields[3] == "smpi_replay_run_finalize":
                finalize = fields[1]
            elif fields[0] == "12" and finalize is not None and len(fields) >= 5 and fields[4] == finalize:
                rank = containers.get(fields[3])
                if rank is not None:
                    times[rank] = float(fields[1])
    if len(times) != nprocs:
        raise ReplayError(f"{paje}: finalize times of {len(times)} ranks, expected {nprocs}")
    return tuple(times[r] for r in range(nprocs))


def replay(result: SynthResult, machine: Machine, timeout: float | None = None, per_rank: bool = False) -> Replay:
    """Replay ``result``'s traces on a generated platform with ``smpirun -replay``; ``per_rank`` also traces the
    replay (Paje, slower) for the time each rank finished."""
    runner = smpirun()
    with tempfile.TemporaryDirectory(prefix="ma-simgrid-") as work:
        platform = Path(work) / "platform.xml"
        platform.write_text(platform_xml(result.nprocs, machine, str(result.directory)))
        hostfile = Path(work) / "hosts.txt"
        hostfile.write_text("".join(f"rank-{r}\n" for r in range(result.nprocs)))
        argv = [runner, "-np", str(result.nprocs), "-platform", str(platform), "-hostfile", str(hostfile),
                "-replay", str(result.index.resolve()), "--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1",
                f"--cfg=smpi/host-speed:{machine.flops_per_s!r}f", "--log=root.thres:warning",
                "--log=smpi_replay.thres:info"]
        paje = Path(work) / "replay.paje"
        if per_rank:
            argv[1:1] = ["-trace", "-trace-file", str(paje)]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=work)
        except subprocess.TimeoutExpired as exc:
            raise ReplayError(f"smpirun -replay {result.index}: no result after {timeout} s") from exc
        wall = time.perf_counter() - start
        output = done.stdout + done.stderr
        match = _SIMULATED.search(output)
        if done.returncode != 0 or match is None:
            raise ReplayError(f"smpirun -replay {result.index} failed (exit {done.returncode}):\n{output[-3000:]}")
        ranks = finalize_times(paje, result.nprocs) if per_rank else ()
    return Replay(float(match.group(1)), compute_seconds(result, machine.flops_per_s), wall, output, ranks)
