// KVPATCH_CUDA_CHECK(call) for the GPU tests and the stand-alone tools in kernels/bench: on a CUDA
// error, print where, the call and the error, and exit 1 (neither has anything to clean up or report
// past a failed runtime call). The library itself returns cudaError_t instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define KVPATCH_CUDA_CHECK(call)                                                                        \
  do {                                                                                                  \
    const cudaError_t kvpatch_err_ = (call);                                                            \
    if (kvpatch_err_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(kvpatch_err_)); \
      std::exit(1);                                                                                     \
    }                                                                                                   \
  } while (0)
