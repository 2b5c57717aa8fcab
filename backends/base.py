"""The backend interface: an abstract base class and the prediction it returns.

A backend turns a symbolic model of a program (:class:`ma_post.ModelBuilder`: per-site flops, loads/stores
and messages in the program's input parameters) and a :class:`MachineProfile` into a :class:`Prediction`:
per site, the time spent computing, moving memory, communicating and in the language's runtime (an interpreter's
own work: :mod:`backends.cpython` for Python; nothing for a compiled program), as SymPy expressions that stay
symbolic in whatever inputs ``parameters`` leaves unbound, so the prediction evaluates at any problem class and
process count and exports like any other model.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import argparse

    import numpy as np
    import numpy.typing as npt
    import sympy

    from ma_post import ModelBuilder, TraceSet

    from .machine.profile import MachineProfile

PARTS = ("compute", "memory", "communication", "runtime")


def _zero() -> sympy.Expr:
    import sympy

    return sympy.Integer(0)


@dataclass(frozen=True)
class SitePrediction:
    """Predicted seconds per rank spent at one annotation site, split into the parts of the PMaC convolution
    (perc_framework.txt, Eq. 1-2) and the runtime part: the seconds the language's runtime spends on its own
    work there (the CPython interpreter's calls into compiled code, subscripts, annotations; 0 for a compiled
    program). ``path`` is the site's path in the trace's site tree."""

    path: str
    compute: sympy.Expr
    memory: sympy.Expr
    communication: sympy.Expr
    runtime: sympy.Expr = field(default_factory=_zero)

    @property
    def total(self) -> sympy.Expr:
        """Sum of the four parts (a backend that overlaps them reports the overlap in its parts)."""
        return self.compute + self.memory + self.communication + self.runtime


@dataclass(frozen=True)
class Prediction:
    """What :meth:`Backend.predict` returns: the per-site breakdown and what it was computed from.

    ``subroutines`` maps a site's path to the path of its innermost enclosing subroutine ("" for none); a backend
    that fills it gets the per-subroutine totals (:meth:`by_subroutine`, :meth:`subroutine_total`) and the
    comparison with the traces' measured subroutine times (:mod:`backends.measured`) in ``ma predict``."""

    backend: str
    machine: str
    sites: tuple[SitePrediction, ...]
    parameters: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    subroutines: Mapping[str, str] = field(default_factory=dict)

    def by_subroutine(self) -> dict[str, SitePrediction]:
        """Parts summed over the sites of each subroutine (innermost enclosing one), by subroutine path."""
        out: dict[str, list[SitePrediction]] = {}
        for site in self.sites:
            out.setdefault(self.subroutines.get(site.path, ""), []).append(site)
        return {name: _summed(name, members) for name, members in out.items()}

    def within(self, path: str) -> sympy.Expr:
        """Seconds per rank of the sites at or below site path ``path`` (any region: a loop, a subroutine)."""
        import sympy

        from ma_core.errors import BackendError

        inside = [s.total for s in self.sites if _at_or_below(s.path, path)]
        if not inside:
            raise BackendError(f"no predicted site lies at or below {path!r}")
        return sympy.Add(*inside)

    def subroutine_total(self, name: str) -> sympy.Expr:
        """Seconds per rank of every site inside subroutine path ``name`` (its nested subroutines included)."""
        import sympy

        from ma_core.errors import BackendError

        found = [s.total for s in self.sites if _at_or_below(self.subroutines.get(s.path, ""), name)]
        if not found:
            raise BackendError(f"no predicted site lies in subroutine {name!r}")
        return sympy.Add(*found)

    def per_rank(self, model: ModelBuilder, values: Mapping[str, float] | None = None,
                 expr: sympy.Expr | None = None) -> npt.NDArray[np.float64]:
        """The total (or ``expr``, e.g. :meth:`within` a region) at every traced rank's own inputs, ``values``
        overriding them: the slowest rank's is the run's time."""
        return per_rank(model, self.total if expr is None else expr, values or {})

    def seconds(self, model: ModelBuilder, values: Mapping[str, float] | None = None) -> PredictedSeconds:
        """Every site's parts at every traced rank's own inputs (``values`` overriding them), compiled and
        evaluated in one pass: the numbers a report shows of this prediction (totals, regions, subroutines) are
        sums of these, so they need no further evaluation."""
        return PredictedSeconds(tuple(s.path for s in self.sites), dict(self.subroutines),
                                per_rank_table(model, [getattr(s, p) for s in self.sites for p in PARTS],
                                               values or {}).reshape(len(self.sites), len(PARTS), -1))

    def report_fields(self) -> dict[str, Any]:
        """What ``ma predict --format json`` reports of this prediction besides its parts (plain JSON values, by
        name): none by default; a backend adds what its users need to see (the maps backend: the sites whose hit
        rates were assumed)."""
        return {}

    def part(self, name: str, within: str = "") -> sympy.Expr:
        """Seconds per rank of one part (``compute``, ``memory``, ``communication`` or ``runtime``) over the whole
        program, or over the sites at or below site path ``within``."""
        import sympy

        if name not in PARTS:
            raise ValueError(f"unknown part {name!r}: expected one of {', '.join(PARTS)}")
        return sympy.Add(*(getattr(site, name) for site in self.sites if not within or _at_or_below(site.path, within)))

    @property
    def total(self) -> sympy.Expr:
        import sympy

        return sympy.Add(*(site.total for site in self.sites))

    @property
    def free_inputs(self) -> list[str]:
        """Input parameters the prediction still depends on."""
        return sorted(str(s) for s in self.total.free_symbols)

    def evaluate(self, values: Mapping[str, float] | None = None) -> float:
        """Total seconds with the remaining inputs bound to ``values``.

        Raises :class:`ma.errors.MAError` naming the inputs still unbound.
        """
        import sympy

        from ma_core.errors import MAError

        # Whole numbers bind exactly: a float 64.0 would make floor(log2(nprocs)/2) round log(64.)/log(2) down.
        given = {name: sympy.Integer(int(value)) if float(value).is_integer() else sympy.Float(value)
                 for name, value in (values or {}).items()}
        total = self.total
        # xreplace, not subs: the same binding of symbols to numbers, without subs' rewriting of every Piecewise
        # (minutes for a whole program's prediction)
        expr = total.xreplace({s: given[s.name] for s in total.free_symbols if s.name in given})
        missing = sorted(str(s) for s in expr.free_symbols)
        if missing:
            raise MAError(f"prediction by backend {self.backend!r}: no value for input(s) {', '.join(missing)}")
        return float(expr)


