# Cython declarations for threadstate.py (compiled when Cython is available; see setup.py).
from ma_runtime.tree cimport Node

cdef class ThreadState:
    cdef public object runtime, new_node, name
    cdef public long long index, version, flush_deadline
    cdef public Node root, current
    cdef public object top
    cpdef Node child(self, object type_, object id_, object expr_text, object count=*)
    cdef public dict env
    cdef public bint enabled
