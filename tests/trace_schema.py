"""Schema check of a trace file against docs/trace-format.md, shared by the Python and C runtime tests."""

from __future__ import annotations

from typing import Any

from ma_core import trace_format as tf

MPI_TYPES = set(tf.MPI_TYPES)
NODE_TYPES = set(tf.NODE_TYPES)


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_stats(stats: Any, where: str) -> None:
    if stats is None:
        return
    assert set(stats) == set(tf.STATS_KEYS), where
    assert isinstance(stats["n"], int) and stats["n"] > 0, where
    assert all(is_number(stats[k]) for k in ("min", "max", "sum")), where
    assert stats["min"] <= stats["max"], where


def check_node(node: dict[str, Any], parent_path: str | None) -> None:
    where = f"node {node.get('path')!r}"
    keys = set(tf.NODE_KEYS)
    if node["type"] in MPI_TYPES:
        keys |= set(tf.NODE_MPI_KEYS)
    optional = {k.name for k in tf.NODE_LAYOUT if k.presence == tf.MEASURED}  # the measured signature
    assert keys <= set(node) <= keys | optional, f"{where}: keys {sorted((set(node) - optional) ^ keys)}"
    assert node["type"] in NODE_TYPES, where
    if parent_path is None:
        assert (node["id"], node["type"], node["path"]) == ("", "root", "")
    else:
        expected = f"{parent_path}/{node['id']}" if parent_path else node["id"]
        assert node["path"] == expected, where
    assert node["expr"] is None or isinstance(node["expr"], str), where
    assert node["file"] is None or isinstance(node["file"], str), where
    assert node["line"] is None or isinstance(node["line"], int), where
    for key in tf.NODE_COUNTS:
        assert isinstance(node[key], int) and node[key] >= 0, f"{where}: {key}"
    check_stats(node["predicted"], where)
    check_stats(node["measured"], where)
    if node["first_mismatch"] is not None:
        assert set(node["first_mismatch"]) == {"given", "evaluated"}, where
    if node["first_fail"] is not None:
        assert {"call", "predicted", "measured"} <= set(node["first_fail"]), where
    if node["type"] in MPI_TYPES:
        assert isinstance(node["count_expr"], str), where
        assert set(node["count"]) == {"predicted", "measured"}, where
        check_stats(node["count"]["predicted"], where)
        check_stats(node["count"]["measured"], where)
    seen = set()
    for child in node["children"]:
        assert (child["type"], child["id"]) not in seen, f"{where}: two children {child['type']} {child['id']}"
        seen.add((child["type"], child["id"]))
        check_node(child, node["path"])


def check_trace_schema(trace: dict[str, Any]) -> None:
    assert trace["format"] == tf.FORMAT and trace["version"] == tf.VERSION
    assert set(tf.DOCUMENT_KEYS) <= set(trace) <= {*tf.DOCUMENT_KEYS, *tf.OPTIONAL_DOCUMENT_KEYS}
    for check in trace.get(tf.PEERS_KEY, []):
        assert set(check) == set(tf.PEER_KEYS) and check["type"] in tf.MPI_TYPES
        assert check["first_fail"] is None or set(check["first_fail"]) == {"call", "rank", "expected", "actual"}
    header = trace["header"]
    assert set(header) == set(tf.HEADER_KEYS)
    assert header["status"] in tf.STATUSES
    assert header["language"] in ("python", "c")
    assert isinstance(header["producer"], str)
    assert isinstance(header["rank"], int) and isinstance(header["size"], int) and 0 <= header["rank"] < header["size"]
    assert isinstance(header["host"], str) and isinstance(header["pid"], int)
    assert header["run_id"] is None or isinstance(header["run_id"], str)
    assert isinstance(header["command"], list) and all(isinstance(a, str) for a in header["command"])
    assert isinstance(header["start_time"], float)
    assert header["end_time"] is None or isinstance(header["end_time"], float)
    assert header["exit_reason"] is None or isinstance(header["exit_reason"], str)
    assert set(header["tolerance"]) == {"default", "by_type"} and isinstance(header["tolerance"]["default"], float)
    assert all(isinstance(v, float) for v in header["tolerance"]["by_type"].values())
    counters = header["counters"]
    assert set(counters) == {"providers", "measures"}
    for provider in counters["providers"]:
        assert set(provider) == {"name", "available", "version", "reason", "events"}
        assert isinstance(provider["available"], bool)
        assert provider["available"] or isinstance(provider["reason"], str)
    assert set(counters["measures"]) == {"flop", "loadstore", "heap_memory", "stack_memory"}
    for measure in counters["measures"].values():
        assert measure is None or set(measure) == {"provider", "source"}
    assert set(header["mpi"]) == {"profiling", "library", "reason"} and isinstance(header["mpi"]["profiling"], bool)
    for variable in trace["variables"]:
        assert set(variable) == {"name", "kind", "expr", "scope", "defs", "value", "min", "max"}
        assert variable["kind"] in ("input", "derived")
        assert (variable["expr"] is None) == (variable["kind"] == "input")
        assert isinstance(variable["scope"], str) and isinstance(variable["defs"], int)
        assert all(is_number(variable[k]) for k in ("value", "min", "max"))
    assert [t["thread"] for t in trace["threads"]] == list(range(len(trace["threads"])))
    for thread in trace["threads"]:
        assert set(thread) == {"thread", "name", "root"} and isinstance(thread["name"], str)
        check_node(thread["root"], None)
    for anomaly in trace["anomalies"]:
        assert set(anomaly) == {"kind", "path", "message", "count", "file", "line"}
        assert isinstance(anomaly["message"], str) and anomaly["count"] >= 1
    profile = trace["mpi_profile"]
    if profile is not None:
        assert set(profile) == {"calls"}
        for name, entry in profile["calls"].items():
            assert name.startswith("MPI_") and not name.endswith("_c"), name
            assert set(entry) == {"calls", "bytes", "time_ns", "hist", "peers"}
            assert sum(bucket[2] for bucket in entry["hist"]) in (0, entry["calls"])
            for lo, hi, _count in entry["hist"]:
                assert (lo, hi) == (0, 0) or (hi == 2 * lo - 1 and lo & (lo - 1) == 0)
            for peer, (calls, nbytes) in entry["peers"].items():
                assert int(peer) >= 0 and calls >= 1 and nbytes >= 0
