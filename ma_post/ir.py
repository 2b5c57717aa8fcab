"""Intermediate representation (MA paper Figure 6): ``depth:type:expression`` lines in tree order.

Depth is the depth of the annotation context, counting the main program as 1: a top-level site is on
depth 2, a site inside it on 3, and so on. A derived variable is a line ``depth:name:expression`` at the
depth of the context that declares it (a top-level ``ma.assign`` is on depth 1), as in the paper::

    1:num_proc_cols:2^ceil(log(nprocs)/(2*log(2)))
    2:loop:niter
    3:loop:l2npcols
    4:mpi_irecv:dp*2

Subroutines have no expression and print their name (``3:subroutine:conj_grad``); MPI sites whose
``count_expr`` is not 1 append it (``4:mpi_send:dp*2:count=npeers``). Input variables (``ma.variable``)
are not part of the IR; ``inputs=True`` lists them first as ``0:input:name``. ``subroutines=False``
leaves the subroutine lines out (their sites keep their depth), which is the paper's printout.
"""

from __future__ import annotations

from .traceset import Site, TraceSet


def ir_lines(ts: TraceSet, *, inputs: bool = False, subroutines: bool = True) -> list[str]:
    lines: list[str] = []
    if inputs:
        lines += [f"0:input:{name}" for name in ts.variable_names("input")]
    printed: set[tuple[str, str]] = set()
    _scope_lines(ts, ts.root, 1, lines, printed, subroutines)
    return lines


def _scope_lines(ts: TraceSet, scope: Site, depth: int, lines: list[str], printed: set[tuple[str, str]],
                 subroutines: bool) -> None:
    # Derived variables of this scope that have no node in the tree (a runtime may keep them only in the
    # variable table) come first, as declarations usually do.
    tree_assigns = {c.id for c in ts.children(scope) if c.type == "assign"}
    for (name, var_scope), var in ts.variables.items():
        if (var_scope == scope.path and var.kind == "derived" and name not in tree_assigns and var.expr
                and (name, var_scope) not in printed):
            printed.add((name, var_scope))
            lines.append(f"{depth}:{name}:{var.expr}")
    for site in ts.children(scope):
        if site.type == "variable":
            continue
        if site.type == "assign":
            if (site.id, scope.path) not in printed:
                printed.add((site.id, scope.path))
                lines.append(f"{depth}:{site.id}:{site.expr}")
            continue
        if subroutines or site.type != "subroutine":
            lines.append(site_line(site, depth + 1))
        _scope_lines(ts, site, depth + 1, lines, printed, subroutines)


def site_line(site: Site, depth: int) -> str:
    if site.type == "subroutine":
        return f"{depth}:subroutine:{site.id}"
    fields = [str(depth), site.type, site.expr if site.expr is not None else ""]
    if site.count_text:
        fields.append(f"count={site.count_text}")
    return ":".join(fields)


def format_ir(ts: TraceSet, *, inputs: bool = False, subroutines: bool = True) -> str:
    return "".join(line + "\n" for line in ir_lines(ts, inputs=inputs, subroutines=subroutines))
