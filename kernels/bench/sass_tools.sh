# shellcheck shell=bash
# Developer machine, sourced (not run): puts cuobjdump and nvdisasm on PATH for sass_loops.py when
# the CUDA toolkit here has only nvcc and ptxas. Both come from NVIDIA's PyPI wheels
# (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), unpacked once into .cache/sass-tools:
#   source kernels/bench/sass_tools.sh && python3 kernels/bench/sass_loops.py BASE.cubin NEW.cubin
_st_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.cache/sass-tools
if ! command -v cuobjdump >/dev/null || ! command -v nvdisasm >/dev/null; then
  for _st_pkg in nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; do
    if ! compgen -G "$_st_root/$_st_pkg/nvidia/*/bin/*" >/dev/null; then
      mkdir -p "$_st_root/$_st_pkg" &&
        python3 -m pip download -q --no-deps -d "$_st_root/wheels" "$_st_pkg" &&
        python3 -m zipfile -e "$(compgen -G "$_st_root/wheels/${_st_pkg//-/_}-*.whl" | head -1)" "$_st_root/$_st_pkg" ||
        echo "sass_tools.sh: could not fetch $_st_pkg from PyPI (pip's error above)"
    fi
    for _st_bin in "$_st_root/$_st_pkg"/nvidia/*/bin; do
      [[ -d "$_st_bin" ]] && chmod +x "$_st_bin"/* && PATH="$PATH:$_st_bin"
    done
  done
  export PATH
fi
if command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null; then
  echo "sass_tools.sh: $(command -v cuobjdump) and $(command -v nvdisasm)"
fi
unset _st_root _st_pkg _st_bin
