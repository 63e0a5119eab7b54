// Errors of the CUDA runtime and cuBLAS as tierzero errors. Kept free of fmt and of the CUDA headers'
// types so that the CUDA sources (compiled by nvcc) and the C++ ones share it.
#pragma once

namespace tz::cuda {

// Throws InternalError "<what>: <the runtime's name and message of the error>" unless `error` is
// cudaSuccess (0). `error` is a cudaError_t.
void check(int error, const char* what);
// The same for a cublasStatus_t.
void check_cublas(int status, const char* what);
// Throws InternalError "<what>" with `detail` appended: a kernel that found bad input (a token id
// outside the vocabulary, say) reports it through a device flag its launcher reads back.
[[noreturn]] void fail(const char* what, long long detail);

}  // namespace tz::cuda
