"""What the subscript term changes: per subroutine and loop of NPB SP and CG, predicted (without and with the
subscripts charged) against measured, on the traces and signatures ``bench/predict_accuracy.py`` left.

    python bench/predict_accuracy.py                  # the runs, their signatures (with subscripts), ~4 min
    python bench/subscript_term.py [--out out/predict-accuracy] [--profile FILE] [--cases sp-S-1,...]

Seconds a few, no run of its own. "without" is the same prediction with ``subscript_s=0`` (the backend before the
term); both use the profile's other CPU terms. A signature file without ``subscripts`` (written before the
counter counted them) gives the same figure twice.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.base import per_rank  # noqa: E402
from backends.machine import profile as profiles  # noqa: E402
from backends.maps import MapsBackend  # noqa: E402
from backends.signature import load_signature_file  # noqa: E402
from ma_post import ModelBuilder  # noqa: E402
from ma_post.traceset import load  # noqa: E402

REGIONS = {"sp": ("step", "x_solve", "y_solve", "z_solve", "fwd_rows", "back_rows", "compute_rhs", "txinvr",
                  "tzetar", "add"),
           "cg": ("conj_loop", "conj_grad", "matvec", "pq_dot", "rr_dot", "zr_axpy")}
TIMED = {"sp": "step", "cg": "conj_loop"}


def first_paths(builder: ModelBuilder, app: str) -> dict[str, str]:
    """Each region's first site path inside the timed loop (x_solve's fwd_rows for SP)."""
    found: dict[str, str] = {}
    for site in builder.ts.walk():
        name = site.path.rsplit("/", 1)[-1]
        if name in REGIONS[app] and name not in found and site.path.split("/", 1)[0] == TIMED[app]:
            found[name] = site.path
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/predict-accuracy", help="predict_accuracy.py's output directory")
    parser.add_argument("--profile", default=None, help="machine profile (default: the shipped one)")
    parser.add_argument("--cases", default="sp-S-1,sp-W-1,sp-S-4,sp-W-4,cg-S-1,cg-W-1,cg-S-2,cg-W-2")
    args = parser.parse_args()
    out = Path(args.out)
    machine = profiles.load(args.profile or next(iter(profiles.shipped_profiles().values())))
    for case in args.cases.split(","):
        app, klass, _ = case.split("-")
        if not (out / case).is_dir():
            print(f"{case}: no trace in {out} (run bench/predict_accuracy.py)")
            continue
        signatures = load_signature_file(out / f"{app}-{klass}.signature.json", machine.levels)
        builder = ModelBuilder(load(out / case))
        without = MapsBackend(signatures=signatures, subscript_s=0.0).predict(builder, machine)
        with_term = MapsBackend(signatures=signatures).predict(builder, machine)

        def slowest(expr: object, b: ModelBuilder = builder) -> float:
            return float(np.max(per_rank(b, expr, {})))

        print(f"{case}: {len(signatures.subscripts)} sites with subscripts in the signature")
        for name, path in first_paths(builder, app).items():
            site = builder.ts.find(path)
            measured = float(np.max(np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1))) * 1e-9
            before, after = slowest(without.within(path)), slowest(with_term.within(path))
            print(f"  {name:12s} measured {measured * 1e3:10.2f} ms   without {before * 1e3:10.2f} "
                  f"({(before / measured - 1) * 100:+6.1f} %)   with {after * 1e3:10.2f} "
                  f"({(after / measured - 1) * 100:+6.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
