"""The ``ccalls`` provider: calls from the program's Python code into compiled code, per site
(``ma run --counters ccalls``).

What a Python port spends between its kernels is mostly the interpreter's cost per dispatch into NumPy, SciPy
or mpi4py, whatever the data size. ``sys.setprofile``'s ``c_call`` events alone do not see most of those with
NumPy 2 on Python 3.11: a ufunc (``np.multiply(a, b, out=c)``), an array-function dispatcher (``np.dot``,
``np.einsum``) and an operator (``a @ b``, ``a + b``) are not builtin functions, so CPython emits no event for
them. So this provider counts at the instructions of the program's own code (files outside the SDK, the
standard library and installed packages): each ``CALL``, ``CALL_FUNCTION_EX`` and ``BINARY_OP`` instruction it
executes adds one to the innermost open annotation of the thread (``sys.settrace`` opcode events, turned on
only in the program's own frames), and ``sys.setprofile`` takes back the calls that do not go into compiled
or library code: calls of the SDK (annotation objects, their ``__exit__``) and calls of the program's own
Python functions (their work is counted where it happens). A site's ``c_calls`` in the trace is its count plus
its descendants' (inclusive, as the other counters).

What it counts, then: calls of NumPy/SciPy/mpi4py functions, methods, ufuncs and types, calls of builtins
(``len``, ``float``), and binary operators, as written in the program. A binary operator on Python scalars
(``rho / d``) counts as one too, though it costs far less than a NumPy call; subscripts (``v[:n]``) and
attribute loads are not counted as calls; nor is what library code calls in turn.

Subscripts are counted apart, per site (node field ``subscripts``, inclusive like ``c_calls``): each
``BINARY_SUBSCR`` and ``STORE_SUBSCR`` instruction of the program's code (and ``BINARY_SLICE``/``STORE_SLICE`` on
Pythons that have them, 3.12 on, where ``a[i:j]`` compiles to those). On a NumPy array each builds an index and
a view (``lhs[i]``, ``row[:, 3:5]``, ``fac[:, None]``) or copies into one (the store of ``x[a:b] -= y``, whose
``-=`` is a BINARY_OP counted in ``c_calls``): a dispatch into compiled code the call count does not see. A
subscript of a list or dict counts one too, though it costs far less.

It measures no annotation kind (no reader): it adds the node fields ``c_calls`` and ``subscripts``
(ma_runtime/sitecounts.py). It slows the program down (a Python callback per Python call and per instruction
of the program's own code; docs/maps-backend.md gives figures) and takes over ``sys.settrace``/``sys.setprofile``
for the run (no debugger, coverage or cProfile at the same time).
"""

from __future__ import annotations

import dis
import sys
import sysconfig
import threading
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

from ..tree import Node
from .base import CounterProvider, ProviderStatus, Reader

_SDK_MODULES = ("ma", "ma_core", "ma_runtime")
_ROOT = Path(__file__).resolve().parents[2]
_SDK_DIRS = tuple(f"{_ROOT / name}/" for name in _SDK_MODULES)
_LIBRARY_DIRS = tuple(f"{Path(p).resolve()}/" for p in {sysconfig.get_paths()[key] for key in
                                                         ("stdlib", "platstdlib", "purelib", "platlib")})