def _at_or_below(path: str, root: str) -> bool:
    """Whether site path ``path`` is ``root`` or lies below it: the one rule of a region's (a subroutine's) sites."""
    return path == root or path.startswith(root + "/")


def _summed(name: str, sites: list[SitePrediction]) -> SitePrediction:
    """One site of the parts of ``sites`` added up, under path ``name``."""
    import sympy

    return SitePrediction(name, *(sympy.Add(*(getattr(s, part) for s in sites)) for part in PARTS))


@dataclass(frozen=True)
class PredictedSeconds:
    """A prediction in numbers: ``per_rank[site, part, rank]`` seconds of each site (in ``paths`` order) and part
    (in :data:`PARTS` order) at each traced rank, and each site's subroutine (as :attr:`Prediction.subroutines`)."""

    paths: tuple[str, ...]
    subroutines: Mapping[str, str]
    per_rank: npt.NDArray[np.float64]

    def parts(self, sites: Sequence[int] | None = None) -> npt.NDArray[np.float64]:
        """``[part, rank]`` seconds summed over ``sites`` (indices into ``paths``; all when None)."""
        chosen = self.per_rank if sites is None else self.per_rank[list(sites)]
        return chosen.sum(axis=0)  # type: ignore[no-any-return]

    def total(self, sites: Sequence[int] | None = None) -> npt.NDArray[np.float64]:
        """Seconds per rank of ``sites`` (all when None), every part added."""
        return self.parts(sites).sum(axis=0)  # type: ignore[no-any-return]

    def within(self, path: str) -> list[int]:
        """The sites at or below site path ``path`` (as :meth:`Prediction.within`)."""
        return [i for i, p in enumerate(self.paths) if _at_or_below(p, path)]

    def in_subroutine(self, name: str) -> list[int]:
        """The sites inside subroutine path ``name``, its nested subroutines included (as
        :meth:`Prediction.subroutine_total`)."""
        return [i for i, p in enumerate(self.paths) if _at_or_below(self.subroutines.get(p, ""), name)]

    def by_subroutine(self) -> dict[str, list[int]]:
        """The sites of each subroutine (innermost enclosing one; "" for none), as :meth:`Prediction.by_subroutine`."""
        out: dict[str, list[int]] = {}
        for i, path in enumerate(self.paths):
            out.setdefault(self.subroutines.get(path, ""), []).append(i)
        return out


