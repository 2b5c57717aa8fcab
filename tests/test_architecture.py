"""The layer rules of the project, read from the source of every module (no import is executed).

Layers, lowest first: ma, ma_runtime (both inside the annotated application), ma_post (analysis), backends,
ma_cli (on top). A module may import its own layer and the ones below, never one above; the application
layer never imports analysis; and no package has an import cycle among its modules. Every package directory
is scanned, so new modules and packages are checked without editing this file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("ma_core", "ma", "ma_runtime", "ma_post", "backends", "ma_cli")
APPLICATION = ("ma_core", "ma", "ma_runtime")
RANK = {name: i for i, name in enumerate(LAYERS)}
# The one arrow up, by design: ``import ma`` is the annotation API's front, and binds each annotation to the
# runtime that implements it on first use (ma/__init__.py). No other module of ``ma`` may import ma_runtime.
FRONT_DOORS = {"ma": {"ma_runtime"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in LAYERS:
        for path in sorted((REPO / top).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, inside ``if TYPE_CHECKING``) for every import in the module, resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    checking: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            checking |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in checking
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, node.lineno, id(node) in checking
            for alias in node.names:  # ``from . import x`` imports the submodule x
                if f"{target}.{alias.name}" in MODULES:
                    yield f"{target}.{alias.name}", node.lineno, id(node) in checking


def layer(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in RANK else None


def test_every_layer_is_scanned() -> None:
    assert {layer(m) for m in MODULES} >= {"ma_core", "ma", "ma_runtime", "ma_post", "ma_cli"}
    assert "ma_core.trace_format" in MODULES and "ma_post.traceset" in MODULES


def test_no_module_imports_a_layer_above_its_own() -> None:
    wrong = []
    for name, path in MODULES.items():
        own = RANK[layer(name)]  # type: ignore[index]
        for target, line, _ in imports(name, path):
            other = layer(target)
            if other is not None and RANK[other] > own and other not in FRONT_DOORS.get(name, ()):
                wrong.append(f"{path.relative_to(REPO)}:{line}: {name} imports {target} ({other} is above)")
    assert not wrong, "\n".join(wrong)


def test_application_layer_never_imports_analysis() -> None:
    wrong = []
    for name, path in MODULES.items():
        if layer(name) not in APPLICATION:
            continue
        for target, line, _ in imports(name, path):
            if layer(target) not in (None, *APPLICATION):
                wrong.append(f"{path.relative_to(REPO)}:{line}: {name} imports {target}")
    assert not wrong, "\n".join(wrong)


def internal_graph(package: str) -> dict[str, set[str]]:
    """Module -> modules of the same top-level package it imports (TYPE_CHECKING imports count too: a
    cycle of types is a cycle of meaning). A package's ``__init__`` is left out as a target: importing a
    submodule runs it, and a package re-exporting its submodules is not a cycle of the submodules."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if layer(name) != package:
            continue
        targets = set()
        for target, _, _ in imports(name, path):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]  # ``from pkg.mod import name`` -> pkg.mod
            if target and target != name and layer(target) == package and MODULES[target].name != "__init__.py":
                targets.add(target)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


@pytest.mark.parametrize("package", LAYERS)
def test_no_import_cycle_within_a_package(package: str) -> None:
    cycle = find_cycle(internal_graph(package))
    assert cycle is None, " -> ".join(cycle or ())


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_import_ma_stays_light() -> None:
    import subprocess
    import sys

    code = ("import sys, ma, ma_core.trace_format; heavy = [m for m in ('sympy', 'numpy', 'jinja2', 'matplotlib', "
            "'scipy', 'mpi4py.MPI', 'ma_post') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == ""


def test_every_application_module_imports_first_in_a_fresh_interpreter() -> None:
    # ``import ma`` starts the runtime, and ma_runtime's modules import ``ma``'s: whichever a tool or test
    # imports first, the round trip must find its modules complete (ma_runtime.pmpi and .bootstrap once did not).
    import subprocess
    import sys

    failed = {}
    for name in (n for n in MODULES if n.split(".")[0] in APPLICATION and "__main__" not in n):
        done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, cwd=REPO,
                              timeout=120)
        if done.returncode:
            failed[name] = done.stderr.strip().splitlines()[-1:]
    assert not failed, failed
