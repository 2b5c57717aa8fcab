"""The site tree as a Hatchet literal (``ma export DIR --hatchet OUT.json``).

The file is a plain Hatchet literal, ``GraphFrame.from_literal(json.load(f))`` reads it: one root for the
program and one node per site, framed by ``{"name": id, "type": site type, "path": path}`` so that two
sites with one id stay two nodes. A node's ``metrics`` are summed over ranks and threads: ``calls``,
``predicted`` and ``measured`` (totals over calls: flops, bytes, trip counts), ``pass``, ``fail``,
``unmeasured``, ``time (inc)`` and ``cpu time (inc)`` (seconds, inclusive) and ``time`` (exclusive: the
node's inclusive time less its children's). The per-rank values ride along in each node under
``ma_ranks`` (a key the literal reader ignores); :func:`graphframe` turns them into Hatchet's usual
``(node, rank)`` index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ma_post.traceset import Site, TraceSet

NS = 1e-9
INCLUSIVE = ("time (inc)", "cpu time (inc)")
EXCLUSIVE = ("time", "calls", "predicted", "measured", "pass", "fail", "unmeasured")
RANKS_KEY = "ma_ranks"
ROOT_NAME = "<program>"


def _rank_metrics(ts: TraceSet, site: Site) -> dict[str, np.ndarray]:
    """Per-rank totals (threads summed) of one site; inclusive times in seconds."""
    def per_rank(values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float).sum(axis=1)

    return {
        "calls": per_rank(site.calls), "predicted": per_rank(site.predicted.sum),
        "measured": per_rank(site.measured.sum), "pass": per_rank(site.passes), "fail": per_rank(site.fails),
        "unmeasured": per_rank(site.unmeasured), "time (inc)": per_rank(site.wall_ns) * NS,
        "cpu time (inc)": per_rank(site.cpu_ns) * NS,
    }


def _node(ts: TraceSet, site: Site, name: str, frame_type: str, path: str) -> dict[str, Any]:
    children = [_node(ts, child, child.id, child.type, child.path) for child in ts.children(site)]
    if site.key:
        metrics = _rank_metrics(ts, site)
    else:  # the program: its inclusive time is that of its top-level sites
        zeros = np.zeros(ts.n_ranks)
        metrics = {name: zeros.copy() for name in ("calls", "predicted", "measured", "pass", "fail", "unmeasured")}
        for key in INCLUSIVE:
            metrics[key] = sum((np.asarray(c[RANKS_KEY][key]) for c in children), zeros.copy())
    children_time = sum((np.asarray(c[RANKS_KEY]["time (inc)"]) for c in children), np.zeros(ts.n_ranks))
    metrics["time"] = np.maximum(metrics["time (inc)"] - children_time, 0.0)
    ranks = {"rank": [int(r) for r in ts.ranks], **{k: v.tolist() for k, v in metrics.items()}}
    node: dict[str, Any] = {
        "frame": {"name": name, "type": frame_type, "path": path},
        "metrics": {k: float(np.sum(v)) for k, v in metrics.items()},
        RANKS_KEY: ranks,
    }
    if children:
        node["children"] = children
    return node


def hatchet_literal(ts: TraceSet) -> list[dict[str, Any]]:
    """The Hatchet literal of a run: a list holding the program's root node."""
    return [_node(ts, ts.root, ROOT_NAME, "program", "")]


def export_hatchet(ts: TraceSet, out: str | Path) -> Path:
    """Write the literal of ``ts`` as JSON to ``out``; returns the path."""
    path = Path(out)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(hatchet_literal(ts)))
    return path


def graphframe(literal: str | Path | list[dict[str, Any]]) -> Any:
    """A Hatchet GraphFrame of an exported literal with ``(node, rank)`` as the DataFrame's index.

    Needs the ``llnl-hatchet`` package (imported here only).
    """
    import hatchet as ht
    import pandas as pd

    data = json.loads(Path(literal).read_text()) if isinstance(literal, (str, Path)) else literal
    aggregate = ht.GraphFrame.from_literal(data)
    by_path: dict[str, dict[str, list[float]]] = {}

    def collect(node: dict[str, Any]) -> None:
        by_path[node["frame"]["path"]] = node[RANKS_KEY]
        for child in node.get("children", ()):
            collect(child)

    for root in data:
        collect(root)
    rows = []
    for hnode in aggregate.graph.traverse():
        per_rank = by_path[hnode.frame["path"]]
        for i, rank in enumerate(per_rank["rank"]):
            row = {"node": hnode, "rank": rank, "name": hnode.frame["name"]}
            row.update({metric: per_rank[metric][i] for metric in (*EXCLUSIVE, *INCLUSIVE)})
            rows.append(row)
    frame = pd.DataFrame(rows).set_index(["node", "rank"]).sort_index()
    return ht.GraphFrame(aggregate.graph, frame, list(EXCLUSIVE), list(INCLUSIVE), default_metric="time (inc)")
