"""The C runtime's copy of the trace format's names: ``ma_runtime/csrc/libma/ma_trace_format.h``, generated from
ma_core/trace_format.py so that the format is spelled once.

    python -m ma_core.trace_format_c      # rewrites the header after a change to trace_format.py

tests/test_node_layout.py fails while the header in the tree differs from what this module generates. Each list is
an X-macro (``#define MA_NODE_KEYS(X) X(MA_NODE_ID, "id", MA_ALWAYS) ...``), from which the C sources build their
enums and name arrays, so a key added here is a key the C writer's ``switch`` must handle (-Wswitch).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from . import trace_format as tf

HEADER_NAME = "ma_trace_format.h"
_PRESENCE = {tf.ALWAYS: "MA_ALWAYS", tf.MPI_ONLY: "MA_MPI_ONLY", tf.MEASURED: "MA_MEASURED"}


def _token(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).upper()


def _x_macro(macro: str, comment: str, entries: Iterable[str]) -> str:
    lines = [f"/* {comment} */", f"#define {macro}(X)"]
    lines += [f"    {entry}" for entry in entries]
    return " \\\n".join(lines[1:]).join([lines[0] + "\n", "\n"])


def _names(macro: str, comment: str, names: Iterable[str]) -> str:
    return _x_macro(macro, comment, (f'X("{name}")' for name in names))


def c_header() -> str:
    """The text of ma_trace_format.h."""
    node_keys = (f'X(MA_NODE_{_token(k.name)}, "{k.name}", {_PRESENCE[k.presence]})' for k in tf.NODE_LAYOUT)
    parts = [
        "/*\n"
        f" * {HEADER_NAME} -- the trace format's names for the C runtime (docs/trace-format.md).\n"
        " *\n"
        " * SPDX-License-Identifier: BSD-3-Clause\n"
        " * Copyright (c) the Modeling Assertions SDK developers.\n"
        " *\n"
        " * Generated from ma_core/trace_format.py by `python -m ma_core.trace_format_c`: do not edit (a test fails\n"
        " * while it differs from what that writes). Lists are X-macros: X(name) or X(ENUM, name, presence).\n"
        " */\n"
        "#ifndef MA_TRACE_FORMAT_H\n"
        "#define MA_TRACE_FORMAT_H\n",
        f'#define MA_TRACE_FORMAT "{tf.FORMAT}"\n'
        f"#define MA_TRACE_VERSION {tf.VERSION}\n"
        f'#define MA_MERGED_FORMAT "{tf.MERGED_FORMAT}"\n'
        f"#define MA_MERGED_VERSION {tf.MERGED_VERSION}\n"
        f'#define MA_MERGED_FILE "{tf.MERGED_FILE}"\n'
        f'#define MA_MERGED_INDEX "{tf.MERGED_INDEX}"\n'
        f"#define MA_CACHE_MAX_LEVELS {tf.CACHE_MAX_LEVELS}\n"
        f"#define MA_MAX_SITE_DEPTH {tf.MAX_SITE_DEPTH}\n"
        f"#define MA_N_VALUE_FIELDS {len(tf.VALUE_FIELDS)}\n",
        "".join(f'#define MA_STATUS_{_token(status)} "{status}"\n' for status in tf.STATUSES),
        _names("MA_STRUCTURE_TYPES", "node types that assert no MPI call", (
            t for t in tf.NODE_TYPES if t not in tf.MPI_TYPES)),
        _names("MA_MPI_TYPES", "the MPI annotation types, in the order of the PMPI library's groups", tf.MPI_TYPES),
        "/* where a node key is present: always, on MPI nodes only, only where a counter measured it */\n"
        "enum ma_presence { MA_ALWAYS, MA_MPI_ONLY, MA_MEASURED };\n",
        _x_macro("MA_NODE_KEYS", "the keys of a site node, in the order written", node_keys),
        _names("MA_STATS_KEYS", "a stats object", tf.STATS_KEYS),
        _names("MA_COUNT_KEYS", "an MPI node's `count` object (each a stats object)", tf.COUNT_KEYS),
        _names("MA_FIRST_MISMATCH_KEYS", "a node's `first_mismatch` object", tf.FIRST_MISMATCH_KEYS),
        _names("MA_FIRST_FAIL_KEYS", "a node's `first_fail` object; an MPI node's adds MA_FIRST_FAIL_MPI_KEYS",
               tf.FIRST_FAIL_KEYS),
        _names("MA_FIRST_FAIL_MPI_KEYS", "the count pair of an MPI node's `first_fail`", tf.FIRST_FAIL_MPI_KEYS),
        _names("MA_CACHE_KEYS", "a node's `cache` object", tf.CACHE_KEYS),
        _names("MA_NODE_ROW_KEYS", "a node's row in a merged trace's structure, after its parent row",
               tf.NODE_ROW_KEYS),
        _names("MA_VALUE_FIELDS", "the value columns of a merged trace, per node", tf.VALUE_FIELDS),
        _names("MA_VARIABLE_FIELDS", "the value columns of a merged trace, per variable", tf.VARIABLE_FIELDS),
        _names("MA_VEC_LOOP_GATHER_KEYS", "a vector loop record's `gathers` objects", tf.VEC_LOOP_GATHER_KEYS),
        "#endif /* MA_TRACE_FORMAT_H */\n",
    ]
    return "\n".join(parts)


def header_path() -> Path:
    return Path(__file__).resolve().parent.parent / "ma_runtime" / "csrc" / "libma" / HEADER_NAME


def main() -> int:
    path = header_path()
    path.write_text(c_header(), encoding="utf-8")
    print(path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
