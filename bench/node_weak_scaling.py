"""Weak scaling on one node: a memory-bound C kernel on 1 and 2 ranks (``--ranks``), measured against the maps
prediction with and without the node term (backends/maps/node.py).

``bench/node_stream/stream.c`` sums its own array of n doubles (default 128 MiB per rank, far past the last
cache) niter times on every rank; n per rank is fixed, so a second rank on the node only shares its memory
bandwidth. The profile (``--profile``, default the shipped example) gets a multicore block measured here on 1, 2,
4, ... and all the host's cores (``ma machine multicore``) unless it has one. For each rank count the kernel runs
under ``ma run``; the ``stream`` subroutine's measured mean time per rank is printed beside ``ma predict --backend
maps``'s prediction with the node term (ranks per node = nprocs) and without it (``--ranks-per-node 1``: each rank
priced alone).

The kernel's hit rates come from its application signature, measured apart as a user would: one rank, one sweep,
under the Valgrind counter with the profile's cache (``ma run --counters valgrind --cache``, ``ma signature``);
hit rates per execution carry over to the timed runs' sweeps. ``--no-signature`` prices the sweep at the
profile's assumed hit rates instead (a cache-resident guess, far from a stream past the last cache). On a host
without Valgrind, ``--signatures FILE`` takes the signature measured where the tool runs, on this host's profile
(its caches decide the hit rates) and at the same ``--n``; give ``--n`` past the host's last cache (a 300 MiB
L3: ``--n 134217728``, 1 GiB a rank) and ``--ranks 1,2,4,8,16`` on a 16-core node.

Take the figures from a quiet host: on a loaded one the measured times stretch with the load, not the node.

Run: .venv/bin/python bench/node_weak_scaling.py [--profile P] [--n WORDS] [--niter N] [--ranks 1,2,...]
     [--no-signature | --signatures FILE]
(about a minute)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from backends.machine import multicore, multicore_probe
from backends.machine import profile as profiles
from ma_tools.toolchain import find_mpicc

HERE = Path(__file__).resolve().parent
MA = str(Path(sys.executable).with_name("ma"))


def ma(*argv: str, cwd: Path | None = None) -> str:
    done = subprocess.run([MA, *argv], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"ma {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def build(out: Path) -> Path:
    program = out / "stream"
    flags, libs = ma("config", "--cflags").split(), ma("config", "--libs").split()
    subprocess.run([str(find_mpicc()), "-O2", *flags, str(HERE / "node_stream" / "stream.c"), "-o", str(program),
                    *libs], check=True)
    return program


def node_profile(given: str | None, out: Path) -> Path:
    machine = profiles.load(given) if given and Path(given).exists() else profiles.load(
        profiles.shipped_profiles()[given or "amd-epyc-zen4-kvm"])
    if machine.memory.multicore is None:  # 1, 2, 4, ... and all the host's cores
        print("measuring the multicore block ...", file=sys.stderr)
        machine = profiles.with_block(machine, multicore.FIELD, multicore_probe.measure(machine.caches))
    return machine.save(out / "node.json")


def signature(program: Path, profile: Path, n: int, out: Path) -> Path:
    """The stream's application signature: its hit rates on the profile's hierarchy, one rank, one sweep."""
    traces = out / "signature-run"
    ma("run", "-n", "1", "--counters", "valgrind", "--cache", str(profile), "--trace-dir", str(traces), "--",
       str(program), str(n), "1")
    ma("signature", str(traces), "--machine", str(profile), "-o", str(out / "stream.signature.json"))
    return out / "stream.signature.json"


def stream_row(report: dict[str, Any]) -> dict[str, Any]:
    return next(row for row in report["measured"] if row["subroutine"] == "stream")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", help="a profile file or a shipped profile's name (default: the shipped one)")
    parser.add_argument("--n", type=int, default=16 << 20, help="doubles per rank (default 16 Mi: 128 MiB)")
    parser.add_argument("--niter", type=int, default=10, help="sweeps (default 10)")
    parser.add_argument("--ranks", default="1,2", help="rank counts (default 1,2)")
    hit_rates = parser.add_mutually_exclusive_group()
    hit_rates.add_argument("--no-signature", action="store_true",
                           help="price the sweep at the profile's assumed hit rates, without a signature run")
    hit_rates.add_argument("--signatures", type=Path, metavar="FILE",
                           help="the stream's signature at the same --n, measured elsewhere (a host without "
                                "Valgrind: `ma run --counters valgrind --cache PROFILE` and `ma signature` where the "
                                "tool runs, with this host's profile)")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="node-bench-"))
    try:
        program, profile = build(out), node_profile(args.profile, out)
        hits: list[str] = []
        if args.signatures is not None:
            hits = ["--signatures", str(args.signatures)]
        elif not args.no_signature:
            hits = ["--signatures", str(signature(program, profile, args.n, out))]
        if hits:
            rates = json.loads(Path(hits[1]).read_text())["sites"]
            print("signature: " + "; ".join(f"{site} hit rates {value}" for site, value in rates.items()))
        ratios = profiles.load(profile).memory.multicore
        assert ratios is not None
        print(f"profile {profile}: memory read per core, k cores at once over alone: "
              + ", ".join(f"k={k} {r:.2f}" for k, r in ratios.memory_ratio()))
        print(f"{'ranks':>5} {'measured s':>11} {'node term s':>12} {'error':>7} {'alone s':>9} {'error':>7}")
        for ranks in (int(r) for r in args.ranks.split(",")):
            traces = out / f"traces-{ranks}"
            ma("run", "-n", str(ranks), "--trace-dir", str(traces), "--", str(program), str(args.n),
               str(args.niter))
            base = ["predict", str(traces), "--backend", "maps", "--machine", str(profile), "--format", "json", *hits]
            node = stream_row(json.loads(ma(*base)))
            alone = stream_row(json.loads(ma(*base, "--ranks-per-node", "1")))
            measured = node["measured_s"]
            print(f"{ranks:>5} {measured:11.4f} {node['predicted_s']:12.4f} {node['error']:+7.1%} "
                  f"{alone['predicted_s']:9.4f} {alone['error']:+7.1%}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
