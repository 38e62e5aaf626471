# Declarations for the compiled core (Cython's augmenting .pxd; graph_task.py stays the source):
# a GraphTask is an extension type, so the engine reads and writes its fields as C struct members
# instead of looking each one up through its type. Fields stay `object` where the engine relies on
# the value passed in (`create_graph` is compared by identity, `reentrant_depth` is shifted by 64).
cimport cython


@cython.final
cdef class GraphTask:
    cdef public object id
    cdef public object root
    cdef public bint keep_graph
    cdef public object create_graph
    cdef public dict dependencies
    cdef public dict buffers
    cdef public dict exec_info
    cdef public dict captures
    cdef public list captured
    cdef public object reentrant_depth
    cdef public bint anomaly
    cdef public bint check_nan
    cdef public bint _special
    cdef public Py_ssize_t _outstanding
    cdef public object _lock
    cdef public object error
    cdef public bint finished
    cdef public object on_finish
    cdef public object context
    cdef public object caller_streams
    cdef public object side_streams
    cdef public bint checks_streams
    cdef public object final_callbacks
    cdef object __weakref__

    cpdef add_outstanding(self, delta)
    cpdef deposit(self, node, nr, grad)
    cpdef evaluate(self, node, inputs)
