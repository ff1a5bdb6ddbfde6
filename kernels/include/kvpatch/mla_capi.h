/* C ABI of libkvpatch_mla_capi.so: the MLA decode launcher (kvpatch/mla_decode_launch.h) behind
 * plain C types, for callers that load the library rather than build the kernels (the Python API,
 * kernels/python/kvpatch_mla.py, through ctypes; C or C++ code that links it). Installed as
 * <prefix>/include/kvpatch/mla_capi.h beside <prefix>/lib/kvpatch/libkvpatch_mla_capi.so.
 *
 * Every int-returning launch function returns a cudaError_t code (0 = cudaSuccess; 1 =
 * cudaErrorInvalidValue for arguments the launcher refuses); kvpatch_mla_error_string names it.
 * Pointers are device pointers unless they are outputs of the plan functions. `stream` is a
 * cudaStream_t (NULL: the legacy default stream). */
#ifndef KVPATCH_MLA_CAPI_H
#define KVPATCH_MLA_CAPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version this header describes. 3 added head_rows to the plans and the launch; 4 the
 * programmatic bit of kvpatch_mla_decode's mode; 5 kvpatch_mla_error_string and
 * kvpatch_mla_schedule. A caller checks kvpatch_mla_abi_version() >= the version it needs. */
#define KVPATCH_MLA_ABI_VERSION 5

/* kv_dtype values (kvpatch::mla::KvDtype). */
#define KVPATCH_MLA_KV_FP8_E4M3 0
#define KVPATCH_MLA_KV_BF16 1

/* kvpatch_mla_decode's mode: one of the first three, optionally OR-ed with the programmatic bit. */
#define KVPATCH_MLA_MODE_DECODE 0         /* launch_decode: makes a length-aware plan's split table itself */
#define KVPATCH_MLA_MODE_SCHEDULE_READY 1 /* launch_decode with the table already made this step */
#define KVPATCH_MLA_MODE_SCHEDULE_ONLY 2  /* launch_decode_schedule: the table alone */
#define KVPATCH_MLA_MODE_PROGRAMMATIC 4   /* a programmatic dependent launch (PDL) */

int kvpatch_mla_abi_version(void);

/* The CUDA runtime's name for a code this library returned (static storage). */
const char* kvpatch_mla_error_string(int code);

/* plan_decode: the plan for a batch shape. num_splits 0 with blocks > 0 is a length-aware plan
 * (its split table made on the device from kv_len); workspace_bytes of device memory go to every
 * launch with this plan. Returns 0. */
int kvpatch_mla_plan(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits, int* blocks,
                     size_t* workspace_bytes, int* head_rows);

/* plan_decode_uniform: the same number of splits for every request (the benchmark's baseline). */
int kvpatch_mla_plan_uniform(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits,
                             size_t* workspace_bytes, int* head_rows);

/* The workspace a uniform plan with num_splits splits needs. */
size_t kvpatch_mla_workspace_bytes(int batch, int num_heads, int num_splits);

/* One decode launch (DecodeParams, kvpatch/mla_decode.h): q_nope [B, H, 512] and q_pe [B, H, 64]
 * BF16; ckv and kpe the latent (512) and rope (64) views of the KV slots, FP8 E4M3 bytes or BF16,
 * strides in elements; kv_indptr [B + 1] and kv_indices (page ids; may be NULL when every request
 * is empty) and kv_len [B] int32; real KV = stored x ckv_scale / kpe_scale; out [B, H, 512] BF16;
 * lse [B, H] float, base 2, or NULL. The plan's four fields as kvpatch_mla_plan returned them. */
int kvpatch_mla_decode(const void* q_nope, long long q_nope_stride_b, long long q_nope_stride_h, const void* q_pe,
                       long long q_pe_stride_b, long long q_pe_stride_h, const void* ckv, long long ckv_stride_slot,
                       const void* kpe, long long kpe_stride_slot, int kv_dtype, const int* kv_indptr,
                       const int* kv_indices, const int* kv_len, int batch, int num_heads, int page_size,
                       float sm_scale, float ckv_scale, float kpe_scale, void* out, long long out_stride_b,
                       long long out_stride_h, float* lse, int num_splits, int blocks, int head_rows,
                       size_t workspace_bytes, void* workspace, int mode, void* stream);

/* launch_decode_schedule for a length-aware plan (num_splits 0): the split table for the current
 * kv_len, made once per decode step; the step's launches then pass KVPATCH_MLA_MODE_SCHEDULE_READY. */
int kvpatch_mla_schedule(const int* kv_indptr, const int* kv_len, int batch, int num_heads, int blocks, int head_rows,
                         size_t workspace_bytes, void* workspace, void* stream);

/* The cast path of the original bug, for comparisons: n FP8 E4M3 bytes to BF16, exactly. */
int kvpatch_mla_cast_fp8_to_bf16(const void* src, void* dst, size_t n, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* KVPATCH_MLA_CAPI_H */
