# Cython declarations for annotations.py (compiled when Cython is available; see setup.py).
cimport cython
from ma_runtime.tree cimport Node
from ma_runtime.threadstate cimport ThreadState

# C-only names used by annotations.py when compiled (see _COMPILED there).
cdef extern from *:
    """
    #include <time.h>
    static CYTHON_INLINE long long ma_monotonic_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    }
    """
    long long ma_monotonic_ns()
cdef extern from "Python.h":
    unsigned long ma_thread_ident "PyThread_get_thread_ident" ()
    Py_ssize_t ma_length_hint "PyObject_LengthHint" (object o, Py_ssize_t default) except -1

cdef bint _COMPILED
cdef unsigned long _MAIN_THREAD
cdef ThreadState _main_state

cpdef ThreadState current_state()
cdef inline object predicted(Node node)

cdef class Region:
    cdef public object id, expr, value, count, undo, outer
    cdef public Node node
    cdef public ThreadState state
    cdef public long long t0, c0
    cpdef close(self, object exc_type, long long t1)
    cpdef finish(self, object exc_type, long long t1, long long c1, bint unbalanced=*)
    cpdef start(self, Node node)
    cpdef stop(self, Node node)
    cpdef complete(self, Node node)
    cpdef discard(self, Node node)

cdef class _Counting:
    cdef public loop loop
    cdef public object items

# The kinds keep free lists: an annotation object is made and dropped at every call.
@cython.freelist(8)
cdef class loop(Region):
    cdef public long long n, length
    cdef public object items

@cython.freelist(8)
cdef class subroutine(Region):
    pass

cdef class CounterRegion(Region):
    cdef public object reader, m0

@cython.freelist(8)
cdef class flop(CounterRegion):
    pass

@cython.freelist(8)
cdef class loadstore(CounterRegion):
    pass

@cython.freelist(8)
cdef class heap_memory(CounterRegion):
    pass

@cython.freelist(8)
cdef class stack_memory(CounterRegion):
    pass

cdef class MpiRegion(Region):
    cdef public bint measured
    cdef public long long calls0, bytes0

@cython.freelist(8)
cdef class mpi_send(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_isend(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_recv(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_irecv(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_sendrecv(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_bcast(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_reduce(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_allreduce(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_gather(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_scatter(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_allgather(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_alltoall(MpiRegion):
    pass

@cython.freelist(8)
cdef class mpi_barrier(MpiRegion):
    pass
