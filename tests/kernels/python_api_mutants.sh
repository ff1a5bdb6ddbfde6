#!/usr/bin/env bash
# GPU machine, repo root, after device_run.sh built the library: mutants of kernels/python/kvpatch_mla.py,
# each of which python_api_test.py must fail (exit 1), so the test is known to catch them.
set -u
lib=build-gpu/kernels/libkvpatch_mla_capi.so
run_mutant() {  # name, sed expression
  rm -rf /tmp/mut && mkdir -p /tmp/mut/tests/kernels /tmp/mut/kernels/python
  cp tests/kernels/python_api_test.py /tmp/mut/tests/kernels/
  sed "$2" kernels/python/kvpatch_mla.py > /tmp/mut/kernels/python/kvpatch_mla.py
  if cmp -s kernels/python/kvpatch_mla.py /tmp/mut/kernels/python/kvpatch_mla.py; then echo "$1: sed changed nothing"; return; fi
  timeout 180 python3 /tmp/mut/tests/kernels/python_api_test.py --lib "$lib" > /tmp/mut/log 2>&1
  echo "$1: exit $? ($(grep -c '^FAIL' /tmp/mut/log) FAIL lines; last: $(tail -1 /tmp/mut/log))"
}
run_mutant "no split table in plan()" 's/if plan\[0\] == 0 and batch:/if False:/'
run_mutant "a capture not remembered (plan() free to change it)" 's/if torch.cuda.is_current_stream_capturing():/if False:/'
run_mutant "scales swapped" 's/float(ckv_scale),$/float(kpe_scale),/; s/^\(\s*\)float(kpe_scale), out.data_ptr()/\1float(ckv_scale), out.data_ptr()/'
run_mutant "rope view's slot stride taken from the latent view" 's/kpe_cache.data_ptr(), kpe_stride,/kpe_cache.data_ptr(), ckv_stride,/'
# Equivalent (must pass): without the flag, the launch makes its own split table.
run_mutant "schedule-ready flag dropped" 's/(_MODE_SCHEDULE_READY if splits == 0 else 0)/0/'
