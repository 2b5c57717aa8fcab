"""Per-site measurements beyond a counter's value: the cache simulation's counts and calls into compiled code.

Both are the application signature of the MAPS backend (docs/maps-backend.md), measured once on a signature run
and written as optional node fields (``cache``, ``c_calls``; ma_core/trace_format.py):

- **cache**: under ``ma run --counters valgrind --cache PROFILE`` every flop and loadstore site reads the
  tool's cache totals around each call and keeps the line accesses and the accesses each level served, summed
  over its calls (sums, not rates, so that calls, threads and ranks merge by adding). The counter's reader of
  the node is wrapped (:class:`CacheProbe`), so the annotations' own code is untouched.
- **c_calls**: with the ``ccalls`` provider (counters/ccalls.py) every call from Python into a builtin function
  or method is counted for the innermost open site; a site's figure is its own count plus its descendants'
  (inclusive, as the other counters). **subscripts**: the same provider's subscript instructions, alike.

:func:`annotate` adds both to the JSON of a thread's site tree when the trace is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ma_core.trace_format import (
    CACHE_MAX_LEVELS,
    DECLARATION_TYPES,
    NODE_C_CALLS_KEY,
    NODE_CACHE_KEY,
    NODE_SUBSCRIPTS_KEY,
)

from .tree import Node

CacheReading = Any  # counters.valgrind.CacheCounts (not imported here: it is loaded only under the tool)


class CacheProbe:
    """The counter reader of one flop/loadstore node, wrapped to read the cache totals around each call too.

    The annotation calls a node's reader once when the region starts and once when it stops. Which one this is
    comes from the open region itself: its start time ``t0`` is set just before the start's read, so a read
    that finds the region with the ``t0`` of the last start is the stop; anything else is a start (also after
    a call that closed without a stop read: an unbalanced region, which the trace reports as an anomaly).
    """

    __slots__ = ("accesses", "before", "calls", "hits", "levels", "node", "read_cache", "read_counter", "started",
                 "thread_state")

    def __init__(self, node: Node, read_counter: Callable[[], int], read_cache: Callable[[], CacheReading],
                 thread_state: Callable[[], Any]) -> None:
        self.node = node
        self.thread_state = thread_state
        self.read_counter = read_counter
        self.read_cache = read_cache
        self.started: int | None = None  # t0 of the call whose start was read
        self.before: CacheReading = None
        self.calls = 0
        self.accesses = 0
        self.levels = 0
        self.hits = [0] * CACHE_MAX_LEVELS

    def __call__(self) -> int:
        region = _open_region(self.thread_state(), self.node)
        if region is not None and self.started is not None and region.t0 == self.started:
            value = self.read_counter()  # first at the stop, last at the start: the region's own work only
            after = self.read_cache()
            self.started = None
            if after is not None and self.before is not None:
                self._add(after - self.before)
            return value
        self.started = region.t0 if region is not None else None
        self.before = self.read_cache()
        return self.read_counter()

    def _add(self, diff: CacheReading) -> None:
        self.calls += 1
        self.accesses += diff.accesses
        self.levels = len(diff.hits)
        for level, served in enumerate(diff.hits):
            self.hits[level] += served

    def to_json(self) -> dict[str, Any] | None:
        if self.calls == 0:
            return None
        return {"calls": self.calls, "accesses": self.accesses, "hits": self.hits[:self.levels]}


def _open_region(state: Any, node: Node) -> Any:
    """The open annotation of ``node`` in a thread's ``state`` (the innermost at a start or a balanced stop)."""
    frame = state.top if state is not None else None
    while frame is not None and frame.node is not node:
        frame = frame.outer
    return frame


def cache_probe_factory(read_cache: Callable[[], CacheReading],
                        thread_state: Callable[[], Any]) -> Callable[[Node], None]:
    """What the node factory calls on every new node: wraps the reader of flop and loadstore sites.
    ``thread_state()`` is the calling thread's ThreadState, or None."""

    def wrap(node: Node) -> None:
        if node.type in ("flop", "loadstore") and node.reader is not None:
            node.reader = CacheProbe(node, node.reader, read_cache, thread_state)

    return wrap


def _nodes(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(list(node.children.values()))  # list(): another thread may add a child meanwhile


def annotate(root: Node, tree: dict[str, Any], c_calls: dict[Node, int] | None,
             subscripts: dict[Node, int] | None = None) -> None:
    """Add ``cache``, ``c_calls`` and ``subscripts`` to the JSON ``tree`` of ``root`` (``c_calls``,
    ``subscripts``: each node's own count)."""
    by_key: dict[tuple[str, str], Node] = {}
    for node in _nodes(root):
        by_key[(node.type, node.path)] = node
    stack = list(tree.get("children") or ())
    inclusive = _inclusive(root, c_calls) if c_calls is not None else None
    indexed = _inclusive(root, subscripts) if subscripts is not None else None
    while stack:
        data = stack.pop()
        stack.extend(data.get("children") or ())
        found = by_key.get((data["type"], data["path"]))
        if found is None:
            continue
        node = found
        probe = node.reader
        if isinstance(probe, CacheProbe) and (cache := probe.to_json()) is not None:
            data[NODE_CACHE_KEY] = cache
        if inclusive is not None and node.type not in DECLARATION_TYPES:
            data[NODE_C_CALLS_KEY] = inclusive.get(node, 0)
        if indexed is not None and node.type not in DECLARATION_TYPES:
            data[NODE_SUBSCRIPTS_KEY] = indexed.get(node, 0)


def _inclusive(root: Node, own: dict[Node, int]) -> dict[Node, int]:
    """Each node's count plus its descendants' (children before parents: reversed preorder)."""
    counts = dict(own)
    for node in reversed(list(_nodes(root))):
        parent = node.parent
        if parent is not None and node in counts:
            counts[parent] = counts.get(parent, 0) + counts[node]
    return counts
