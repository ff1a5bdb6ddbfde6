/* The C ABI as a C program sees it: compiled as C against kvpatch/mla_capi.h and linked to
 * libkvpatch_mla_capi.so, so the header must be valid C and agree with the library. Host-side
 * behaviour only (plans, versions, refused launches), so it runs without a GPU. */
#include <stdio.h>
#include <string.h>

#include "kvpatch/mla_capi.h"

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

enum { kInvalidValue = 1 }; /* cudaErrorInvalidValue */

/* A launch with every pointer set but nothing behind them: only the launcher's host checks run. */
static int decode(int batch, int page_size, int num_splits, int blocks, size_t workspace_bytes, int mode) {
  static _Alignas(16) char dummy[64];
  void* p = dummy;
  return kvpatch_mla_decode(p, 16 * 512, 512, p, 16 * 64, 64, p, 576, p, 576, KVPATCH_MLA_KV_FP8_E4M3,
                            (const int*)p, (const int*)p, (const int*)p, batch, 16, page_size, 0.1f, 1.f, 1.f, p,
                            16 * 512, 512, NULL, num_splits, blocks, 16, workspace_bytes, p, mode, NULL);
}

int main(void) {
  CHECK(kvpatch_mla_abi_version() == KVPATCH_MLA_ABI_VERSION);
  const char* name = kvpatch_mla_error_string(kInvalidValue);
  CHECK(name != NULL && strstr(name, "invalid") != NULL);

  /* A small batch gets a length-aware plan (num_splits 0, a block count of at least one per request). */
  int splits = -1, blocks = -1, rows = -1;
  size_t workspace = 0;
  CHECK(kvpatch_mla_plan(4, 16, 4096, 132, &splits, &blocks, &workspace, &rows) == 0);
  CHECK(splits == 0 && blocks >= 4 && workspace > 0 && rows == 16);

  /* One long request, uniform: many splits, and the workspace the size function gives for them. */
  CHECK(kvpatch_mla_plan_uniform(1, 16, 131072, 132, &splits, &workspace, &rows) == 0);
  CHECK(splits > 1 && rows == 16);
  CHECK(workspace == kvpatch_mla_workspace_bytes(1, 16, splits));

  /* Refused on the host, before any device work: a page size that is not a power of two, a
   * schedule for a uniform plan, and a workspace smaller than the plan needs. */
  CHECK(decode(1, 3, splits, 0, workspace, KVPATCH_MLA_MODE_DECODE) == kInvalidValue);
  CHECK(decode(1, 1, splits, 0, workspace, KVPATCH_MLA_MODE_SCHEDULE_ONLY) == kInvalidValue);
  CHECK(decode(1, 1, splits, 0, 0, KVPATCH_MLA_MODE_DECODE | KVPATCH_MLA_MODE_PROGRAMMATIC) == kInvalidValue);
  CHECK(kvpatch_mla_schedule(NULL, NULL, 1, 16, 132, 16, workspace, NULL, NULL) == kInvalidValue);
  /* An empty batch is nothing to do. */
  CHECK(decode(0, 1, 1, 0, 0, KVPATCH_MLA_MODE_DECODE) == 0);

  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("C ABI header: all checks passed\n");
  return failures ? 1 : 0;
}
