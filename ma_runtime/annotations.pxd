# Cython declarations for annotations.py (compiled when Cython is available; see setup.py).
cimport cython
from ma_runtime.tree cimport Node
from ma_runtime.threadstate cimport ThreadState

# C-only names used by annotations.py when compiled (under ``if cython.compiled:`` there).
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
cdef extern from *:
    """
    /* Whether the caller's reference (a borrowed pointer, no temporary) is the object's only one. */
    static CYTHON_INLINE int ma_sole_reference(void *o) { return Py_REFCNT((PyObject *)o) == 1; }
    """
    bint ma_sole_reference(void *o)
cdef extern from *:
    """
    /* The buffer of the PMPI library's totals (a memoryview of uint64). */
    static CYTHON_INLINE const unsigned long long *ma_view_data(PyObject *view) {
        return (const unsigned long long *)PyMemoryView_GET_BUFFER(view)->buf;
    }
    """
    const unsigned long long *ma_view_data(object view)
# The SDK fence of the Valgrind tool (ma_runtime/csrc/ma_vgcount.h): two client requests with no memory access.
cdef extern from "ma_vgcount.h":
    void MA_VG_SDK_ENTER() nogil
    void MA_VG_SDK_LEAVE() nogil
cdef extern from "Python.h":
    unsigned long ma_thread_ident "PyThread_get_thread_ident" ()
    Py_ssize_t ma_length_hint "PyObject_LengthHint" (object o, Py_ssize_t default) except -1

cdef unsigned long _MAIN_THREAD
cdef ThreadState _main_state
cdef int _PLAIN, _SUBROUTINE, _LOOP, _COUNTER, _MPI
cdef long long _NOT_REPORTED, _FROM_RANGE
cdef int _LAST_PREDICTED, _LAST_COUNTED, _LAST_MPI, _LAST_MPI_MEASURED, _NO_VERDICT, _PASS

# (inline: a call costs a fetch of the callee's code; Cython warns about "inline" here but honours it)
cdef inline bint on_main_thread() noexcept
cdef inline ThreadState current_state()
cdef inline long long now() noexcept
cdef inline void sdk_enter() noexcept
cdef inline void sdk_leave() noexcept
cdef inline Py_ssize_t trips_left(object items) except -1
cdef inline Node child_of(ThreadState state, object id)
cdef inline void init(Region region, int kind, object id, object expr, object value, object count)
cdef Node new_site(Region region, ThreadState state)
cdef void refresh(Region region, ThreadState state, Node node)
cdef long long cpu_now()
cdef void counter_start(Region region, Node node)
cdef void counter_stop(Region region)
cdef void mpi_start(Region region, Node node)
cdef inline void mpi_stop(Region region, Node node)
cdef inline long long mpi_total(Node node, Py_ssize_t offset)
cdef void complete(Region region, Node node)
cdef inline void count_verdict(Node node)
cdef void discard(Region region, Node node)
cdef inline Region reused(type cls, object id)
cdef Region new_region(type cls)
cdef Region make(type cls, int kind, object id, object expr, object value, object count)
cdef dict _peer_calls
cdef Py_ssize_t _peer_limit
cdef object partnered(Region region, object peer)

# Every kind has these fields (and no others). No free list: Cython takes none from a .pxd, and one declared
# in annotations.py (@cython.freelist) makes a call fetch more lines of code in situ than PyType_GenericAlloc
# (bench/annotation_instructions.py; figures in docs/performance.md).
cdef class Region:
    cdef public object id, expr, value, count, undo, outer
    cdef public Node node
    cdef public ThreadState state
    cdef public long long t0, c0, n, length, calls0, bytes0
    cdef public int kind
    cdef public bint measured
    cdef public object items, reader, m0
    cpdef finish(self, object exc_type, long long t1, long long c1, bint unbalanced=*)

cdef class _Counting:
    cdef public loop loop
    cdef public object items

cdef class loop(Region):
    pass

cdef class subroutine(Region):
    pass

cdef class CounterRegion(Region):
    pass

cdef class flop(CounterRegion):
    pass

cdef class loadstore(CounterRegion):
    pass

cdef class heap_memory(CounterRegion):
    pass

cdef class stack_memory(CounterRegion):
    pass

cdef class MpiRegion(Region):
    pass

cdef class mpi_send(MpiRegion):
    pass

cdef class mpi_isend(MpiRegion):
    pass

cdef class mpi_recv(MpiRegion):
    pass

cdef class mpi_irecv(MpiRegion):
    pass

cdef class mpi_sendrecv(MpiRegion):
    pass

cdef class mpi_bcast(MpiRegion):
    pass

cdef class mpi_reduce(MpiRegion):
    pass

cdef class mpi_allreduce(MpiRegion):
    pass

cdef class mpi_gather(MpiRegion):
    pass

cdef class mpi_scatter(MpiRegion):
    pass

cdef class mpi_allgather(MpiRegion):
    pass

cdef class mpi_alltoall(MpiRegion):
    pass

cdef class mpi_barrier(MpiRegion):
    pass
