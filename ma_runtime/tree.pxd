# Cython declarations for tree.py (compiled when Cython is available; see setup.py).
cdef class Stats:
    cdef public long long n, run
    cdef public object min, max, total, last
    cpdef bint add(self, object x)

cdef class Node:
    cdef public Node parent
    cdef public object id, type, path, expr_text, expression, count_raw, count_text, count_expression, reader
    cdef public object file, line, owner
    cdef public dict children
    cdef public long long calls, passed, failed, unmeasured, mismatch, wall_ns, cpu_ns, cache_version
    cdef public Stats predicted, measured, count_predicted, count_measured
    cdef public int verdict
    cdef public object first_mismatch, first_fail, cache_value, cache_count
    cdef public bint track_cpu
    cdef public Py_ssize_t group
    cdef public const unsigned long long[:] counters
    cdef public double tolerance
    cpdef record(self, object predicted, object measured)
    cpdef record_mpi(self, object size, object count, object calls, object nbytes)
    cpdef note_value(self, object given, object evaluated)
    cpdef bint repeat_verdict(self)

cpdef bint close_enough(object predicted, object measured, double tolerance)
cpdef bint values_differ(object given, object evaluated)
