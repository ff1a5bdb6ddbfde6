// How many thread-block clusters of 2-16 blocks can be resident at once when each block is shaped
// like the decode kernel's (512 threads, one per SM, ~227 KB of shared memory): the question behind
// merging a request's splits in distributed shared memory, which needs all of a launch's clusters in
// one wave (kernels/bench/NOTES.md, thirteenth session). Asks cudaOccupancyMaxActiveClusters; runs
// nothing. Build and run (GPU machine):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a kernels/bench/cluster_occupancy.cu \
//     -o /tmp/cluster_occupancy && /tmp/cluster_occupancy
#include <cuda_runtime.h>

#include <cstdio>

__global__ void __launch_bounds__(512, 1) decode_shaped(int* out) {
  extern __shared__ int smem[];
  smem[threadIdx.x] = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0 && out != nullptr) out[blockIdx.x] = smem[0];
}

int main() {
  int device = 0, sms = 0, smem_optin = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (cudaFuncSetAttribute(decode_shaped, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin) != cudaSuccess ||
      cudaFuncSetAttribute(decode_shaped, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    std::fprintf(stderr, "cannot set the kernel's attributes (needs SM90 or later)\n");
    return 1;
  }
  std::printf("%d SMs, %d B of shared memory per block (opt-in)\n", sms, smem_optin);
  for (int smem : {smem_optin, smem_optin / 2 - 1024}) {
    for (int cluster : {1, 2, 4, 8, 16}) {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(cluster * (sms / cluster));
      config.blockDim = dim3(512);
      config.dynamicSmemBytes = smem;
      cudaLaunchAttribute attribute = {};
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = cluster, attribute.val.clusterDim.y = 1, attribute.val.clusterDim.z = 1;
      config.attrs = &attribute, config.numAttrs = 1;
      int clusters = 0;
      const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, decode_shaped, &config);
      if (err != cudaSuccess) {
        std::printf("  %6d B, clusters of %2d: %s\n", smem, cluster, cudaGetErrorString(err));
        continue;
      }
      std::printf("  %6d B, clusters of %2d: %3d resident (%3d blocks)\n", smem, cluster, clusters, clusters * cluster);
    }
  }
  return 0;
}
