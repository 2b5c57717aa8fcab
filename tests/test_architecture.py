"""The layer rules of the project: which package may import which, no import cycle, and analysis that never
starts the runtime.

The rules are read from the source of every module (no import is executed), except the last group, which
imports the analysis side in a fresh interpreter and looks at what that did. Every package directory is
scanned, so new modules and packages are checked without editing this file.

The packages, and the one direction each pair may import in (``ALLOWED``):

    ma_core     the leaf: errors, expression language, trace format names, launchers' rank variables
    ma_runtime  MARS, inside the annotated program                    -> ma_core
    ma          the annotation API, the program's front door          -> ma_core, ma_runtime
    ma_tools    ``ma run``'s launcher and the build of the C parts    -> ma_core, ma_runtime
    ma_post     analysis of traces on disk                            -> ma_core
    backends    machine models plugged into the analysis              -> ma_core, ma_post, ma_tools
    ma_cli      the ``ma`` command                                    -> ma_core, ma_post, backends, ma_tools

``ma`` binds each annotation to the runtime that implements it on first use, so it stands above ``ma_runtime``
(which imports only ``ma_core``); that is an edge of the table, not an exemption. The application (``ma``,
``ma_runtime``) never imports analysis, and ``ma_post`` needs neither the runtime nor the tools.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ALLOWED: dict[str, set[str]] = {
    "ma_core": set(),
    "ma_runtime": {"ma_core"},
    "ma": {"ma_core", "ma_runtime"},
    "ma_tools": {"ma_core", "ma_runtime"},
    "ma_post": {"ma_core"},
    "backends": {"ma_core", "ma_post", "ma_tools"},
    "ma_cli": {"ma_core", "ma_post", "backends", "ma_tools"},
}
PACKAGES = tuple(ALLOWED)
APPLICATION = ("ma_core", "ma", "ma_runtime")
ANALYSIS = ("ma_post", "backends", "ma_cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in PACKAGES:
        for path in sorted((REPO / top).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the module, resolved to a module of the tree where it is one
    (``from pkg.mod import name`` -> pkg.mod; ``from pkg import mod`` -> pkg.mod). Imports inside functions and
    under ``if TYPE_CHECKING`` count too: a cycle of types is a cycle of meaning."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES]
            yield from ((module, node.lineno) for module in submodules)
            if len(submodules) < len(node.names):  # names defined in the package or module itself
                yield target, node.lineno


def package_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in ALLOWED else None


def in_tree(module: str) -> str | None:
    """The module of the tree that an import of ``module`` runs (``pkg.mod.name`` -> ``pkg.mod``)."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def test_every_package_is_scanned() -> None:
    assert {package_of(m) for m in MODULES} == set(PACKAGES)
    assert {"ma_core.trace_format", "ma_post.traceset", "ma_tools.launch", "ma_runtime.built"} <= set(MODULES)


def test_every_import_between_packages_follows_the_table() -> None:
    wrong = []
    for name, path in MODULES.items():
        own = package_of(name)
        assert own is not None
        for target, line in imports(name, path):
            other = package_of(target)
            if other is not None and other != own and other not in ALLOWED[own]:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {name} imports {target} ({own} may import "
                             f"{', '.join(sorted(ALLOWED[own])) or 'no other package'})")
    assert not wrong, "\n".join(wrong)


def test_the_table_allows_only_edges_that_are_used_and_is_one_way() -> None:
    used = {(package_of(name), package_of(target)) for name, path in MODULES.items()
            for target, _ in imports(name, path) if package_of(target) not in (None, package_of(name))}
    allowed = {(own, other) for own, others in ALLOWED.items() for other in others}
    assert allowed - used == set(), "edges the table allows but nothing uses: drop them from ALLOWED"
    assert find_cycle({own: set(others) for own, others in ALLOWED.items()}) is None


def test_the_application_never_imports_analysis_nor_analysis_the_application() -> None:
    for own in (*APPLICATION, "ma_post"):
        assert not ALLOWED[own] & {*ANALYSIS, "ma_tools"}, own
    for own in ANALYSIS:
        assert not ALLOWED[own] & {"ma", "ma_runtime"}, own


