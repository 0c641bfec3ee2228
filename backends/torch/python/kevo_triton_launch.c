/* kevo's launcher for Triton kernels in a sandboxed candidate host
 * (docs/torch.md#triton-candidates).
 *
 * Triton builds a C launcher per kernel signature with gcc at the first
 * launch, which a host under kevo's system-call policy may not do (no exec,
 * no file creation). This one module serves every signature: the Python side
 * (kevo_torch_triton.KevoLauncher) turns the kernel's signature into one code
 * per argument, and launch() packs the arguments by those codes and calls the
 * driver's cuLaunchKernelEx. It is compiled once, by the judge's zygote,
 * before any candidate runs; it is kevo's own source, never a candidate's.
 *
 * Argument codes: '-' constexpr (skipped), 'p' device pointer (a tensor, an
 * int or None), 'b' 'h' 'i' 'l' signed 8/16/32/64-bit, 'B' 'H' 'I' 'L'
 * unsigned 8/16/32/64-bit, 'e' fp16, 'r' bf16, 'f' fp32, 'd' fp64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "cuda.h"

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*pointer_attribute_t)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*error_string_t)(CUresult, const char **);
typedef CUresult (*func_set_attribute_t)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*ctx_get_current_t)(CUcontext *);
typedef CUresult (*ctx_set_current_t)(CUcontext);
typedef CUresult (*device_get_t)(CUdevice *, int);
typedef CUresult (*primary_ctx_retain_t)(CUcontext *, CUdevice);

static launch_ex_t launch_ex;
static pointer_attribute_t pointer_attribute;
static error_string_t error_string;
static func_set_attribute_t func_set_attribute;
static ctx_get_current_t ctx_get_current;
static ctx_set_current_t ctx_set_current;
static device_get_t device_get;
static primary_ctx_retain_t primary_ctx_retain;

/* The driver's functions, from the libcuda.so.1 the process has loaded
 * already (torch initialised the device before this runs): no file is
 * opened under the policy. */
static int resolve_driver(void) {
  if (launch_ex)
    return 0;
  void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib)
    lib = dlopen("libcuda.so.1", RTLD_LAZY);
  if (!lib) {
    PyErr_SetString(PyExc_RuntimeError, "kevo's Triton launcher: libcuda.so.1 is not loaded");
    return -1;
  }
  launch_ex = (launch_ex_t)dlsym(lib, "cuLaunchKernelEx");
  pointer_attribute = (pointer_attribute_t)dlsym(lib, "cuPointerGetAttribute");
  error_string = (error_string_t)dlsym(lib, "cuGetErrorString");
  func_set_attribute = (func_set_attribute_t)dlsym(lib, "cuFuncSetAttribute");
  ctx_get_current = (ctx_get_current_t)dlsym(lib, "cuCtxGetCurrent");
  ctx_set_current = (ctx_set_current_t)dlsym(lib, "cuCtxSetCurrent");
  device_get = (device_get_t)dlsym(lib, "cuDeviceGet");
  primary_ctx_retain = (primary_ctx_retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain_v2");
  if (!primary_ctx_retain)
    primary_ctx_retain = (primary_ctx_retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain");
  if (!launch_ex || !pointer_attribute || !error_string || !func_set_attribute || !ctx_get_current ||
      !ctx_set_current || !device_get || !primary_ctx_retain) {
    launch_ex = NULL;
    PyErr_SetString(PyExc_RuntimeError, "kevo's Triton launcher: the driver lacks cuLaunchKernelEx");
    return -1;
  }
  return 0;
}

static int cuda_failed(CUresult r, const char *what);

/* As Triton's launcher: a thread with no current context (a thread of the
 * candidate's own) gets the device's primary context. */
static int ensure_context(void) {
  CUcontext ctx = NULL;
  CUresult r = ctx_get_current(&ctx);
  if (r != CUDA_SUCCESS)
    return cuda_failed(r, "cuCtxGetCurrent");
  if (ctx)
    return 0;
  CUdevice dev;
  if ((r = device_get(&dev, 0)) != CUDA_SUCCESS)
    return cuda_failed(r, "cuDeviceGet");
  if ((r = primary_ctx_retain(&ctx, dev)) != CUDA_SUCCESS)
    return cuda_failed(r, "cuDevicePrimaryCtxRetain");
  if ((r = ctx_set_current(ctx)) != CUDA_SUCCESS)
    return cuda_failed(r, "cuCtxSetCurrent");
  return 0;
}

static int cuda_failed(CUresult r, const char *what) {
  const char *text = NULL;
  if (error_string)
    error_string(r, &text);
  PyErr_Format(PyExc_RuntimeError, "Triton Error [CUDA]: %s: %s (error %d)", what, text ? text : "unknown error",
               (int)r);
  return -1;
}

/* A pointer argument: an int (an address), None (null) or an object with
 * data_ptr() whose address the driver knows as device memory. */
static int device_pointer(PyObject *obj, Py_ssize_t index, CUdeviceptr *out) {
  *out = 0;
  if (obj == Py_None)
    return 0;
  if (PyLong_Check(obj)) {
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (PyErr_Occurred())
      return -1;
    *out = (CUdeviceptr)v;
    return 0;
  }
  PyObject *addr = PyObject_CallMethod(obj, "data_ptr", NULL);
  if (!addr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "argument %zd: a pointer argument must be a tensor, an int or None", index);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(addr);
  Py_DECREF(addr);
  if (PyErr_Occurred())
    return -1;
  if (v == 0)
    return 0;
  CUdeviceptr dev = 0;
  CUresult r = pointer_attribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)v);
  if (r == CUDA_ERROR_INVALID_VALUE) {
    PyErr_Format(PyExc_ValueError, "argument %zd cannot be accessed from Triton (a CPU tensor?)", index);
    return -1;
  }
  if (r != CUDA_SUCCESS)
    return cuda_failed(r, "cuPointerGetAttribute");
  *out = dev;
  return 0;
}

