"""Device memory that the torch judge owns and a host maps (docs/torch.md,
#the-judge, "on the GPU"): one allocation made with the CUDA driver's
virtual memory API, exported as a POSIX file descriptor that travels to the
host over its socket (SCM_RIGHTS), and mapped there into the host's own
context. The judge writes a side's inputs into it and reads its outputs
from it, in its own context; the host's inputs are views of it and its
outputs are copied into it. A descriptor is a capability: the host can map
this allocation and no other memory of the judge's (legacy cudaIpc handles
would not cross the host's PID namespace).

The driver is reached through ctypes (libcuda.so.1, already loaded by torch
in every process that uses the GPU), so that neither the judge nor the host
needs a compiled module for it."""
import ctypes
import os

import torch

CUDA_SUCCESS = 0
CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocProp(ctypes.Structure):
    # CUmemAllocationProp (cuda.h): type, requestedHandleTypes, location,
    # win32HandleMetaData, allocFlags.
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_DRIVER = None


def driver():
    """libcuda, its functions typed; loaded once per process (a host loads it
    before its system-call policy: by then torch has loaded it, and dlopen
    finds it by name without opening a file)."""
    global _DRIVER
    if _DRIVER is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, sz, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
        sigs = {
            "cuMemGetAllocationGranularity": [ctypes.POINTER(sz), ctypes.POINTER(_AllocProp), ctypes.c_int],
            "cuMemCreate": [ctypes.POINTER(u64), sz, ctypes.POINTER(_AllocProp), ctypes.c_ulonglong],
            "cuMemAddressReserve": [ctypes.POINTER(u64), sz, sz, u64, ctypes.c_ulonglong],
            "cuMemMap": [u64, sz, sz, u64, ctypes.c_ulonglong],
            "cuMemSetAccess": [u64, sz, ctypes.POINTER(_AccessDesc), sz],
            "cuMemExportToShareableHandle": [vp, u64, ctypes.c_int, ctypes.c_ulonglong],
            "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), vp, ctypes.c_int],
            "cuMemUnmap": [u64, sz],
            "cuMemAddressFree": [u64, sz],
            "cuMemRelease": [u64],
            "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            # kevo_torch_mask's kernel: PTX loaded in the process, launched on a stream
            "cuModuleLoadData": [ctypes.POINTER(vp), ctypes.c_char_p],
            "cuModuleGetFunction": [ctypes.POINTER(vp), vp, ctypes.c_char_p],
            "cuLaunchKernel": [vp] + [ctypes.c_uint] * 7 + [vp, vp, vp],
        }
        for name, args in sigs.items():
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = ctypes.c_int
        _DRIVER = lib
    return _DRIVER


def check(r, what):
    """Raises RuntimeError naming the driver's error and `what` was being
    done, unless r is CUDA_SUCCESS."""
    if r != CUDA_SUCCESS:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(r, ctypes.byref(name))
        raise RuntimeError("CUDA error %s (%d) %s" % ((name.value or b"?").decode(), r, what))


def _prop(device):
    p = _AllocProp()
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE
    p.location.id = device
    return p


def _map(handle, size, device, what):
    """Reserves addresses for `size` bytes, maps `handle` there read-write
    for `device`; returns the address."""
    d = driver()
    va = ctypes.c_uint64()
    check(d.cuMemAddressReserve(ctypes.byref(va), size, 0, 0, 0), "reserving addresses for " + what)
    try:
        check(d.cuMemMap(va.value, size, 0, handle, 0), "mapping " + what)
        access = _AccessDesc()
        access.location.type = CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = device
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        check(d.cuMemSetAccess(va.value, size, ctypes.byref(access), 1), "making %s accessible" % what)
    except RuntimeError:
        d.cuMemUnmap(va.value, size)
        d.cuMemAddressFree(va.value, size)
        raise
    return va.value


class _Interface:
    """What torch.as_tensor reads to wrap device memory it does not own."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2}


def wrap(ptr, nbytes, device):
    """The bytes at ptr as a uint8 tensor on `device` (owning nothing)."""
    return torch.as_tensor(_Interface(ptr, nbytes), device=device)


class Arena:
    """The judge's side: at least `nbytes` of device memory on the current
    device, mapped here and exported. `fd` is the descriptor to send; `bytes`
    the whole tensor of it. Freed by close() (a host's mapping keeps the
    memory until the host unmaps it or ends)."""

    def __init__(self, nbytes, device_index):
        d = driver()
        self.device = device_index
        prop = _prop(device_index)
        gran = ctypes.c_size_t()
        check(d.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop),
                                               CU_MEM_ALLOC_GRANULARITY_MINIMUM), "reading the granularity")
        g = max(1, gran.value)
        self.size = (max(int(nbytes), 1) + g - 1) // g * g
        h = ctypes.c_uint64()
        check(d.cuMemCreate(ctypes.byref(h), self.size, ctypes.byref(prop), 0), "allocating a host's device memory")
        self.handle = h.value
        self.va = 0
        self.fd = -1
        try:
            self.va = _map(self.handle, self.size, device_index, "a host's device memory")
            fd = ctypes.c_int(-1)
            check(d.cuMemExportToShareableHandle(ctypes.byref(fd), self.handle,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                   "exporting a host's device memory")
            self.fd = fd.value
        except RuntimeError:
            self.close()
            raise
        self.bytes = wrap(self.va, self.size, torch.device("cuda", device_index))

    def close(self):
        d = driver()
        self.bytes = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.va:
            d.cuMemUnmap(self.va, self.size)
            d.cuMemAddressFree(self.va, self.size)
            self.va = 0
        if self.handle:
            d.cuMemRelease(self.handle)
            self.handle = 0


class Mapped:
    """The host's side: the judge's allocation behind `fd` (`size` bytes, as
    the judge made it), mapped into this process's context; `bytes` is the
    whole of it as a uint8 tensor. The descriptor is closed once mapped."""

    def __init__(self, fd, size, device_index):
        d = driver()
        h = ctypes.c_uint64()
        try:
            check(d.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fd),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                   "importing the judge's device memory")
        finally:
            os.close(fd)
        self.size = int(size)
        try:
            self.va = _map(h.value, self.size, device_index, "the judge's device memory")
        finally:
            d.cuMemRelease(h.value)   # the mapping keeps the memory
        self.bytes = wrap(self.va, self.size, torch.device("cuda", device_index))

    def close(self):
        self.bytes = None
        if self.va:
            driver().cuMemUnmap(self.va, self.size)
            driver().cuMemAddressFree(self.va, self.size)
            self.va = 0
