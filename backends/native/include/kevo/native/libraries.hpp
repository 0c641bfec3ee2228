// The library policy's run-time half (docs/verdicts.md#library-policy): the
// libraries a candidate's process mapped, against the task's list. The link
// stage keeps what is not allowed out of the candidate's link line; a
// candidate that loads a library itself (dlopen) is found here.
#pragma once

#include <string>
#include <vector>

namespace kevo::native {

// The policy name of a known library file ("cublas" for libcublasLt.so.13),
// "" for files the policy does not govern (the C and C++ runtimes, the
// CUDA runtime and driver, the candidate itself).
std::string library_of(const std::string& file_name);

// The library a symbol belongs to ("cublas" for cublasSgemm_v2, "blas" for
// cblas_sgemm or sgemm_), "" for symbols of no known library.
std::string library_of_symbol(const std::string& symbol);

// The undefined symbols a failed link names (GNU ld's "undefined reference
// to `X'", lld's "undefined symbol: X"), in order.
std::vector<std::string> undefined_symbols(const std::string& link_log);

// The first mapped file (from /proc/PID/maps text) whose library is not in
// `allowed`, as "libcublas.so.13 (cublas)"; "" when there is none.
std::string forbidden_mapping(const std::string& maps, const std::vector<std::string>& allowed);

}  // namespace kevo::native
