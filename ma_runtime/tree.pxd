# Cython declarations for tree.py (compiled when Cython is available; see setup.py).
cdef class Stats:
    cdef public long long n
    cdef public object min, max, sum

cdef class Node:
    cdef public Node parent
    cdef public object id, type, path, expr_text, expression, count_text, count_expression, file, line
    cdef public dict children
    cdef public long long calls, p_n, m_n, passed, failed, unmeasured, mismatch, wall_ns, cpu_ns, cache_version
    cdef public object p_min, p_max, p_sum, m_min, m_max, m_sum
    cdef public object first_mismatch, first_fail, count_predicted, count_measured, cache_value, cache_count
    cdef public bint track_cpu
    cdef public double tolerance