static uint16_t half_bits(double value) {
  _Float16 h = (_Float16)value;
  uint16_t bits;
  memcpy(&bits, &h, sizeof bits);
  return bits;
}

/* The upper half of the float, as Triton's own launcher passes a bf16
 * scalar (truncated: a kernel gets the value it would get under Triton). */
static uint16_t bfloat_bits(double value) {
  float f = (float)value;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

typedef union {
  uint64_t u64;
  int64_t i64;
  uint32_t u32;
  int32_t i32;
  uint16_t u16;
  int16_t i16;
  uint8_t u8;
  int8_t i8;
  float f32;
  double f64;
  CUdeviceptr ptr;
} slot_t;

/* One argument into its slot by its code. */
static int pack(char code, PyObject *obj, Py_ssize_t index, slot_t *slot) {
  memset(slot, 0, sizeof *slot);
  if (code == 'p')
    return device_pointer(obj, index, &slot->ptr);
  if (code == 'e' || code == 'r' || code == 'f' || code == 'd') {
    double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred())
      return -1;
    if (code == 'e')
      slot->u16 = half_bits(v);
    else if (code == 'r')
      slot->u16 = bfloat_bits(v);
    else if (code == 'f')
      slot->f32 = (float)v;
    else
      slot->f64 = v;
    return 0;
  }
  PyObject *as_int = PyNumber_Index(obj);
  if (!as_int)
    return -1;
  if (code == 'L' || code == 'I' || code == 'H' || code == 'B') {
    unsigned long long v = PyLong_AsUnsignedLongLongMask(as_int);
    Py_DECREF(as_int);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
      return -1;
    if (code == 'L')
      slot->u64 = v;
    else if (code == 'I')
      slot->u32 = (uint32_t)v;
    else if (code == 'H')
      slot->u16 = (uint16_t)v;
    else
      slot->u8 = (uint8_t)v;
    return 0;
  }
  long long v = PyLong_AsLongLong(as_int);
  Py_DECREF(as_int);
  if (v == -1 && PyErr_Occurred())
    return -1;
  /* Out of the type's range is an error, as in Triton's launcher (a byte
   * may be given signed or unsigned). */
  if ((code == 'i' && (v < INT32_MIN || v > INT32_MAX)) || (code == 'h' && (v < INT16_MIN || v > INT16_MAX)) ||
      (code == 'b' && (v < INT8_MIN || v > UINT8_MAX))) {
    PyErr_Format(PyExc_OverflowError, "argument %zd: %lld is out of the range of its type", index, v);
    return -1;
  }
  switch (code) {
  case 'l': slot->i64 = (int64_t)v; return 0;
  case 'i': slot->i32 = (int32_t)v; return 0;
  case 'h': slot->i16 = (int16_t)v; return 0;
  case 'b': slot->i8 = (int8_t)v; return 0;
  default:
    PyErr_Format(PyExc_ValueError, "kevo's Triton launcher: unknown argument code '%c'", code);
    return -1;
  }
}

