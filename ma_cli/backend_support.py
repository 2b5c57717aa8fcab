"""A backend's prediction for the studies (``ma scaling``, ``ma report``, ``ma sweep``): the CLI builds the backend
and hands ``ma_post`` plain values and callables, since ``ma_post`` never imports ``backends``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from backends.base import Prediction
    from ma_cli.support import CommandParser
    from ma_post import ModelBuilder
    from ma_post.evaluation import RankChoice
    from ma_post.report.build import PredictionSummary

def add_backend_option(parser: CommandParser, what: str) -> None:
    """``--backend`` and ``--machine``, and every installed backend's own options as ``ma predict`` has them."""
    from ma_cli.commands.predict import add_backend_arguments_when_parsed

    parser.add_argument("--backend", default=None, metavar="NAME",
                        help=f"an installed backend (`ma backends`, e.g. maps): add its predicted time {what}; "
                             "needs --machine")
    parser.add_argument("--machine", default=None, metavar="PROFILE",
                        help="machine profile for --backend: a file or the name of a shipped profile")
    add_backend_arguments_when_parsed(parser)


def predict(args: argparse.Namespace, builder: ModelBuilder,
            parameters: Mapping[str, float] | None = None) -> Prediction | None:
    """The prediction of the backend ``--backend`` names on ``--machine`` (None without ``--backend``), built from
    the backend's own options (their defaults where the command line has none of them, e.g. called from Python)."""
    import dataclasses

    from backends.machine import runnetwork
    from ma_cli.commands.predict import add_backend_arguments, make_backend
    from ma_cli.support import load_profile
    from ma_core.errors import MAError

    if args.backend is None:
        if args.machine is not None:
            raise MAError("--machine is the profile of a --backend: name the backend too (e.g. --backend maps)")
        return None
    if args.machine is None:
        raise MAError(f"--backend {args.backend}: needs --machine PROFILE (a file or a shipped profile's name)")
    defaults = argparse.ArgumentParser(add_help=False)
    add_backend_arguments(defaults)
    options = defaults.parse_args([])
    vars(options).update(vars(args))
    # the network block of the MPI the run used, as ``ma predict`` takes it: one run, one prediction, every command
    machine, notes = runnetwork.for_run(load_profile(args.machine), builder.ts, getattr(args, "mpi", None))
    prediction = make_backend(options, builder.ts, machine).predict(builder, machine, dict(parameters or {}))
    return dataclasses.replace(prediction, notes=(*notes, *prediction.notes)) if notes else prediction


def time_function(builder: ModelBuilder, prediction: Prediction,
                  rank: RankChoice = None) -> Callable[[Mapping[str, Any]], np.ndarray]:
    """The prediction's total seconds per rank as a function of the parameters (arrays broadcast, as the studies
    evaluate models): inputs not given keep their traced values, per rank, exactly as for the models."""
    from ma_post.evaluation import evaluate

    model = builder.submodel("time", prediction.total)

    def seconds(values: Mapping[str, Any]) -> np.ndarray:
        return evaluate(model, {k: v for k, v in values.items() if k in model.inputs}, rank=rank).value

    return seconds


def summary(builder: ModelBuilder, prediction: Prediction, values: Mapping[str, float]) -> PredictionSummary:
    """What the report shows of a prediction: per subroutine (or per site) seconds and the three parts' shares,
    predicted against measured where the trace timed the subroutines, and the total as an expression."""
    from backends.measured import compare
    from ma_cli.commands.predict import site_rows, subroutine_rows
    from ma_post.report.build import PredictionSummary

    seconds = prediction.seconds(builder, values)  # every number shown is a sum of these
    measured = []
    if prediction.subroutines:  # the backend names each site's subroutine: it sums its sites inside any of them
        rows, by = subroutine_rows(seconds), "subroutine"
        measured = [(c.subroutine, c.predicted_s, c.measured_s) for c in compare(builder, prediction, values, seconds)]
    else:
        rows, by = site_rows(seconds), "site"
    return PredictionSummary(backend=prediction.backend, machine=prediction.machine, total=prediction.total,
                             total_s=float(seconds.total().mean()), by=by, rows=rows,
                             measured=measured, notes=list(prediction.notes))
