# Cython declarations for annotations.py (compiled when Cython is available; see setup.py).
from ma_runtime.tree cimport Node
from ma_runtime.threadstate cimport ThreadState

cdef class Region:
    cdef public object id, expr, value, undo, pred
    cdef public Node node
    cdef public ThreadState state
    cdef public long long t0, c0

cdef class loop(Region):
    cdef public object n

cdef class subroutine(Region):
    pass

cdef class CounterRegion(Region):
    cdef public object reader, m0

cdef class flop(CounterRegion):
    pass

cdef class loadstore(CounterRegion):
    pass

cdef class heap_memory(CounterRegion):
    pass

cdef class stack_memory(CounterRegion):
    pass

cdef class MpiRegion(Region):
    cdef public object TYPE, count, reader, calls0, bytes0, pcount
