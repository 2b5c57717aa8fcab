"""Partner assertions of a run (``peer=`` on an MPI assertion): PASS/FAIL per site, with both ranks of a failure.

The runtimes write them as the trace's ``peers`` list (docs/trace-format.md); this folds that list of every rank
of a loaded run (rank files or merged trace alike) per site.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ma_core.errors import TraceError
from ma_core.text import one_line
from ma_core.trace_format import PEERS_KEY

if TYPE_CHECKING:
    from ma_post.traceset import TraceSet


@dataclass
class PeerFailure:
    """A rank's first call whose partner was not the asserted one."""

    rank: int
    call: int
    expected: float
    actual: int

    def describe(self) -> str:
        expected = int(self.expected) if float(self.expected).is_integer() else self.expected
        return f"rank {self.rank} call {self.call}: partner was rank {self.actual}, asserted rank {expected}"


@dataclass
class PeerResult:
    """One site's partner assertion over all ranks and threads."""

    path: str
    type: str
    expr: str
    passes: int = 0
    fails: int = 0
    unmeasured: int = 0
    failures: list[PeerFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fails == 0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "type": self.type, "expr": self.expr, "pass": self.passes, "fail": self.fails,
                "unmeasured": self.unmeasured, "ok": self.ok,
                "failures": [{"rank": f.rank, "call": f.call, "expected": f.expected, "actual": f.actual}
                             for f in self.failures]}

    def line(self) -> str:
        """``path:peer:ma_type:PASS=n:FAIL=m`` and, when it failed, the first failure with both ranks."""
        text = f"{self.path}:peer:ma_{self.type}:PASS={self.passes}:FAIL={self.fails}"
        if self.unmeasured:
            text += f":UNMEASURED={self.unmeasured}"
        if self.failures:
            first = min(self.failures, key=lambda f: (f.rank, f.call))
            more = len(self.failures) - 1
            text += f" ({first.describe()}" + (f"; {more} more rank(s) failed" if more else "") + ")"
        return one_line(text)


def peer_results(ts: TraceSet) -> list[PeerResult]:
    """Every site's partner assertion in ``ts`` (in the order first met), folded over ranks and threads; the same
    from a merged trace as from rank files (TraceSet.optional)."""
    results: dict[tuple[str, str], PeerResult] = {}
    for section in ts.optional(PEERS_KEY):
        for entry in section.entries:
            try:
                key = (str(entry["path"]), str(entry["type"]))
                result = results.setdefault(key, PeerResult(key[0], key[1], str(entry["expr"])))
                result.passes += int(entry["pass"])
                result.fails += int(entry["fail"])
                result.unmeasured += int(entry.get("unmeasured", 0))
                first = entry.get("first_fail")
                if first:
                    result.failures.append(PeerFailure(int(first.get("rank", section.rank)), int(first["call"]),
                                                       float(first["expected"]), int(first["actual"])))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise TraceError(section.source, f"rank {section.rank}: malformed '{PEERS_KEY}' entry {entry!r}: "
                                                 f"{exc}") from exc
    return list(results.values())