def per_rank_table(model: ModelBuilder, exprs: Sequence[sympy.Expr], values: Mapping[str, float]
                   ) -> npt.NDArray[np.float64]:
    """``[expression, rank]``: several expressions of a prediction at every traced rank's own inputs (``values``
    override them), compiled as one function. One function of a program's few hundred site parts costs about as
    much to compile as one of them alone, and every value a report shows is a sum of these rows."""
    import numpy as np
    import sympy

    from ma_post.evaluation import RANK, evaluate
    from ma_post.sympy_tree import free_symbols

    table = np.zeros((len(exprs), len(model.ts.ranks)))
    # An expression in rank is evaluated over the ranks of the job, and its mean stands for every rank; the others
    # keep each traced rank's own value. So the two kinds are compiled apart, as each would be alone.
    in_rank = [RANK in {s.name for s in free_symbols(model.resolve(e))} for e in exprs]
    for kind in (True, False):
        rows = [i for i, flag in enumerate(in_rank) if flag is kind]
        if not rows:
            continue
        submodel = model.submodel("predicted", sympy.Tuple(*(exprs[i] for i in rows)))
        result = evaluate(submodel, dict(values))  # its value is the mean over ranks where their inputs differ
        seconds = np.asarray(result.value if result.per_rank is None else result.per_rank, dtype=float)
        table[rows] = np.broadcast_to(seconds, (len(submodel.ranks), len(rows))).T
    return table


def per_rank(model: ModelBuilder, expr: sympy.Expr, values: Mapping[str, float]) -> npt.NDArray[np.float64]:
    """An expression of a prediction at every traced rank's own inputs (``values`` override them)."""
    import numpy as np

    from ma_post.evaluation import evaluate

    submodel = model.submodel("predicted", expr)
    result = evaluate(submodel, dict(values))  # its value is the mean over ranks where their inputs differ
    seconds = np.asarray(result.value if result.per_rank is None else result.per_rank, dtype=float)
    return np.broadcast_to(seconds, (len(submodel.ranks),)) if seconds.ndim == 0 else seconds


class Backend(abc.ABC):
    """A machine model. Subclasses set ``NAME`` (the name users select it by, equal to its entry-point name)
    and ``DESCRIPTION`` (one line for ``ma backends``), and implement :meth:`predict`.

    ``ma predict --backend NAME`` knows nothing of a backend but this interface: it lets every installed backend
    add its own options (:meth:`add_arguments`), builds the chosen one with :meth:`from_options` from the parsed
    command line, the run's traces and the machine profile, and prints :meth:`variants` beside the prediction.
    A third-party backend overrides these three to take options; the defaults take none."""

    NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "__abstractmethods__", None) and not isinstance(getattr(cls, "NAME", None), str):
            raise TypeError(f"backend class {cls.__qualname__} must set NAME to a string")

    @classmethod
    def add_arguments(cls, parser: argparse._ActionsContainer) -> None:
        """Add this backend's options to ``ma predict`` (an argument group of its own). Name them so that they
        cannot clash with another backend's, e.g. with the backend's name as prefix or a word only it uses."""
        return  # an optional hook: a backend without options adds none

    @classmethod
    def from_options(cls, options: argparse.Namespace, traces: TraceSet, machine: MachineProfile) -> Backend:
        """The backend configured from ``ma predict``'s parsed options (those of :meth:`add_arguments` among
        them), the traces of the run being predicted and the machine profile; raise ``MAError`` for bad options."""
        return cls()

    def variants(self, model: ModelBuilder, machine: MachineProfile,
                 parameters: Mapping[str, float] | None = None) -> dict[str, Prediction]:
        """Other predictions the backend offers beside :meth:`predict`'s, by label (e.g. one per bandwidth
        scenario); ``ma predict`` prints each one's total. None by default."""
        return {}

    @abc.abstractmethod
    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> Prediction:
        """Predict the run time of the modelled program on ``machine``.

        ``parameters`` binds some of the model's inputs (e.g. ``{"na": 14000}``); the others stay symbolic.
        """
