# Cython declarations for tree.py (compiled when Cython is available; see setup.py).
cdef class Stats:
    cdef public long long n, run
    cdef public object min, max, total, last
    cpdef bint add(self, object x)
    cpdef repeat(self, long long k)

cdef class Node:
    # The fields every call reads or writes come first, so that a call touches a few cache lines of the
    # node (Cython lays the fields out in this order): a rank that shares its core loses its cache often.
    cdef public dict children
    cdef public object owner, expr_text, count_raw, expression, cache_value, cache_count, reader, region
    cdef public long long cache_version, calls, wall_ns, pending, last_a, last_b, passed, failed, unmeasured
    cdef public object last_predicted, last_count
    cdef public Node parent
    cdef public int verdict, last_kind
    cdef public bint track_cpu, uses_iter
    cdef public Py_ssize_t group
    # MPI sites: the PMPI library's totals (a uint64 memoryview) and its buffer, read at every call
    cdef public object counters
    cdef const unsigned long long *totals
    # MPI sites with partner assertions: the peer expression whose MA_PEER_CHECKS checks are done
    cdef public object peers_done
    # The rest: read when a call differs from the previous one, or when the trace is written.
    cdef public object id, type, path, count_text, count_expression, file, line
    cdef public long long mismatch, cpu_ns
    cdef public Stats predicted, measured, count_predicted, count_measured
    cdef public object first_mismatch, first_fail
    cdef public double tolerance
    cpdef fold(self)
    cpdef record_input(self, object value)
    cpdef record(self, object predicted, object measured)
    cpdef record_count(self, object predicted, long long counted)
    cpdef record_mpi(self, object size, object count, bint measured, long long calls, long long nbytes)
    cpdef note_value(self, object given, object evaluated)
    cpdef bint judge(self, bint agrees)
    cpdef bint repeat_verdict(self)

cpdef bint close_enough(object predicted, object measured, double tolerance)
cpdef bint values_differ(object given, object evaluated)
