"""The maps backend's predicted against measured time of one application, drawn from
``bench/predict_accuracy.py``'s ``accuracy.json`` (``examples/npb_cg/study.py --accuracy FILE`` and SP's)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .figures import pyplot, save

FIGURE = "maps_accuracy.png"


def wants_accuracy(argv: Sequence[str]) -> bool:
    """The command line asks for the accuracy figure rather than the model study."""
    return any(a == "--accuracy" or a.startswith("--accuracy=") for a in argv)


def plot_accuracy(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Left: predicted and measured seconds per subroutine of the timed loop, one process, per class; right:
    the timed loop against the process count, per class (measured: markers, predicted: lines). ``rows``: the
    bench's timed-loop rows of one application."""
    plt = pyplot()
    fig, (per_sub, per_procs) = plt.subplots(1, 2, figsize=(12, 4.6))
    first = [r for r in rows if r.get("round", 1) == 1]  # the bench's --repeat: every round measures the same model
    labels, predicted, measured = [], [], []
    for row in (r for r in first if r["procs"] == 1):
        regions = {"timed loop": {"predicted": row["predicted"], "measured": row["measured"]},
                   **{p.rsplit("/", 1)[-1]: v for p, v in row.get("subroutines", {}).items()}}
        for name, values in regions.items():
            labels.append(f"{row['class']}: {name}")
            predicted.append(values["predicted"])
            measured.append(values["measured"])
    positions = np.arange(len(labels))
    per_sub.bar(positions - 0.2, measured, 0.4, label="measured")
    per_sub.bar(positions + 0.2, predicted, 0.4, label="predicted (maps)")
    per_sub.set_xticks(positions, labels, rotation=45, ha="right", fontsize=8)
    per_sub.set_yscale("log")
    per_sub.set_ylabel("seconds (slowest rank)")
    per_sub.set_title("per subroutine, 1 process")
    per_sub.legend()
    for klass in sorted({r["class"] for r in rows}):
        mine = sorted((r for r in first if r["class"] == klass), key=lambda r: r["procs"])
        line = per_procs.plot([r["procs"] for r in mine], [r["predicted"] for r in mine], "-",
                              label=f"class {klass} predicted")
        runs = [r for r in rows if r["class"] == klass]  # every round's measurement
        per_procs.plot([r["procs"] for r in runs], [r["measured"] for r in runs], "o", color=line[0].get_color(),
                       label=f"class {klass} measured")
    per_procs.set_xscale("log", base=2)
    per_procs.set_yscale("log")
    per_procs.set_xlabel("MPI processes")
    per_procs.set_ylabel("timed loop, seconds (slowest rank)")
    per_procs.set_title("timed loop vs nprocs")
    per_procs.grid(True, which="both", alpha=0.3)
    per_procs.legend(fontsize=7)
    fig.suptitle(f"{title}: maps backend, predicted vs measured time")
    save(fig, path)


def accuracy_main(argv: Sequence[str], app: str, title: str) -> int:
    """``--accuracy FILE [--out DIR]``: the figure of ``app``'s rows (``cg``, ``sp``); 2 with a one-line error
    when the file is not the bench's JSON or has no timed-loop row of ``app``."""
    parser = argparse.ArgumentParser(description=f"{title}: predicted vs measured time from "
                                                 "bench/predict_accuracy.py")
    parser.add_argument("--accuracy", type=Path, required=True, help="accuracy.json written by the bench")
    parser.add_argument("--out", type=Path, default=Path("figures"))
    args = parser.parse_args(argv)
    try:
        rows = [r for r in json.loads(args.accuracy.read_text())["rows"]
                if r["app"] == app and r["region"] == "timed loop"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"study.py: error: {args.accuracy}: expected the bench's accuracy.json ({exc})", file=sys.stderr)
        return 2
    if not rows:
        print(f"study.py: error: {args.accuracy}: no timed-loop row of {app} (bench/predict_accuracy.py --cases "
              f"{app}:S:1,...)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    plot_accuracy(rows, args.out / FIGURE, title)
    print(f"figure: {args.out / FIGURE}")
    return 0
