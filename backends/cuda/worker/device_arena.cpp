#include "device_arena.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <unistd.h>

namespace kevo::cuda::worker {

namespace {

std::string driver_error(CUresult r, const char* what) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  return std::string("CUDA error ") + (name ? name : "?") + " (" + (text ? text : "?") + ") " + what;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(driver_error(r, what));
}

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

CUmemAccessDesc read_write(int device) {
  CUmemAccessDesc a{};
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = device;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a;
}

int current_device() {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) throw std::runtime_error("no current CUDA device");
  return d;
}

}  // namespace

ExportedArena::ExportedArena(std::size_t bytes) {
  const int device = current_device();
  const CUmemAllocationProp prop = device_prop(device);
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "reading the allocation granularity");
  size_ = (std::max<std::size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle h = 0;
  check(cuMemCreate(&h, size_, &prop, 0), "allocating the candidate's device arena");
  handle_ = h;
  CUdeviceptr va = 0;
  check(cuMemAddressReserve(&va, size_, 0, 0, 0), "reserving the arena's addresses");
  va_ = va;
  check(cuMemMap(va, size_, 0, h, 0), "mapping the arena");
  const CUmemAccessDesc access = read_write(device);
  check(cuMemSetAccess(va, size_, &access, 1), "making the arena accessible");
  int fd = -1;
  check(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "exporting the arena");
  arena_.fd = fd;
  arena_.base = reinterpret_cast<char*>(static_cast<std::uintptr_t>(va));
  arena_.bytes = size_;
}

ExportedArena::~ExportedArena() {
  // Errors ignored: after a sticky error the context and its memory are gone.
  if (arena_.fd >= 0) ::close(arena_.fd);
  if (va_) {
    (void)cuMemUnmap(static_cast<CUdeviceptr>(va_), size_);
    (void)cuMemAddressFree(static_cast<CUdeviceptr>(va_), size_);
  }
  if (handle_) (void)cuMemRelease(static_cast<CUmemGenericAllocationHandle>(handle_));
}

std::string import_arena(int fd, std::size_t bytes, char*& base) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return "no current CUDA device";
  CUmemGenericAllocationHandle h = 0;
  CUresult r = cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS) return driver_error(r, "importing the judge's arena");
  CUdeviceptr va = 0;
  if ((r = cuMemAddressReserve(&va, bytes, 0, 0, 0)) != CUDA_SUCCESS) return driver_error(r, "reserving the arena's addresses");
  if ((r = cuMemMap(va, bytes, 0, h, 0)) != CUDA_SUCCESS) return driver_error(r, "mapping the arena");
  const CUmemAccessDesc access = read_write(device);
  if ((r = cuMemSetAccess(va, bytes, &access, 1)) != CUDA_SUCCESS) return driver_error(r, "making the arena accessible");
  // The mapping keeps the memory; the handle is not needed any more.
  (void)cuMemRelease(h);
  base = reinterpret_cast<char*>(static_cast<std::uintptr_t>(va));
  return {};
}

}  // namespace kevo::cuda::worker
