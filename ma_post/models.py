"""Symbolic models: per-rank totals of a quantity as SymPy expressions in the declared input parameters.

The model of a quantity is the sum over the sites of that type of

    (the site's expression) x (the trip-count expressions of its enclosing loops) x (repeat factors)

and, for MPI quantities, also the site's ``count_expr`` (messages per call). Inside a loop an expression may use
``iter``, the iteration (from 0) of the innermost enclosing loop; there the product by the trip count becomes
the exact sum over the iterations (ma_post.itersum: ``1 + min(iter, 1)`` over ``n`` iterations is ``2*n - 1``),
loop by loop from the site outwards, so a trip count that depends on an outer loop's ``iter`` is summed too.
A *repeat factor* k is used when a site runs exactly k times per execution of its parent on every rank (e.g.
a subroutine called twice in each iteration). When the trace shows a site running a fraction of the times its enclosing
loops predict (inside an ``if``) or a varying number of times, the model keeps the literal factor 1 and
records a note; ``conditional="observed"`` uses the observed ratio instead (exact at the traced
parameters, an assumption elsewhere).

Every model is checked against the trace it was built from: evaluated at each rank's traced inputs it
must reproduce the runtime's own predicted totals (sum of the per-call predictions); the check is in
``Model.check`` and a disagreement becomes a note naming the ranks.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy

from ma_core.errors import ExpressionError, ModelError

from .evaluation import evaluate, evaluate_at_trace
from .itersum import ITER, IterationSumError, sum_over_iterations
from .quantities import BASE_QUANTITIES, DEFAULT_QUANTITIES, RATIOS, known_quantities, normalise_quantity
from .sympy_expr import symbol, to_sympy, to_text
from .sympy_tree import free_symbols
from .traceset import Site, SiteKey, TraceSet, rank_ranges


@dataclass
class Note:
    """Something the user should know about how the model was built."""

    kind: str  # conditional, repeated, varying, loop_mismatch, calls, threads, expr_differs, no_expr,
    #            undeclared, rank_dependent, check, iteration
    path: str
    message: str
    key: SiteKey | None = None  # the site it is about (a model keeps the notes on its sites and their ancestors)

    def __str__(self) -> str:
        return f"{self.path or '(model)'}: {self.message}"


@dataclass
class Term:
    """The contribution of one site: ``value * multiplier``, or ``total`` where the value depends on the
    iteration (``iter``) and is summed over the enclosing loops instead."""

    site: Site
    value: sympy.Expr
    multiplier: sympy.Expr  # the site's calls per rank
    subroutine: str  # path of the innermost enclosing subroutine, "" outside any
    total: sympy.Expr | None = None

    @property
    def expr(self) -> sympy.Expr:
        return self.value * self.multiplier if self.total is None else self.total


@dataclass
class ModelCheck:
    """The model evaluated at each rank's traced inputs against the trace's own totals (arrays over ranks)."""

    ranks: np.ndarray
    model: np.ndarray
    trace_predicted: np.ndarray
    trace_measured: np.ndarray  # NaN where some call was not measured

    def max_rel_diff(self) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.abs(self.model - self.trace_predicted) / np.maximum(np.abs(self.trace_predicted), 1e-300)
        diff = np.where((self.model == self.trace_predicted), 0.0, diff)
        return float(np.nanmax(diff)) if diff.size else 0.0

    def disagreeing_ranks(self, rel: float = 1e-9) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            bad = ~np.isclose(self.model, self.trace_predicted, rtol=rel, atol=0.0)
        return self.ranks[bad]


@dataclass(frozen=True, eq=False)
class Model:
    """A symbolic per-rank model of one quantity, complete when ModelBuilder returns it (``cache`` only keeps
    the numeric function compiled from it)."""

    quantity: str
    expr: sympy.Expr  # derived variables appear as symbols unless inline
    inputs: list[str]  # input parameters the model depends on, sorted
    definitions: dict[str, sympy.Expr]  # derived name -> expression, in dependency order (empty when inline)
    terms: list[Term]
    notes: list[Note]
    trace_values: dict[str, np.ndarray]  # per-rank traced value of every input (NaN where not declared)
    ranks: np.ndarray
    inline: bool
    check: ModelCheck | None = None
    parts: tuple[Model, Model] | None = None  # numerator and denominator of a ratio
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # compiled numeric functions
    size: int = 0  # processes of the traced job (its ranks are 0..size-1; ``ranks`` are those traced)

    def inlined(self) -> sympy.Expr:
        """The expression in input parameters only."""
        return substitute_definitions(self.expr, self.definitions)

    def by_subroutine(self, *, by: str = "path") -> dict[str, sympy.Expr]:
        """Contribution of each subroutine (innermost enclosing one; "" = outside any), summing to the model.
        ``by="name"`` merges the calls of one subroutine from different places (MA paper Figure 17)."""
        out: dict[str, sympy.Expr] = {}
        for term in self.terms:
            key = term.subroutine.rsplit("/", 1)[-1] if by == "name" else term.subroutine
            out[key] = out.get(key, sympy.Integer(0)) + term.expr
        return out

    def by_site(self) -> list[tuple[Site, sympy.Expr]]:
        return [(t.site, t.expr) for t in self.terms]

    def rank_dependent_inputs(self) -> dict[str, tuple[float, float]]:
        """Inputs whose traced value differs between ranks: name -> (min, max)."""
        out = {}
        for name in self.inputs:
            values = self.trace_values.get(name)
            if values is not None and np.isfinite(values).any():
                lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
                if lo != hi:
                    out[name] = (lo, hi)
        return out

    def text(self) -> str:
        return to_text(self.expr)

    def evaluate(self, values: Mapping[str, Any] | None = None, *, rank: int | str | None = None) -> Any:
        """Numeric value (float64, NumPy semantics of the exports); see ma_post.evaluate.evaluate."""
        return evaluate(self, values or {}, rank=rank).value


class ModelBuilder:
    """Builds models of several quantities from one TraceSet, sharing the site analysis."""

    def __init__(self, ts: TraceSet, *, conditional: str = "literal") -> None:
        if conditional not in ("literal", "observed"):
            raise ModelError(f"conditional must be 'literal' or 'observed', not {conditional!r}")
        self.ts = ts
        self.conditional = conditional
        self.notes: list[Note] = []
        self._multipliers: dict[SiteKey, sympy.Expr] = {(): sympy.Integer(1)}
        self._entries: dict[SiteKey, sympy.Expr] = {}  # calls of a site per rank: a loop's without its trips
        self._factors: dict[SiteKey, sympy.Expr] = {}  # calls of a site per execution of its parent's body
        self._trips: dict[SiteKey, sympy.Expr] = {}  # trip-count expression of every loop
        # ``iter`` is the iteration of the innermost loop, unless the program declared a variable of that name.
        self._iter_declared = any(name == ITER for name, _ in ts.variables)
        self._check_expressions()
        self._definitions = self._collect_definitions()
        self._iter_names = self._iter_dependent()
        self._analyse()

    def _check_expressions(self) -> None:
        """Every expression of the trace converted once, so that one the runtime's bounds refuse is an error that
        names its site (the conversions later are cached)."""
        for site in self.ts.walk():
            for text in (site.expr, site.count_expr, *sorted(site.other_exprs)):
                if text:
                    where = f"site {site.path}" + (f" ({site.file}:{site.line})" if site.file else "")
                    _converted(text, where)
        for (name, scope), var in self.ts.variables.items():
            for text in (var.expr, *sorted(var.other_exprs)):
                if text:
                    _converted(text, f"variable {name!r}" + (f" of {scope}" if scope else ""))

    # --- structure ------------------------------------------------------------------------------
    def _analyse(self) -> None:
        """Multiplier expression of every site, and notes where the trace disagrees with the tree's structure.

        Alongside the symbolic multiplier runs its numeric twin: the calls the model expects on every rank
        and thread, built from the runtime's own per-call trip-count predictions. Where it disagrees with
        the calls in the trace and no note on the site or above explains it, a ``calls`` note says so.
        """
        ts = self.ts
        root_present = np.zeros_like(ts.root.calls, dtype=bool)
        for site in ts.children(ts.root):
            root_present |= site.present
        body_execs: dict[SiteKey, np.ndarray] = {(): root_present.astype(float)}
        model_body: dict[SiteKey, np.ndarray] = {(): root_present.astype(float)}
        explained: set[SiteKey] = set()
        for site in ts.walk():
            first_note = len(self.notes)
            self._analyse_site(site, body_execs, model_body, explained)
            for note in self.notes[first_note:]:
                note.key = site.key

    def _analyse_site(self, site: Site, body_execs: dict[SiteKey, np.ndarray], model_body: dict[SiteKey, np.ndarray],
                      explained: set[SiteKey]) -> None:
        ts = self.ts
        parent = site.parent or ()
        declaration = site.type in ("variable", "assign")
        factor, note = self._repeat_factor(site, body_execs[parent])
        noted = False
        if note is not None and not declaration:
            self.notes.append(note)
            noted = note.kind == "conditional"
        if parent == () and len(ts.thread_ids) > 1:
            factor = factor * self._thread_factor(site)
        calls_model = model_body[parent] * float(factor)
        self._factors[site.key] = factor
        multiplier = self._summed(self._multipliers[parent] * factor, parent, factor, site.path)
        self._entries[site.key] = multiplier
        if site.type == "loop":
            self._trips[site.key] = trips = self._trip_expr(site)
            multiplier = self._summed(multiplier * trips, site.key, sympy.Integer(1), site.path)
            meas, pred = site.measured, site.predicted
            all_measured = (meas.n == site.calls) & (site.calls > 0)
            body_execs[site.key] = np.where(all_measured, meas.sum, pred.sum)
            with np.errstate(invalid="ignore", divide="ignore"):
                pred_mean = np.where(pred.n > 0, pred.sum / np.where(pred.n > 0, pred.n, 1), 0.0)
            model_body[site.key] = calls_model * pred_mean
            wrong = all_measured & (meas.sum != pred.sum)
            if wrong.any():
                noted = True
                self.notes.append(Note("loop_mismatch", site.path,
                                       f"measured trip counts differ from the expression {site.expr!r} on ranks "
                                       f"{rank_ranges(ts.ranks[wrong.any(axis=1)])}; the sites inside ran the "
                                       "measured trips, the model counts the asserted ones (see ma validate)"))
        else:
            body_execs[site.key] = site.calls.astype(float)
            model_body[site.key] = calls_model
        self._multipliers[site.key] = multiplier
        if site.is_assertion:
            noted |= self._check_varying(site)
        if site.other_exprs:
            self.notes.append(Note("expr_differs", site.path,
                                   f"expression {site.expr!r} differs on some ranks: "
                                   + ", ".join(repr(e) for e in sorted(site.other_exprs))
                                   + "; the model uses the first rank's"))
        if parent in explained or noted:
            explained.add(site.key)
        elif not declaration:
            differ = ~np.isclose(calls_model, site.calls, rtol=1e-9, atol=0.0)
            if differ.any():
                explained.add(site.key)
                ranks = ts.ranks[differ.any(axis=1)]
                self.notes.append(Note("calls", site.path,
                                       f"the enclosing trip counts predict {_fmt(float(calls_model[differ].mean()))} "
                                       f"calls but the trace has {_fmt(float(site.calls[differ].mean()))} "
                                       f"(ranks {rank_ranges(ranks)})"))

    def _over_run(self, key: SiteKey, per_execution: sympy.Expr, path: str) -> sympy.Expr:
        """``per_execution`` (an expression per execution of the body of site ``key``, in the ``iter`` of the
        innermost loop there) added up over the run: summed over each enclosing loop's iterations, times each
        site's calls per execution of its parent's body, from ``key`` out to the top."""
        total = per_execution
        while key:
            if key in self._trips:
                total = self._resolve(total, path, self._iter_names)
                trips = self._resolve(self._trips[key], self.ts.sites[key].path, self._iter_names)
                if self._iter_declared:
                    total = total * trips
                else:
                    try:
                        total = sum_over_iterations(total, trips)
                    except IterationSumError as exc:
                        self.notes.append(Note("iteration", path, f"{exc}; the model multiplies by the trip count "
                                                                  "and keeps iter as a parameter"))
                        total = total * trips
            total = total * self._factors[key]
            key = self.ts.sites[key].parent or ()
        return total

    def _summed(self, product: sympy.Expr, key: SiteKey, per_execution: sympy.Expr, path: str) -> sympy.Expr:
        """``product`` (of trip counts and factors) unless a trip count in it uses ``iter``: then the sum over the
        iterations of ``per_execution`` at the body of ``key``."""
        if self._iter_declared or symbol(ITER) not in product.free_symbols:
            return product
        return self._over_run(key, per_execution, path)

    def _uses_iter(self, site: Site) -> bool:
        """Whether the site's expression uses the iteration of its loop (``iter``, not a declared variable)."""
        texts = [site.expr, site.count_expr, *site.other_exprs]
        return not self._iter_declared and any(text and symbol(ITER) in to_sympy(text).free_symbols for text in texts)

    def _thread_factor(self, site: Site) -> sympy.Expr:
        """Per-rank totals add up the threads: a top-level site that runs on k threads counts k times."""
        threads = site.present.sum(axis=1)[site.ranks_present()]
        lo, hi = int(threads.min()), int(threads.max())
        if lo == hi == 1:
            return sympy.Integer(1)
        if lo == hi:
            self.notes.append(Note("threads", site.path, f"runs on {lo} threads of every rank; the model counts "
                                                         f"it {lo} times"))
        else:
            self.notes.append(Note("threads", site.path, f"runs on {lo}..{hi} threads depending on the rank; the "
                                                         f"model counts it {hi} times"))
        return sympy.Integer(hi)

    def _repeat_factor(self, site: Site, parent_execs: np.ndarray) -> tuple[sympy.Expr, Note | None]:
        """Calls of ``site`` per execution of its parent's body, if the same positive integer everywhere."""
        mask = parent_execs > 0
        if not mask.any():
            return sympy.Integer(1), None
        ratio = site.calls[mask] / parent_execs[mask]
        lo, hi = float(ratio.min()), float(ratio.max())
        what = "loop iteration" if self.ts.sites[site.parent or ()].type == "loop" else "execution"
        if lo == hi and lo >= 1 and float(lo).is_integer():
            if lo == 1:
                return sympy.Integer(1), None
            return sympy.Integer(int(lo)), Note("repeated", site.path,
                                                f"runs {int(lo)} times per {what} of its parent on every rank; "
                                                f"the model multiplies it by {int(lo)}")
        mean = float(ratio.mean())
        observed = sympy.Rational(Fraction(mean).limit_denominator(10**6))
        times = _fmt(lo) if lo == hi else f"{_fmt(lo)}..{_fmt(hi)}"
        seen = (f"runs {times} times per {what} of its parent "
                f"({ts_ranks_text(self.ts, mask, site.calls, parent_execs)})")
        if self.conditional == "observed":
            return observed, Note("conditional", site.path, f"{seen}; the model uses the observed mean factor "
                                                            f"{observed}, exact only at the traced parameters")
        why = ("inside a condition, or inside the loop's block but outside its iterations?" if lo < 1
               else "called a varying number of times?")
        return sympy.Integer(1), Note("conditional", site.path,
                                      f"{seen}, not once: {why} The model counts it once per {what} "
                                      "(conditional='observed' / --conditional observed scales it by the observed "
                                      f"mean {observed})")

    def _trip_expr(self, site: Site) -> sympy.Expr:
        if site.expr is not None:
            return to_sympy(site.expr)
        mean = site.measured.mean()
        self.notes.append(Note("no_expr", site.path, f"loop without an expression; the model uses the measured "
                                                     f"mean trip count {_fmt(mean)}"))
        return sympy.Rational(Fraction(mean).limit_denominator(10**6)) if np.isfinite(mean) else sympy.Integer(0)

    def _check_varying(self, site: Site) -> bool:
        pred = site.predicted
        varies = (pred.n > 0) & (pred.min != pred.max)
        if not varies.any() or self._uses_iter(site):
            return False  # (a value in iter varies by design: the model sums it over the iterations)
        ranks = self.ts.ranks[varies.any(axis=1)]
        self.notes.append(Note("varying", site.path,
                               f"the value of {site.expr!r} changes between calls "
                               f"({_fmt(float(np.nanmin(pred.min)))}..{_fmt(float(np.nanmax(pred.max)))}, ranks "
                               f"{rank_ranges(ranks)}): it depends on something that changes inside the enclosing "
                               "loops, which a product of trip counts cannot express exactly"))
        return True

    # --- variables ------------------------------------------------------------------------------
    def _collect_definitions(self) -> dict[str, list[tuple[str, str]]]:
        """derived name -> [(scope, expression text)] over every declaration."""
        out: dict[str, list[tuple[str, str]]] = {}
        for (name, scope), var in self.ts.variables.items():
            if var.kind == "derived" and var.expr:
                out.setdefault(name, []).append((scope, var.expr))
                for other in sorted(var.other_exprs):
                    out[name].append((scope, other))
        return out

    def _iter_dependent(self) -> set[str]:
        """Derived variables whose definition uses ``iter`` (directly or through another): the model inlines them,
        so that the sum over the iterations sees the iteration."""
        if self._iter_declared:
            return set()
        out: set[str] = set()
        grown = True
        while grown:
            grown = False
            for name, defs in self._definitions.items():
                if name not in out and any({ITER, *out} & {s.name for s in to_sympy(text).free_symbols}
                                           for _, text in defs):
                    out.add(name)
                    grown = True
        return out

    def _conflicting(self) -> set[str]:
        return {name for name, defs in self._definitions.items() if len({text for _, text in defs}) > 1}

    def _resolve(self, expr: sympy.Expr, path: str, names: set[str], seen: frozenset[tuple[str, str]] = frozenset(),
                 depth: int = 0) -> sympy.Expr:
        """Substitute the derived variables in ``names`` by the definition visible at ``path``."""
        if depth > 50:
            raise ModelError(f"{path}: derived variables refer to each other in a cycle")
        mapping = {}
        for sym in free_symbols(expr):
            name = sym.name
            if name not in names:
                continue
            var = self._visible(name, path, seen)
            if var is None or var.kind != "derived" or not var.expr:
                continue
            inner = to_sympy(var.expr)
            # The definition is resolved where it was declared, without seeing itself (n = n/2 refers to an outer n).
            mapping[sym] = self._resolve(inner, var.scope, names, seen | {(name, var.scope)}, depth + 1)
        return expr.xreplace(mapping) if mapping else expr

    def _visible(self, name: str, path: str, seen: frozenset[tuple[str, str]]) -> Any:
        best = None
        for (vname, scope), var in self.ts.variables.items():
            if vname != name or (vname, scope) in seen:
                continue
            if ((scope == "" or path == scope or path.startswith(scope + "/"))
                    and (best is None or len(scope) > len(best.scope))):
                best = var
        return best

    # --- models ---------------------------------------------------------------------------------
    def model(self, quantity: str, *, inline: bool = False) -> Model:
        q = normalise_quantity(quantity)
        if q in RATIOS or ("/" in q and q not in BASE_QUANTITIES):
            num_name, den_name = RATIOS.get(q) or tuple(part.strip() for part in q.split("/", 1))
            num, den = self.model(num_name, inline=inline), self.model(den_name, inline=inline)
            defs = {**num.definitions, **den.definitions}
            expr = num.expr / den.expr if den.expr != 0 else sympy.nan
            model = Model(q, expr, sorted(set(num.inputs) | set(den.inputs)), defs, [],
                          _unique_notes(num.notes + den.notes),
                          {**num.trace_values, **den.trace_values}, self.ts.ranks, inline, parts=(num, den),
                          size=self.ts.size)
            return model
        if q not in BASE_QUANTITIES:
            raise ModelError(f"unknown quantity {quantity!r}; known: {', '.join(known_quantities())} "
                             "or a ratio A/B of two of them")
        types, what = BASE_QUANTITIES[q]
        conflicting = self._conflicting()
        all_derived = set(self._definitions)
        terms: list[Term] = []
        notes: list[Note] = []
        for site in self.ts.walk():
            if site.type not in types:
                continue
            value = self.site_value(site, what)
            if value is None:
                notes.append(Note("no_expr", site.path, "no expression: left out of the model"))
                continue
            names = (all_derived if inline else conflicting) | self._iter_names
            value = self._resolve(value, site.path, names)
            multiplier = self._resolve(self._multipliers[site.key], site.path, names)
            total = None
            if not self._iter_declared and symbol(ITER) in value.free_symbols:
                total = self._resolve(self._over_run(site.parent or (), value * self._factors[site.key], site.path),
                                      site.path, names)
            terms.append(Term(site, value, multiplier, self._subroutine_of(site), total))
        expr = sympy.Add(*(t.expr for t in terms)) if terms else sympy.Integer(0)
        notes = [n for n in self.notes if n.key is None or any(t.site.key[:len(n.key)] == n.key for t in terms)] + notes
        definitions = {} if inline else self._definitions_for(expr, conflicting)
        inputs, trace_values = self._inputs(expr, definitions, notes)
        unchecked = Model(q, expr, inputs, definitions, terms, notes, trace_values, self.ts.ranks, inline,
                          size=self.ts.size)
        check = self._check(unchecked, types, what)
        bad = np.isin(check.ranks, check.disagreeing_ranks())
        if bad.any():
            notes.append(Note("check", "", f"at the traced inputs the model gives "
                                           f"{_fmt(float(np.mean(check.model[bad])))} per rank but the "
                                           "trace's own predictions add up to "
                                           f"{_fmt(float(np.mean(check.trace_predicted[bad])))} on ranks "
                                           f"{rank_ranges(check.ranks[bad])} (see the other notes for why)"))
        return dataclasses.replace(unchecked, notes=_unique_notes(notes), check=check)

    def submodel(self, name: str, expr: sympy.Expr, *, inline: bool = True) -> Model:
        """A model of any expression over the same variables (e.g. one site's term), unchecked."""
        notes: list[Note] = []
        definitions = {} if inline else self._definitions_for(expr, self._conflicting())
        if inline:
            expr = self._resolve(expr, "", set(self._definitions))
        inputs, values = self._inputs(expr, definitions, notes)
        return Model(name, expr, inputs, definitions, [], notes, values, self.ts.ranks, inline, size=self.ts.size)

    def executions(self, site: Site, *, inline: bool = True) -> sympy.Expr:
        """Executions per rank of the site's body, as an expression: its calls, times the trip count for a loop."""
        names = set(self._definitions) if inline else self._conflicting()
        return self._resolve(self._multipliers[site.key], site.path, names)

    def entries(self, site: Site) -> sympy.Expr:
        """Calls per rank of the site itself, as an expression: its executions, without a loop's trip count."""
        return self._resolve(self._entries[site.key], site.path, set(self._definitions))

    def resolve(self, expr: sympy.Expr, path: str = "") -> sympy.Expr:
        """``expr`` in the model's inputs: every derived variable replaced by its definition visible at the site
        ``path``, as the model's own terms are (e.g. an expression of an annotation outside the site tree)."""
        return self._resolve(expr, path, set(self._definitions))

    def site_value(self, site: Site, what: str) -> sympy.Expr | None:
        if what == "value":
            return None if site.expr is None else to_sympy(site.expr)
        count = to_sympy(site.count_expr) if site.count_expr else sympy.Integer(1)
        if what == "count":
            return count
        return None if site.expr is None else to_sympy(site.expr) * count

    def _subroutine_of(self, site: Site) -> str:
        for ancestor in reversed(self.ts.ancestors(site)):
            if ancestor.type == "subroutine":
                return ancestor.path
        return ""

    def _definitions_for(self, expr: sympy.Expr, conflicting: set[str]) -> dict[str, sympy.Expr]:
        """Definitions of the derived symbols ``expr`` uses (transitively), dependencies first."""
        ordered: dict[str, sympy.Expr] = {}

        def visit(name: str, stack: tuple[str, ...]) -> None:
            if name in ordered or name not in self._definitions or name in conflicting:
                return
            if name in stack:
                raise ModelError(f"derived variable {name!r} is defined in terms of itself "
                                 f"({' -> '.join((*stack, name))})")
            scope, text = self._definitions[name][0]
            definition = self._resolve(to_sympy(text), scope, conflicting, frozenset({(name, scope)}))
            for sym in sorted(definition.free_symbols, key=lambda s: s.name):
                visit(sym.name, (*stack, name))
            ordered[name] = definition

        for sym in sorted(expr.free_symbols, key=lambda s: s.name):
            visit(sym.name, ())
        return ordered

    def _inputs(self, expr: sympy.Expr, definitions: Mapping[str, sympy.Expr], notes: list[Note]
                ) -> tuple[list[str], dict[str, np.ndarray]]:
        full = substitute_definitions(expr, definitions)
        names = sorted(s.name for s in free_symbols(full))
        values: dict[str, np.ndarray] = {}
        for name in names:
            entries = [v for (n, _), v in self.ts.variables.items() if n == name]
            if not entries:
                notes.append(Note("undeclared", "", f"{name!r} is not a declared variable; it is left as a parameter"))
                values[name] = np.full(self.ts.n_ranks, np.nan)
                continue
            var = min(entries, key=lambda v: len(v.scope))  # the outermost declaration
            if var.kind == "derived":
                notes.append(Note("undeclared", "", f"derived variable {name!r} has no usable definition; "
                                                    "it is left as a parameter"))
            values[name] = var.values
            if var.rank_dependent:
                notes.append(Note("rank_dependent", "", f"input {name!r} differs between ranks "
                                                        f"({_fmt(float(np.nanmin(var.values)))}.."
                                                        f"{_fmt(float(np.nanmax(var.values)))}): "
                                                        "the model is per rank"))
            if var.varies_within_rank:
                notes.append(Note("varying", var.scope, f"input {name!r} takes several values during the run "
                                                        f"({_fmt(float(np.nanmin(var.mins)))}.."
                                                        f"{_fmt(float(np.nanmax(var.maxs)))}); traced value = last"))
        return names, values

    def _check(self, model: Model, types: Iterable[str], what: str) -> ModelCheck:
        ts = self.ts
        predicted = np.zeros(ts.n_ranks)
        measured = np.zeros(ts.n_ranks)
        for site in ts.walk():
            if site.type not in types:
                continue
            pred, meas = site.predicted, site.measured
            if what == "value":
                p, m = pred.sum, np.where(meas.n == site.calls, meas.sum, np.nan)
            else:
                cp, cm = site.count_predicted, site.count_measured
                if what == "count":
                    p, m = cp.sum, np.where(cm.n == site.calls, cm.sum, np.nan)
                else:  # bytes: per-call bytes x messages; exact when either is the same on every call
                    with np.errstate(invalid="ignore", divide="ignore"):
                        p = pred.sum * np.where(cp.n > 0, cp.sum / np.where(cp.n > 0, cp.n, 1), 0)
                        m = np.where(meas.n == site.calls,
                                     meas.sum * np.where(cm.n > 0, cm.sum / np.where(cm.n > 0, cm.n, 1), 0), np.nan)
            p = np.where(site.present, p, 0.0)
            m = np.where(site.present, m, 0.0)
            predicted += p.sum(axis=1)
            measured += m.sum(axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            values = evaluate_at_trace(model)
        return ModelCheck(ts.ranks, values, predicted, measured)


def substitute_definitions(expr: sympy.Expr, definitions: Mapping[str, sympy.Expr]) -> sympy.Expr:
    """Replace derived symbols by their definitions (given dependencies first) until none is left."""
    if not definitions:
        return expr
    resolved: dict[sympy.Symbol, sympy.Expr] = {}
    for name, definition in definitions.items():
        resolved[symbol(name)] = definition.xreplace(resolved)
    return expr.xreplace(resolved)


def model(ts: TraceSet, quantity: str, *, inline: bool = False, conditional: str = "literal") -> Model:
    """Symbolic per-rank model of ``quantity`` (see known_quantities()) built from a TraceSet."""
    return ModelBuilder(ts, conditional=conditional).model(quantity, inline=inline)


def available_quantities(ts: TraceSet) -> list[str]:
    """The default quantities that have at least one site in ``ts``."""
    types = {s.type for s in ts.sites.values()}
    return [q for q in DEFAULT_QUANTITIES if types & set(BASE_QUANTITIES[q][0])]


def _unique_notes(notes: Iterable[Note]) -> list[Note]:
    seen: dict[tuple[str, str, str], Note] = {}
    for note in notes:
        seen.setdefault((note.kind, note.path, note.message), note)
    return list(seen.values())


def _converted(text: str, where: str) -> sympy.Expr:
    """to_sympy(text), its ExpressionError (the runtime's own message) a ModelError naming ``where``."""
    try:
        return to_sympy(text)
    except ExpressionError as exc:
        raise ModelError(f"{where}: {exc}") from None


def _fmt(x: float) -> str:
    if not np.isfinite(x):
        return str(x)
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def ts_ranks_text(ts: TraceSet, mask: np.ndarray, calls: np.ndarray, execs: np.ndarray) -> str:
    """Short description of where a site's calls differ from its parent's executions."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(mask, calls / np.where(mask, execs, 1), np.nan)
    per_rank = np.nanmean(ratio, axis=1)
    odd = ts.ranks[np.isfinite(per_rank) & (per_rank != 1)]
    return f"ranks {rank_ranges(odd)}" if odd.size else "all ranks"


__all__ = ["BASE_QUANTITIES", "DEFAULT_QUANTITIES", "RATIOS", "Model", "ModelBuilder", "ModelCheck", "ModelError",
           "Note", "Term", "available_quantities", "known_quantities", "model", "normalise_quantity",
           "substitute_definitions"]