def module_graph() -> dict[str, set[str]]:
    """Every module of every package -> the modules of the tree it imports. A package's ``__init__`` is the
    target of an import that names it (``from ma_post import TraceSet``), not of an import of a submodule."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = {in_tree(target) for target, _ in imports(name, path)}
        graph[name] = {t for t in targets if t is not None and t != name}
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


def backend_packages() -> dict[str, str]:
    """The module (a package, or a single module) each backend the project registers lives in, by its name: the
    entry points of group ``ma.backends`` in pyproject.toml."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {name: value.partition(":")[0] for name, value in project["entry-points"]["ma.backends"].items()}


BACKENDS = backend_packages()


def owner(module: str) -> str | None:
    """The backend whose package ``module`` is in, or None (the backends' shared modules, any other layer)."""
    return next((name for name, package in BACKENDS.items() if module == package or
                 module.startswith(package + ".")), None)


def test_no_backend_imports_another_and_nothing_else_imports_a_backends_internals() -> None:
    """A backend is a plug-in: its package imports the shared parts of ``backends`` (base, machine, cpython,
    signature, ...), never another backend's; the shared parts and the CLI import none (the CLI knows a backend
    through ``backends.registry`` and the ``Prediction`` base only)."""
    assert {"maps", "vector", "peak"} <= set(BACKENDS) and all(p.startswith("backends.") for p in BACKENDS.values())
    wrong = []
    for name, path in MODULES.items():
        if package_of(name) not in ("backends", "ma_cli"):
            continue
        mine = owner(name)
        for target, line in imports(name, path):
            theirs = owner(target)
            if theirs is not None and theirs != mine:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {name} imports {target} (backend {theirs!r})")
    assert not wrong, "\n".join(wrong)


def test_the_backend_rule_sees_a_violation() -> None:
    assert owner("backends.maps.network") == "maps" and owner("backends.vector") == "vector"
    assert owner("backends.machine.profile") is None and owner("backends.peak") == "peak"
    assert owner("backends.mapsx") is None  # a package whose name begins like a backend's is not it


def test_no_import_cycle_in_the_whole_module_graph() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, " -> ".join(cycle or ())


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_import_resolution_finds_submodules_and_packages() -> None:
    found = dict(imports("ma_cli.commands.run", MODULES["ma_cli.commands.run"]))
    assert "ma_tools.launch" in found and "ma_tools" not in found  # ``from ma_tools import launch``
    assert in_tree("ma_core.trace_format.RUNNING") == "ma_core.trace_format"


def test_import_ma_stays_light() -> None:
    code = ("import sys, ma, ma_core.trace_format; heavy = [m for m in ('sympy', 'numpy', 'jinja2', 'matplotlib', "
            "'scipy', 'mpi4py.MPI', 'ma_post', 'ma_tools') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == ""


def test_every_application_module_imports_first_in_a_fresh_interpreter() -> None:
    # whichever module of the application a tool or test imports first, its imports must find theirs complete
    failed = {}
    for name in (n for n in MODULES if package_of(n) in APPLICATION and "__main__" not in n):
        done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, cwd=REPO,
                              timeout=120)
        if done.returncode:
            failed[name] = done.stderr.strip().splitlines()[-1:]
    assert not failed, failed


# --- analysis never starts the runtime --------------------------------------------------------------------------

# Run in a fresh interpreter: an audit hook sees every process started and every library ctypes opens, from the
# first import on; then every module of ma_post and backends is imported, ma_cli builds its whole parser, and
# the analysis commands named on the command line run on the trace directory.
_FRESH = textwrap.dedent("""
    import atexit, importlib, json, pkgutil, sys

    started, opened, at_exit = [], [], []
    def audit(event, args):
        if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.system", "os.fork"):
            started.append(f"{event}: {args[0] if args else ''}")
        elif event == "ctypes.dlopen" and args[0] is not None:  # None: ctypes's own handle on the process
            opened.append(str(args[0]))
    sys.addaudithook(audit)
    register = atexit.register
    def recording(function, *args, **kwargs):
        at_exit.append(f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', function)}")
        return register(function, *args, **kwargs)
    atexit.register = recording
    first_hook = sys.excepthook

    for top in ("ma_post", "backends"):
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    import ma_cli.main
    ma_cli.main.build_parser()
    commands = json.loads(sys.argv[1])
    statuses = []
    for argv in commands:
        try:
            statuses.append(ma_cli.main.main(argv))
        except SystemExit as stop:
            statuses.append(stop.code)
    sdk = ("ma", "ma_runtime", "mpi4py")
    with open("/proc/self/maps") as maps:
        libraries = sorted({line.split()[-1] for line in maps if ".so" in line})
    print(json.dumps({
        "modules": sorted(m for m in sys.modules if m.split(".")[0] in sdk),
        "excepthook_replaced": sys.excepthook is not first_hook,
        "at_exit": [name for name in at_exit if name.split(".")[0] in (*sdk, "ma_tools", "ma_post", "backends")],
        "started": started, "opened": opened, "libraries": libraries, "statuses": statuses}))
""")
# what the runtime loads: the PMPI wrappers, the C runtime, an MPI library, the Valgrind client shim
RUNTIME_LIBRARIES = ("libmapmpi", "libma.so", "libmpi", "libmavgclient")