_COUNTED = frozenset(dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX", "BINARY_OP"))
_CALLS = frozenset(dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX"))
# the subscript instructions of this Python (BINARY_SLICE and STORE_SLICE exist from 3.12 on)
SUBSCRIPT_OPCODES = tuple(name for name in ("BINARY_SUBSCR", "STORE_SUBSCR", "BINARY_SLICE", "STORE_SLICE")
                          if name in dis.opmap)
_SUBSCRIPTS = frozenset(dis.opmap[name] for name in SUBSCRIPT_OPCODES)
_CACHE = dis.opmap["CACHE"]
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR: resumed without a call


def _sdk_callable(function: Any) -> bool:
    """A builtin of the SDK (the compiled annotation factories, a region's methods)."""
    owner = getattr(function, "__self__", None)
    module = getattr(function, "__module__", None)
    if module is None:
        module = owner.__name__ if isinstance(owner, ModuleType) else type(owner).__module__
    if isinstance(owner, tuple) and owner and isinstance(owner[0], type):  # fast_region's factories
        module = owner[0].__module__
    return isinstance(module, str) and module.split(".", 1)[0] in _SDK_MODULES


def _instruction(frame: FrameType) -> int:
    """The opcode ``frame`` is executing. A call of a Python function leaves the caller's ``f_lasti`` on the
    last inline cache entry of its CALL (CPython 3.11): step back over those."""
    code, index = frame.f_code.co_code, frame.f_lasti
    while code[index] == _CACHE and index > 0:
        index -= 2
    return code[index]


class CCallsProvider(CounterProvider):
    name = "ccalls"

    def __init__(self) -> None:
        self.own: dict[Node, int] = {}  # node -> dispatches counted while it was the innermost open site
        self.own_subscripts: dict[Node, int] = {}  # node -> subscripts counted while it was the innermost open site
        self._kinds: dict[CodeType, int] = {}  # code -> 0 library/stdlib, 1 the program's, 2 the SDK's
        self._trace, self._local, self._profile = self._make_functions()
        sys.settrace(self._trace)
        threading.settrace(self._trace)
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)
        frame = sys._getframe(1)
        while frame is not None:  # frames already running (the one whose first annotation started the runtime)
            if self._kind(frame.f_code) == 1:
                frame.f_trace, frame.f_trace_lines, frame.f_trace_opcodes = self._local, False, True
            frame = frame.f_back  # type: ignore[assignment]

    def _kind(self, code: CodeType) -> int:
        kind = self._kinds.get(code)
        if kind is None:
            name = code.co_filename
            kind = 2 if name.startswith(_SDK_DIRS) else 0 if name.startswith(_LIBRARY_DIRS) or name.startswith("<") \
                else 1
            self._kinds[code] = kind
        return kind

    def _make_functions(self) -> tuple[Any, Any, Any]:
        from ..mars import _local as thread_local

        own, subscripts, kind_of, counted, calls = self.own, self.own_subscripts, self._kind, _COUNTED, _CALLS
        subscript_ops = _SUBSCRIPTS

        def count(delta: int, into: dict[Node, int] = own) -> None:
            state = getattr(thread_local, "state", None)
            if state is not None:
                node = state.current
                into[node] = into.get(node, 0) + delta

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                opcode = frame.f_code.co_code[frame.f_lasti]
                if opcode in counted:
                    count(1)
                elif opcode in subscript_ops:
                    count(1, subscripts)
            return local

        def trace(frame: FrameType, event: str, arg: Any) -> Any:
            if kind_of(frame.f_code) != 1:
                return None
            frame.f_trace_lines = False
            frame.f_trace_opcodes = True
            return local

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if event == "c_call":  # ``frame`` is the caller
                if kind_of(frame.f_code) == 1 and _sdk_callable(arg):
                    count(-1)
            elif event == "call":  # ``frame`` is the callee: the SDK's or the program's own Python, called
                caller = frame.f_back
                code = frame.f_code
                if (caller is not None and kind_of(code) and not code.co_flags & _GENERATOR_FLAGS
                        and kind_of(caller.f_code) == 1 and _instruction(caller) in calls):
                    count(-1)

        return trace, local, profile

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, True, version=f"python {sys.version.split()[0]} settrace+setprofile",
                              events={"CALL": "ok", "CALL_FUNCTION_EX": "ok", "BINARY_OP": "ok",
                                      **dict.fromkeys(SUBSCRIPT_OPCODES, "ok")})

    def reader(self, kind: str) -> Reader | None:
        return None

    def source(self, kind: str) -> str:
        return "CALL/BINARY_OP and subscript instructions of the program's code"

    def counts(self) -> dict[Node, int]:
        """Each node's own count so far (a copy)."""
        return self.own.copy()

    def subscript_counts(self) -> dict[Node, int]:
        """Each node's own subscripts so far (a copy)."""
        return self.own_subscripts.copy()

    def close(self) -> None:
        for uninstall in (sys.settrace, threading.settrace, sys.setprofile, threading.setprofile):
            uninstall(None)  # type: ignore[arg-type]