/* launch(gridX, gridY, gridZ, stream, function, num_warps, num_ctas,
 *        shared, cooperative, pdl, global_scratch, profile_scratch,
 *        codes, args) */
static PyObject *launch(PyObject *self, PyObject *args) {
  (void)self;
  int gx, gy, gz, num_warps, num_ctas, shared, cooperative, pdl;
  unsigned long long stream, function;
  PyObject *global_obj, *profile_obj, *call_args;
  const char *codes;
  Py_ssize_t ncodes;
  if (!PyArg_ParseTuple(args, "iiiKKiiippOOs#O!", &gx, &gy, &gz, &stream, &function, &num_warps, &num_ctas, &shared,
                        &cooperative, &pdl, &global_obj, &profile_obj, &codes, &ncodes, &PyTuple_Type, &call_args))
    return NULL;
  if (PyTuple_GET_SIZE(call_args) != ncodes) {
    PyErr_Format(PyExc_TypeError, "the kernel takes %zd arguments, %zd were given", ncodes,
                 PyTuple_GET_SIZE(call_args));
    return NULL;
  }
  if (resolve_driver() != 0 || ensure_context() != 0)
    return NULL;
  Py_ssize_t nparams = 2;
  for (Py_ssize_t i = 0; i < ncodes; ++i)
    nparams += codes[i] != '-';
  slot_t *slots = PyMem_Calloc((size_t)nparams, sizeof(slot_t));
  void **params = PyMem_Calloc((size_t)nparams, sizeof(void *));
  if (!slots || !params) {
    PyMem_Free(slots);
    PyMem_Free(params);
    return PyErr_NoMemory();
  }
  Py_ssize_t k = 0;
  int failed = 0;
  for (Py_ssize_t i = 0; i < ncodes && !failed; ++i) {
    if (codes[i] == '-')
      continue;
    if (pack(codes[i], PyTuple_GET_ITEM(call_args, i), i, &slots[k]) != 0)
      failed = 1;
    params[k] = &slots[k];
    ++k;
  }
  /* Triton's kernels take the global and the profile scratch last. */
  if (!failed && device_pointer(global_obj, -1, &slots[k].ptr) != 0)
    failed = 1;
  params[k] = &slots[k];
  ++k;
  if (!failed && device_pointer(profile_obj, -2, &slots[k].ptr) != 0)
    failed = 1;
  params[k] = &slots[k];
  CUresult r = CUDA_SUCCESS;
  const char *what = "cuLaunchKernelEx";
  if (!failed && (long long)gx * gy * gz > 0) {
    CUlaunchAttribute attrs[4];
    memset(attrs, 0, sizeof attrs);
    unsigned nattrs = 0;
    if (pdl) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[nattrs].value.programmaticStreamSerializationAllowed = 1;
      ++nattrs;
    }
    if (cooperative) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[nattrs].value.cooperative = 1;
      ++nattrs;
    }
    if (num_ctas != 1) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[nattrs].value.clusterDim.x = (unsigned)num_ctas;
      attrs[nattrs].value.clusterDim.y = 1;
      attrs[nattrs].value.clusterDim.z = 1;
      ++nattrs;
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
      attrs[nattrs].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
      ++nattrs;
    }
    CUlaunchConfig config;
    memset(&config, 0, sizeof config);
    config.gridDimX = (unsigned)gx * (unsigned)num_ctas;
    config.gridDimY = (unsigned)gy;
    config.gridDimZ = (unsigned)gz;
    config.blockDimX = 32u * (unsigned)num_warps;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.sharedMemBytes = (unsigned)shared;
    config.hStream = (CUstream)(uintptr_t)stream;
    config.attrs = attrs;
    config.numAttrs = nattrs;
    Py_BEGIN_ALLOW_THREADS;
    if (num_ctas == 16) {
      r = func_set_attribute((CUfunction)(uintptr_t)function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      what = "cuFuncSetAttribute";
    }
    if (r == CUDA_SUCCESS) {
      r = launch_ex(&config, (CUfunction)(uintptr_t)function, params, NULL);
      what = "cuLaunchKernelEx";
    }
    Py_END_ALLOW_THREADS;
  }
  PyMem_Free(slots);
  PyMem_Free(params);
  if (failed)
    return NULL;
  if (r != CUDA_SUCCESS) {
    cuda_failed(r, what);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"launch", launch, METH_VARARGS, "Launch a Triton kernel by its argument codes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kevo_triton_launch", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_kevo_triton_launch(void) { return PyModule_Create(&module); }
