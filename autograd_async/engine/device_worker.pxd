# Declarations for the compiled core (Cython's augmenting .pxd; device_worker.py stays the source):
# a DeviceWorker is an extension type whose per-node methods take the task as a typed GraphTask,
# so the worker reads the task's fields and calls `deposit`/`evaluate` without Python lookups.
cimport cython

from autograd_async.graph_task cimport GraphTask


@cython.final
cdef class DeviceWorker:
    cdef public object engine
    cdef public object device
    cdef public object _device_name
    cdef public object _streams
    cdef public bint _host
    cdef public bint _sanitized
    cdef public object _use_stream
    cdef public object _execute
    cdef public bint _defers_host
    cdef public dict _thread_names
    cdef public list ready
    cdef public object inbox
    cdef public object _tick
    cdef public object _loop_factory
    cdef public bint _wake_pending
    cdef public bint _resume_pending
    cdef public bint dead
    cdef public object _waiter
    cdef public set _nested_tasks
    cdef public dict _async_nodes
    cdef public object ownership
    cdef public object _started
    cdef public object _start_error
    cdef public object running_task
    cdef public object loop
    cdef public object thread
    cdef public long long nodes_run
    cdef public long long busy_ns
    cdef public long long handoffs_in
    cdef public long long handoffs_out
    cdef object __weakref__

    cpdef push(self, GraphTask task, node, inputs)
    cpdef _drain_ready(self)
    cpdef _execute_plain(self, node, GraphTask task, inputs)
    cpdef _route(self, GraphTask task, node, outputs)
