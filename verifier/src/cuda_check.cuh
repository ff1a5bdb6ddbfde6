// CUDA error checking for the verifier: every runtime call goes through KVV_CUDA, which throws
// with the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace kvverify {

struct CudaFailure : std::runtime_error {
  CudaFailure(cudaError_t error_, const std::string& what) : std::runtime_error(what), error(error_) {}
  cudaError_t error;
};

inline void check_cuda(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return;
  throw CudaFailure(error, std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ") from " + call +
                               " at " + file + ":" + std::to_string(line));
}

}  // namespace kvverify

#define KVV_CUDA(call) ::kvverify::check_cuda((call), #call, __FILE__, __LINE__)
