# shellcheck shell=bash
# GPU machine, sourced (not run) at the start of a call that carries .whl:
#   source kernels/bench/flashinfer_env.sh && python3 kernels/bench/bench_decode.py ...
# Makes the wheels of kernels/bench/flashinfer_wheels.sh importable; the machine has no network, so
# they go in with --no-index, and --no-deps because only apache-tvm-ffi of flashinfer's requirements
# is missing there and needed. Without them bench_decode.py records why FlashInfer was not run.
_fi_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if ! compgen -G "$_fi_root/.whl/flashinfer_python-*.whl" >/dev/null; then
  echo "flashinfer: skipped, no .whl/flashinfer_python-*.whl (run kernels/bench/flashinfer_wheels.sh on the developer machine and carry .whl)"
elif ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$_fi_root"/.whl/*.whl; then
  echo "flashinfer: skipped, installing .whl/*.whl into /tmp/site failed (pip's error above)"
else
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  # Modules prebuilt on the developer machine go where flashinfer loads AOT modules before any JIT.
  if [[ -d "$_fi_root/.whl/flashinfer-aot" ]]; then
    mkdir -p /tmp/site/flashinfer/data/aot && cp -r "$_fi_root/.whl/flashinfer-aot/." /tmp/site/flashinfer/data/aot/
  fi
  # JIT cache and generated sources under /tmp, not $HOME; sm_90a only (this version reads
  # FLASHINFER_CUDA_ARCH_LIST, not TORCH_CUDA_ARCH_LIST), so a JIT build compiles one target.
  export FLASHINFER_WORKSPACE_BASE=/tmp/flashinfer-ws FLASHINFER_CUDA_ARCH_LIST=9.0a
  export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
  export MAX_JOBS=${MAX_JOBS:-16}
  _fi_whl=("$_fi_root"/.whl/flashinfer_python-*.whl)
  echo "flashinfer: ${_fi_whl[0]##*/} in /tmp/site; prebuilt modules:" \
    "$(compgen -G '/tmp/site/flashinfer/data/aot/*/*.so' | wc -l) (else JIT with $CUDA_HOME/bin/nvcc, ~1 min each)"
fi
unset _fi_root _fi_whl
