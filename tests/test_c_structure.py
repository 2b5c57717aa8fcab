"""The structure of the C sources (ma_runtime/csrc), read as text: no include circle, no call circle between the C
runtime's files, and the public API (ma.h) defined in one file and nothing else exported.

Files of one job each only help while they stay layered: a header that includes, directly or not, one that includes
it, or two files that call each other, undo that. No compiler is needed: the checks read the sources.
"""

from __future__ import annotations

import re
from pathlib import Path

CSRC = Path(__file__).resolve().parent.parent / "ma_runtime" / "csrc"
LIBMA = CSRC / "libma"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function definition at the start of a line: its return type, its name, its parameters, then a body.
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b(ma_\w+)\s*\([^;{]*?\)\s*\{", re.M)
# ma_api.c defines the MPI assertions' short forms (ma_mpi_send, ...) through one macro.
MPI_FORM = re.compile(r"^MPI_FORM\((\w+)\)", re.M)
IDENTIFIER = re.compile(r"\b(ma_\w+)\b")


def code(text: str) -> str:
    """C text without its comments, string and character literals (a name in a message is not a call)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.S)


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph as a list of nodes (first == last), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph.get(node, ())):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found:
            return found
    return None


def include_graph() -> dict[str, set[str]]:
    """file -> the project files it includes (by name: the build puts csrc and csrc/libma on the include path)."""
    files = {path.name: path for path in CSRC.rglob("*") if path.suffix in (".c", ".h")}
    return {name: {inc for inc in INCLUDE.findall(path.read_text(encoding="utf-8")) if inc in files}
            for name, path in files.items()}


def test_cycle_finder() -> None:
    assert cycle({"a.h": {"b.h"}, "b.h": {"c.h"}, "c.h": set()}) is None
    assert cycle({"a.h": {"b.h"}, "b.h": {"c.h"}, "c.h": {"a.h"}}) == ["a.h", "b.h", "c.h", "a.h"]
    assert cycle({"a.c": {"a.c"}}) == ["a.c", "a.c"]


def test_no_include_circle() -> None:
    graph = include_graph()
    assert {"ma.h", "ma_state.h", "ma_trace.h", "ma_pmpi.h"} <= set(graph)
    assert "ma_state.h" in graph["ma_trace.h"]  # the graph is read
    found = cycle(graph)
    assert found is None, f"include circle: {' -> '.join(found)}"


def definitions() -> dict[str, str]:
    """Every function of libma with external linkage -> the .c file that defines it."""
    defined: dict[str, str] = {}
    for path in sorted(LIBMA.glob("*.c")):
        text = code(path.read_text(encoding="utf-8"))
        for name in [*DEFINITION.findall(text), *(f"ma_{form}" for form in MPI_FORM.findall(text))]:
            assert name not in defined, f"{name} defined in {defined[name]} and {path.name}"
            defined[name] = path.name
    return defined


def call_graph() -> dict[str, set[str]]:
    """.c file -> the other files of libma whose functions it calls (or takes the address of)."""
    defined = definitions()
    graph: dict[str, set[str]] = {}
    for path in sorted(LIBMA.glob("*.c")):
        used = set(IDENTIFIER.findall(code(path.read_text(encoding="utf-8"))))
        graph[path.name] = {defined[name] for name in used if name in defined} - {path.name}
    return graph


def test_no_call_circle_between_the_c_runtime_files() -> None:
    graph = call_graph()
    assert "ma_regions.c" in graph["ma_api.c"] and "ma_trace.c" in graph["ma_merge.c"]  # the graph is read
    found = cycle(graph)
    assert found is None, f"call circle: {' -> '.join(found)}"


# The layers of libma, top first (docs/c-api.md, "The sources of libma"): a file calls its own layer or lower ones.
LAYERS = (
    ("ma_api.c", "ma_fortran.c"),  # entries
    ("ma_lifecycle.c",),  # life cycle
    ("ma_regions.c", "ma_mpi.c", "ma_peers.c", "ma_variables.c", "ma_vector.c"),  # annotations
    ("ma_scope.c", "ma_sites.c", "ma_tree.c", "ma_anomalies.c"),  # evaluation
    ("ma_trace.c", "ma_merge.c", "ma_npz.c", "ma_json.c"),  # output
    ("ma_config.c", "ma_counters.c", "ma_expr.c", "ma_util.c"),  # base
)


def test_calls_go_down_the_layers() -> None:
    graph = call_graph()
    layer = {name: depth for depth, files in enumerate(LAYERS) for name in files}
    assert set(graph) == set(layer), f"files of libma in no layer: {sorted(set(graph) - set(layer))}"
    upward = [f"{caller} -> {callee}" for caller, callees in sorted(graph.items()) for callee in sorted(callees)
              if layer[callee] < layer[caller]]
    assert not upward, f"calls to a higher layer: {upward}"


def public_api() -> set[str]:
    """The functions ma.h declares (outside its MA_DISABLE branch)."""
    header = (LIBMA / "ma.h").read_text(encoding="utf-8")
    enabled = header[header.index("#else /* !MA_DISABLE */"):header.index("#ifndef MA_NO_SOURCE_LOCATION")]
    return set(re.findall(r"^\s*(?:int|void)\s+(ma_\w+)\s*\(", code(enabled), re.M))


def hidden_declarations() -> set[str]:
    """The functions the headers of libma declare between `#pragma GCC visibility push(hidden)` and its pop."""
    hidden: set[str] = set()
    for header in sorted(LIBMA.glob("*.h")):
        text = code(header.read_text(encoding="utf-8"))
        for section in re.findall(r"#pragma GCC visibility push\(hidden\)(.*?)#pragma GCC visibility pop", text, re.S):
            hidden |= set(re.findall(r"\b(ma_\w+)\s*\(", section))
    return hidden


def test_the_public_api_is_ma_api_c_and_nothing_else_is_exported() -> None:
    # Every entry of ma.h in one file (each opens the SDK fence), the Fortran bindings in another, and every other
    # function of libma static or declared under `#pragma GCC visibility push(hidden)`.
    api = public_api()
    assert {"ma_init", "ma_start_at", "ma_end_at", "ma_loop_next_at", "ma_mpi_at", "ma_evaluate",
            "ma_mpi_barrier"} <= api
    defined = definitions()
    exported = {name: file for name, file in defined.items() if name not in hidden_declarations()}
    assert {name for name, file in exported.items() if file == "ma_api.c"} == api
    fortran = {name for name, file in exported.items() if file == "ma_fortran.c"}
    assert "ma_fortran_start" in fortran and all(name.startswith("ma_fortran_") for name in fortran)
    assert set(exported.values()) == {"ma_api.c", "ma_fortran.c"}, exported
    for header in sorted(LIBMA.glob("*.h")):
        if header.name in ("ma.h", "ma_trace_format.h"):
            continue
        text = header.read_text(encoding="utf-8")
        assert "#pragma GCC visibility push(hidden)" in text and "#pragma GCC visibility pop" in text, header.name


def function_body(text: str, start: int) -> str:
    """The text after a function's opening brace at text[start - 1], up to its matching closing brace."""
    depth = 1
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    raise AssertionError("unbalanced braces")


def test_every_entry_opens_the_sdk_fence() -> None:
    # The maflops tool leaves the runtime's own work out of the program's counts only between the fence's requests:
    # every exported entry that does work, and the hooks libmapmpi and atexit call, open it first (the paper's
    # short names and the Fortran bindings reach a fenced *_at entry; ma_evaluate touches no runtime state).
    unfenced_by_design = {"ma_evaluate"}
    for path in sorted(LIBMA.glob("*.c")):
        text = code(path.read_text(encoding="utf-8"))
        for match in re.finditer(r"^(?:static\s+)?void\s+(\w+)\s*\([^;{]*?\)\s*\{", text, re.M):
            name = match.group(1)
            body = function_body(text, match.end())
            is_entry = (path.name == "ma_api.c" and name.endswith("_at")) or name in (
                "ma_init", "ma_finalize", "ma_flush", "ma_set_tracing", "ma_unset_tracing", "ma_api_end",
                "watch_hook", "on_exit_handler", "on_mpi_init", "on_mpi_finalize")
            if is_entry and name not in unfenced_by_design and name != "ma_end_at":
                assert body.lstrip().startswith("MA_FENCE_THIS_CALL();"), f"{path.name}: {name} opens no fence"
