"""The ports' command line: ``--class`` and ``--niter``, parsed on every rank, reported by the root only.

Exit status: 0 verified (or no verification asked for), 1 verification failed, 2 bad arguments or setup.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from .mpi import ROOT, start_mpi

EXIT_OK, EXIT_UNVERIFIED, EXIT_SETUP = 0, 1, 2


class ArgumentError(Exception):
    """A bad command line; raised instead of argparse's print-and-exit so that all ranks exit alike."""


class RankParser(argparse.ArgumentParser):
    """argparse that raises on errors and prints help on the root rank only (every rank parses)."""

    def __init__(self, rank: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rank = rank

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(message)

    def print_help(self, file: object = None) -> None:  # type: ignore[override]
        if self.rank == ROOT:
            super().print_help(file)  # type: ignore[arg-type]


class _Problem(Protocol):
    @property
    def niter(self) -> int: ...


P = TypeVar("P", bound=_Problem)


def resolve_class(classes: Mapping[str, P], class_name: str, niter: int | None,
                  error: type[Exception]) -> tuple[P, int]:
    """The class's parameters and the number of timed iterations (the class's unless given), or ``error``."""
    problem = classes.get(class_name.upper())
    if problem is None:
        raise error(f"unknown class {class_name!r}; expected one of {', '.join(classes)}")
    if niter is None:
        return problem, problem.niter
    if niter < 1:
        raise error(f"--niter must be a positive integer, got {niter}")
    return problem, niter


def parse(argv: Sequence[str] | None, rank: int, *, prog: str, description: str, class_metavar: str,
          niter_help: str) -> argparse.Namespace:
    """``--class`` (default S) and ``--niter`` (default None: the class's)."""
    parser = RankParser(rank, prog=prog, description=description)
    parser.add_argument("--class", dest="class_name", default="S", metavar=class_metavar,
                        help="problem class (default S)")
    parser.add_argument("--niter", type=int, default=None, help=niter_help)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None, *, prog: str, description: str, class_metavar: str, niter_help: str,
         check: Callable[[argparse.Namespace, Any], None], setup_error: type[Exception],
         run: Callable[..., Any]) -> int:
    """Parse, ``check`` the arguments against the process count (raising ``setup_error``), then ``run``
    (class name, niter, communicator, verbose=True) -> a result whose ``verified`` gives the exit status."""
    MPI = start_mpi()
    comm = MPI.COMM_WORLD
    try:
        args = parse(argv, comm.Get_rank(), prog=prog, description=description, class_metavar=class_metavar,
                     niter_help=niter_help)
        check(args, comm)
    except (ArgumentError, setup_error) as exc:
        # Every rank reaches the same verdict from the same arguments, so all exit without talking.
        if comm.Get_rank() == ROOT:
            print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
        return EXIT_SETUP
    result = run(args.class_name, args.niter, comm, verbose=True)
    sys.stdout.flush()
    return EXIT_OK if result.verified in (True, None) else EXIT_UNVERIFIED