def fresh_analysis(*commands: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _FRESH, json.dumps(commands)], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def assert_nothing_of_the_runtime(seen: dict[str, Any]) -> None:
    assert seen["modules"] == [], "the analysis side loaded modules of the runtime or MPI"
    assert seen["excepthook_replaced"] is False
    assert seen["at_exit"] == []
    assert seen["started"] == [], "the analysis side started a process (a compiler?)"
    assert seen["opened"] == []
    loaded = [path for path in seen["libraries"] if any(name in Path(path).name for name in RUNTIME_LIBRARIES)]
    assert loaded == []


def test_importing_the_analysis_side_starts_nothing_of_the_runtime() -> None:
    assert_nothing_of_the_runtime(fresh_analysis())


def test_analysis_commands_on_traces_start_nothing_of_the_runtime(tmp_path: Path) -> None:
    from post_fixtures import cg_program, write_run

    traces = str(write_run(tmp_path / "traces", cg_program(niter=3), size=2))
    seen = fresh_analysis(["validate", traces], ["model", traces], ["cfg", traces], ["ir", traces])
    assert seen["statuses"] == [0, 0, 0, 0]
    assert_nothing_of_the_runtime(seen)


def test_the_fresh_interpreter_check_sees_the_runtime_start() -> None:
    # the check itself must be able to fail: `import ma` (the program's front door) starts the runtime
    code = _FRESH.replace("import ma_cli.main\n", "import ma_cli.main\nimport ma\n")
    done = subprocess.run([sys.executable, "-c", code, "[]"], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "MA_DISABLE": ""})
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "ma_runtime.bootstrap" in seen["modules"] and seen["excepthook_replaced"] is True
    assert any(name.startswith("ma_runtime.bootstrap") for name in seen["at_exit"])


# --- one exception tree ------------------------------------------------------------------------------------------

def test_every_error_class_is_defined_in_ma_core_errors() -> None:
    elsewhere = []
    for name, path in MODULES.items():
        if name == "ma_core.errors":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            bases = [ast.unparse(base) for base in getattr(node, "bases", ())]
            if isinstance(node, ast.ClassDef) and (node.name.endswith("Error") or any("Error" in b for b in bases)):
                elsewhere.append(f"{path.relative_to(REPO)}:{node.lineno}: class {node.name}")
    assert not elsewhere, "define error classes in ma_core/errors.py (and draw them in its tree):\n" + \
        "\n".join(elsewhere)


def test_the_tree_drawn_in_ma_core_errors_is_the_tree_of_its_classes() -> None:
    from ma_core import errors

    classes = {name: cls for name, cls in vars(errors).items()
               if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == errors.__name__}
    drawn: dict[str, str | None] = {}
    parents: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        words = line.replace("├──", " ").replace("└──", " ").replace("│", " ").split()
        if not words or words[0] not in classes:
            continue
        depth = (len(line) - len(line.lstrip(" │├└─"))) // 4 - 1  # "    MAError" is depth 0
        del parents[depth:]
        drawn[words[0]] = parents[-1] if parents else None
        parents.append(words[0])
    assert set(drawn) == set(classes), "every class drawn once, and only classes of the module"
    actual = {name: (cls.__mro__[1].__name__ if cls is not errors.MAError else None) for name, cls in classes.items()}
    assert drawn == actual
