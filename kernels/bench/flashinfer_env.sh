# shellcheck shell=bash
# GPU machine, sourced (not run) at the start of a call that carries .whl:
#   source kernels/bench/flashinfer_env.sh && python3 kernels/bench/bench_decode.py ...
# Makes what kernels/bench/flashinfer_wheels.sh fetched importable from /tmp/site: the machine has no
# network, so wheels go in with --no-index, and --no-deps because only apache-tvm-ffi of flashinfer's
# requirements is missing there and needed. A release whose wheel is over the transfer limit comes as
# its wheel's files in a .tar.xz (pure Python: unpacking them is installing them). Without any of
# this, bench_decode.py records why FlashInfer was not run.
_fi_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
_fi_from=$(compgen -G "$_fi_root/.whl/flashinfer_python-*.whl" || compgen -G "$_fi_root/.whl/flashinfer_python-*.tar.xz" || true)
_fi_from=${_fi_from%%$'\n'*}
if [[ -z "$_fi_from" ]]; then
  echo "flashinfer: skipped, no .whl/flashinfer_python-*.whl or -*.tar.xz (run kernels/bench/flashinfer_wheels.sh on the developer machine and carry .whl)"
elif ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$_fi_root"/.whl/*.whl; then
  echo "flashinfer: skipped, installing .whl/*.whl into /tmp/site failed (pip's error above)"
elif [[ "$_fi_from" == *.tar.xz ]] && ! { rm -rf /tmp/site/flashinfer /tmp/site/flashinfer_python-*.dist-info &&
    tar -xJf "$_fi_from" -C /tmp/site; }; then
  echo "flashinfer: skipped, unpacking ${_fi_from##*/} into /tmp/site failed (tar's error above)"
else
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  # Modules prebuilt on the developer machine go where flashinfer loads AOT modules before any JIT.
  if [[ -d "$_fi_root/.whl/flashinfer-aot" ]]; then
    mkdir -p /tmp/site/flashinfer/data/aot && cp -r "$_fi_root/.whl/flashinfer-aot/." /tmp/site/flashinfer/data/aot/
  fi
  # JIT cache and generated sources under /tmp, not $HOME; sm_90a only (flashinfer reads
  # FLASHINFER_CUDA_ARCH_LIST, not TORCH_CUDA_ARCH_LIST), so a JIT build compiles one target.
  export FLASHINFER_WORKSPACE_BASE=/tmp/flashinfer-ws FLASHINFER_CUDA_ARCH_LIST=9.0a
  export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
  export MAX_JOBS=${MAX_JOBS:-16}
  echo "flashinfer: ${_fi_from##*/} in /tmp/site; prebuilt modules:" \
    "$(compgen -G '/tmp/site/flashinfer/data/aot/*/*.so' | wc -l) (else JIT with $CUDA_HOME/bin/nvcc, ~1 min each)"
fi
unset _fi_root _fi_from
