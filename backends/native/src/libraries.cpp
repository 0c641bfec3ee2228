#include "kevo/native/libraries.hpp"

#include <algorithm>
#include <sstream>

namespace kevo::native {

namespace {

struct Known {
  const char* prefix;   // the file name starts with it
  const char* library;  // the policy name
};

// Libraries that compute what a task asks a candidate to write: calling
// one is not an evolved kernel unless the task says so.
constexpr Known kKnown[] = {
    {"libcublasLt", "cublasLt"}, {"libcublas", "cublas"},     {"libcudnn", "cudnn"},     {"libcufft", "cufft"},
    {"libcurand", "curand"},     {"libcusparse", "cusparse"}, {"libcusolver", "cusolver"}, {"libnccl", "nccl"},
    {"libnvblas", "cublas"},     {"libopenblas", "blas"},     {"libblas", "blas"},       {"libcblas", "blas"},
    {"liblapack", "lapack"},     {"libmkl", "mkl"},           {"libtorch", "torch"},     {"libc10", "torch"},
    {"libpython", "python"},     {"libnvrtc", "nvrtc"},       {"libcutensor", "cutensor"}, {"libnpp", "npp"},
    {"libfftw", "fftw"},         {"libeigen", "eigen"},       {"libarmadillo", "armadillo"},
    {"libflexiblas", "blas"},    {"libblis", "blas"},         {"libatlas", "blas"},      {"libsatlas", "blas"},
    {"libtatlas", "blas"},       {"libscipy_openblas", "blas"}, {"libarmpl", "blas"},    {"libxsmm", "blas"},
    {"libdnnl", "dnnl"},         {"libmkldnn", "dnnl"},       {"libcusparseLt", "cusparse"}, {"libcufile", "cufile"},
};

// Symbol prefixes of the same libraries (C names, and the mangled
// namespaces of C++ ones).
constexpr Known kSymbols[] = {
    {"cublasLt", "cublasLt"}, {"cublas", "cublas"},   {"cudnn", "cudnn"},     {"cufft", "cufft"},
    {"curand", "curand"},     {"cusparse", "cusparse"}, {"cusolver", "cusolver"}, {"nccl", "nccl"},
    {"cblas_", "blas"},       {"mkl_", "mkl"},        {"nvrtc", "nvrtc"},     {"cutensor", "cutensor"},
    {"fftw", "fftw"},         {"_ZN2at", "torch"},    {"_ZN5torch", "torch"}, {"_ZN3c10", "torch"},
    {"Py", "python"},
};

// Fortran BLAS/LAPACK entry points: sgemm_, dgemv_...
bool fortran_blas(const std::string& s) {
  static const char* names[] = {"gemm_", "gemv_", "axpy_", "dot_", "scal_", "trsm_", "syrk_", "getrf_", "potrf_", "nrm2_"};
  if (s.size() < 4 || (s[0] != 's' && s[0] != 'd' && s[0] != 'c' && s[0] != 'z')) return false;
  for (const char* n : names)
    if (s.substr(1) == n) return true;
  return false;
}

}  // namespace

std::string library_of_symbol(const std::string& symbol) {
  for (const Known& k : kSymbols)
    if (symbol.rfind(k.prefix, 0) == 0) return k.library;
  if (fortran_blas(symbol)) return "blas";
  return {};
}

std::vector<std::string> undefined_symbols(const std::string& log) {
  std::vector<std::string> out;
  for (const char* marker : {"undefined reference to `", "undefined reference to '", "undefined symbol: "}) {
    for (std::size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
      const std::size_t b = at + std::char_traits<char>::length(marker);
      std::size_t e = b;
      while (e < log.size() && log[e] != '\'' && log[e] != '\n' && log[e] != ' ' && log[e] != '(' && log[e] != '\r') ++e;
      std::string sym = log.substr(b, e - b);
      // ld prints demangled C++ names; "at::mm" style maps back to a prefix.
      if (sym.rfind("at::", 0) == 0 || sym.rfind("torch::", 0) == 0 || sym.rfind("c10::", 0) == 0) sym = "_ZN2at" + sym;
      if (!sym.empty() && std::find(out.begin(), out.end(), sym) == out.end()) out.push_back(sym);
    }
  }
  return out;
}

std::string library_of(const std::string& file_name) {
  for (const Known& k : kKnown)
    if (file_name.rfind(k.prefix, 0) == 0) return k.library;
  return {};
}

std::string forbidden_mapping(const std::string& maps, const std::vector<std::string>& allowed) {
  std::istringstream in(maps);
  for (std::string line; std::getline(in, line);) {
    // "address perms offset dev inode path": a file's mapping has a path
    // that starts with '/'. Anything else (an anonymous mapping, whose name
    // the process sets itself: "[anon:x/libblas 7x33]") names no library.
    std::istringstream fields(line);
    std::string address, perms, offset, dev, inode, path;
    if (!(fields >> address >> perms >> offset >> dev >> inode)) continue;
    std::getline(fields >> std::ws, path);
    if (path.empty() || path.front() != '/') continue;
    if (const auto d = path.rfind(" (deleted)"); d != std::string::npos && d + 10 == path.size()) path.resize(d);
    const std::string name = path.substr(path.rfind('/') + 1);
    const std::string lib = library_of(name);
    if (lib.empty() || std::find(allowed.begin(), allowed.end(), lib) != allowed.end()) continue;
    // cuBLAS loads cuBLASLt itself: allowing one allows its own dependency.
    if (lib == "cublasLt" && std::find(allowed.begin(), allowed.end(), "cublas") != allowed.end()) continue;
    return name + " (" + lib + ")";
  }
  return {};
}

}  // namespace kevo::native
