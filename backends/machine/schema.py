"""JSON Schema (draft 2020-12) of a machine profile, version 2. ``docs/machine-profile.md`` explains the fields.

Version 2 added the MPI a network block was measured with (``network.mpi``) and one block per further MPI
(``networks``); a version-1 document (neither) is read as it is and written back as version 2."""

from __future__ import annotations

from typing import Any

from ..cpython import section as cpython_section
from . import multicore

SCHEMA_NAME = "ma-machine-profile"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_POSITIVE_INT = {"type": "integer", "minimum": 1}
_FRACTION = {"type": "number", "minimum": 0, "maximum": 1}
_NUMBERS = {"type": "array", "items": {"type": "number"}}
_MPI_NAME = {"type": "string", "pattern": "^[a-z]+-[0-9A-Za-z._+-]+$"}
_CSR_ROWS = {"type": "object", "required": ["entries_per_row", "seconds_per_entry"],
             "properties": {"entries_per_row": {"type": "array", "items": _POSITIVE},
                            "seconds_per_entry": {"type": "array", "items": _POSITIVE}}}


def _rows(required: list[str], **properties: Any) -> dict[str, Any]:
    """An array of measurement rows: objects with these properties, the ``required`` ones present."""
    return {"type": "array", "items": {"type": "object", "required": required, "properties": properties}}


PROFILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Modeling Assertions machine profile",
    "type": "object",
    "required": ["schema", "version", "name", "host", "caches", "cpu", "memory", "multimaps"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_NAME},
        "version": {"enum": list(READABLE_VERSIONS)},
        "name": {"type": "string", "minLength": 1},
        "host": {
            "type": "object",
            "required": ["hostname", "cpu_model", "cpus", "measured_at"],
            "properties": {
                "hostname": {"type": "string"},
                "cpu_model": {"type": "string"},
                "cpus": _POSITIVE_INT,
                "kernel": {"type": "string"},
                "measured_at": {"type": "string"},
                "pinned_cpu": {"type": ["integer", "null"]},
                "quick": {"type": "boolean"},
                "probe_seconds": {"type": "number", "minimum": 0},
                "estimate_s": {"type": "number", "minimum": 0},  # the plan's (plan.py)
                "phase_seconds": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}},
                "notes": {"type": "string"},
            },
        },
        "caches": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["level", "size_bytes", "ways", "line_bytes"],
                "additionalProperties": False,
                "properties": {
                    "level": _POSITIVE_INT,
                    "size_bytes": _POSITIVE_INT,
                    "ways": _POSITIVE_INT,
                    "line_bytes": _POSITIVE_INT,
                    "source": {"type": "string"},
                    "replacement": {"enum": ["LRU", "RR", "FIFO", "MRU"]},
                    "prefetch": {"enum": ["none", "next_line", "adjacent", "stride"]},
                    "prefetch_degree": _POSITIVE_INT,
                    "prefetch_distance": _POSITIVE_INT,
                    "indexing": {"enum": ["virtual", "physical"]},
                },
            },
        },
        "cpu": {
            "type": "object",
            "required": ["peak_flops"],
            "properties": {
                "peak_flops": _POSITIVE,
                "isa": {"type": "string"},
                "by_isa": {"type": "object", "additionalProperties": _POSITIVE},
                "clock_hz": _POSITIVE,
                # SciPy's CSR product in cache by entries per row (backends/machine/csrrows.py)
                "csr_rows": _CSR_ROWS,
                # a compiled dot product's add chain on L1 data, seconds per term (backends/machine/chains.py)
                "add_chain_s": _POSITIVE,
                # profiles written before the cpython section kept its figures here (backends/cpython/section.py)
                "call_overhead_s": _POSITIVE,
                "python_flops": _POSITIVE,
                "annotation_s": cpython_section.ANNOTATION_SCHEMA,
                "python_probe": {
                    "type": "object",
                    "required": ["version"],
                    "properties": {
                        "version": {"const": 1},
                        **cpython_section.PROBE_SCHEMA["properties"],
                        "csr_rows": _CSR_ROWS,
                        "subscripts": cpython_section.SUBSCRIPTS_SCHEMA,
                    },
                },
            },
            "dependentRequired": {"call_overhead_s": ["python_flops"], "python_flops": ["call_overhead_s"]},
        },
        "memory": {
            "type": "object",
            "required": ["triad_gbs"],
            "properties": {
                "triad_gbs": _POSITIVE, "triad_bytes": _POSITIVE_INT,
                # the vector stream curve (backends/machine/vectorstreams.py); optional, versioned
                "vector_streams": {
                    "type": "object",
                    "required": ["version", "points"],
                    "properties": {
                        "version": {"const": 1},
                        "isa": {"type": "string"},
                        "points": _rows(["size_bytes", "bandwidth_gbs"], size_bytes=_POSITIVE_INT,
                                        bandwidth_gbs=_POSITIVE),
                    },
                },
                # k cores reading at once (backends/machine/multicore.py); optional, versioned
                "multicore": multicore.SCHEMA,
            },
        },
        "network": {
            "type": ["object", "null"],
            "required": ["latency_s", "bandwidth_bytes_per_s"],
            "properties": {
                "latency_s": _POSITIVE,
                "bandwidth_bytes_per_s": _POSITIVE,
                "ranks": _POSITIVE_INT,
                "launcher": {"type": "string"},
                # version 2: the MPI the block was measured with, named as ma_tools.mpis names it ("mpich-4.0.2")
                "mpi": _MPI_NAME,
                "pingpong": _rows(["bytes", "seconds"], bytes={"type": "integer", "minimum": 0}, seconds=_POSITIVE),
                # the exchange on more ranks than cores (probe.measure_oversubscribed); optional, versioned
                "oversubscribed": {
                    "type": ["object", "null"],
                    "required": ["version", "ranks", "cores", "latency_s", "bandwidth_bytes_per_s"],
                    "properties": {
                        "version": {"enum": [1, 2]},
                        "pattern": {"enum": ["exchange"]},
                        "ranks": _POSITIVE_INT,
                        "cores": _POSITIVE_INT,
                        "latency_s": _POSITIVE,
                        "bandwidth_bytes_per_s": _POSITIVE,
                        "batch_s": _POSITIVE,
                        "pingpong": {"$ref": "#/properties/network/properties/pingpong"},
                        # version 2: wall seconds per message with work_s of work before each (measure_work_curve)
                        "work": _rows(["work_s", "seconds"], passes={"type": "integer", "minimum": 0},
                                      work_s={"type": "number", "minimum": 0}, seconds=_POSITIVE),
                    },
                },
                # the exchange with work on one rank per core (probe.measure_synchronised); optional, versioned
                "synchronised": {
                    "type": ["object", "null"],
                    "required": ["version", "cores", "curves"],
                    "properties": {
                        "version": {"enum": [1]},
                        "pattern": {"enum": ["exchange"]},
                        "cores": _POSITIVE_INT,
                        "batch_s": _POSITIVE,
                        "curves": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["ranks", "work"],
                                "additionalProperties": False,
                                "properties": {
                                    "ranks": {"type": "integer", "minimum": 2},
                                    "stream_mib": _POSITIVE_INT,
                                    # wall seconds per message with work_s of work (every rank at once) before each
                                    "work": {**_rows(["work_s", "seconds"], passes={"type": "integer", "minimum": 0},
                                                     work_s={"type": "number", "minimum": 0}, seconds=_POSITIVE),
                                             "minItems": 2},
                                },
                            },
                        },
                    },
                },
                # profiles written before the cpython section kept its exchange here (backends/cpython/section.py)
                "python_exchange": cpython_section.EXCHANGE_SCHEMA,
            },
        },
        # version 2: the network block of every further MPI, by its name (the block's own "mpi", where given, the same)
        "networks": {
            "type": "object",
            "propertyNames": _MPI_NAME,
            "additionalProperties": {"$ref": "#/properties/network", "type": "object"},
        },
        "multimaps": {
            "type": "object",
            "required": ["word_bytes", "points"],
            "properties": {
                "word_bytes": _POSITIVE_INT,
                "min_time_s": _POSITIVE,
                "samples": _POSITIVE_INT,
                "statistic": {"enum": ["median", "best"]},
                "unreached_levels": {"type": "array", "items": {"enum": ["memory"]}},
                "points": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["pattern", "size_bytes", "bandwidth_gbs"],
                        "additionalProperties": False,
                        "properties": {
                            "pattern": {"enum": ["stride", "random"]},
                            "stride": _POSITIVE_INT,
                            "size_bytes": _POSITIVE_INT,
                            "bandwidth_gbs": _POSITIVE,
                            "samples_gbs": _NUMBERS,
                            "hit_rates": {"type": ["array", "null"], "items": _FRACTION},
                        },
                    },
                },
            },
        },
        "bandwidth_fit": {
            "type": ["object", "null"],
            "required": ["latencies", "plateaus_gbs", "penalty_f", "penalty_x"],
            "properties": {
                "model": {"type": "string"},
                "latencies": {"type": "array", "minItems": 1, "items": _POSITIVE},
                "plateaus_gbs": {"type": "array", "minItems": 1, "items": _POSITIVE},
                "penalty_f": _NUMBERS,
                "penalty_x": {"type": "array", "items": _POSITIVE},
                "avg_abs_rel_error": {"type": ["number", "null"], "minimum": 0},
                "std_abs_rel_error": {"type": ["number", "null"], "minimum": 0},
                "per_curve": {"type": "object"},
                "ga": {"type": "object"},
                # levels no fitted point constrains (levels.py); absent in older profiles: derived on reading
                "unconstrained_levels": {"type": "array", "items": {"type": "string"}},
            },
        },
        # what the CPython interpreter costs (backends/cpython/section.py); optional, versioned
        cpython_section.SECTION: cpython_section.SCHEMA,
    },
}
