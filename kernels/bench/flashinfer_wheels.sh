#!/usr/bin/env bash
# Developer machine: fetch the FlashInfer release that bench_decode.py's fi_fp8 / fi_bf16 columns need
# into the git-ignored .whl/, for the GPU machine (no network there; at most 64 MiB travels per call,
# work tree included). Then, on the GPU machine: `source kernels/bench/flashinfer_env.sh`.
#
# Which release (FI_VERSION, default 0.7.4):
#   0.7.4        the newest on PyPI (2026-11-30). Its wheel is 101 MB, over the limit, so it does not
#                travel as a wheel: its files (717 MB unpacked, mostly JIT sources and headers that
#                repeat) travel as .whl/flashinfer_python-0.7.4.tar.xz, ~23 MB. The wheel is pure
#                Python (py3-none-any, no .data), so unpacking it into a site folder is what pip's
#                install would do; flashinfer_env.sh does that. xz takes ~3 min on 2 cores, once.
#   0.7.0.post1  the newest whose wheel fits as it is (33.7 MB; 0.7.1 to 0.7.2.post1 are 62 MB or more).
# Both take FP8 E4M3 KV with a BF16 query in the fa3 MLA path on SM90. Of their requirements only
# apache-tvm-ffi is missing from the GPU image and needed: `import flashinfer` and the MLA wrapper
# load without nvidia-cutlass-dsl, nvidia-cudnn-frontend, cuda-tile, nccl4py or cuda-python.
#
# Optional: FI_PREBUILD_PYTHON=/path/to/python3.12-with-torch-2.11 also compiles the two fa3 MLA modules
# (BF16 q; FP8 and BF16 KV) for sm_90a with this machine's nvcc (13.0, as on the GPU machine) into
# .whl/flashinfer-aot/, which flashinfer_env.sh drops where flashinfer looks for AOT modules. That
# saves the ~1-2 min first-use JIT build on the GPU machine; if a prebuilt module fails to load,
# flashinfer falls back to JIT-building it there.
#
# Usage (repo root): [FI_VERSION=0.7.0.post1] bash kernels/bench/flashinfer_wheels.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/.whl"
mkdir -p "$dest"

# name==version and sha256 of each wheel, as PyPI served them (0.7.0.post1 and tvm-ffi on 2026-11-29,
# 0.7.4 on 2026-11-30); packed=1: the wheel's files travel as a .tar.xz instead.
version=${FI_VERSION:-0.7.4}
case "$version" in
  0.7.4)
    fi_pin="flashinfer-python==0.7.4 --hash=sha256:a051a62e09a2738e8b0de47a1944fd2f0f3eff01b728b662141ea660cb09dd32"
    packed=1 ;;
  0.7.0.post1)
    fi_pin="flashinfer-python==0.7.0.post1 --hash=sha256:c7adf826568d61fc1b7d3aadd4cae387a35a138bfc08e2deca2f34ecfa280716"
    packed=0 ;;
  *) echo "FI_VERSION=$version: this script knows 0.7.4 and 0.7.0.post1" >&2; exit 2 ;;
esac
fi_wheel="flashinfer_python-$version-py3-none-any.whl"
fi_packed="flashinfer_python-$version.tar.xz"
ffi_pin="apache-tvm-ffi==0.1.15.post2 --hash=sha256:059eed9bfc94bcd41650fb8eefde74040a1bc7e7b1a6f0a8ff897b02b118875b"
ffi_wheel="apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
fi_carried=$([[ $packed == 1 ]] && echo "$fi_packed" || echo "$fi_wheel")

# Modules prebuilt for another flashinfer would be loaded as if they were this one's.
if [[ -d "$dest/flashinfer-aot" && "$(cat "$dest/flashinfer-aot/built-for" 2>/dev/null)" != "$fi_carried" ]]; then
  echo "removing .whl/flashinfer-aot (not built for $fi_carried)"; rm -rf "$dest/flashinfer-aot"
fi
# Two versions of one package in .whl/ would stop the GPU machine's install.
for f in "$dest"/flashinfer_python-* "$dest"/apache_tvm_ffi-*.whl; do
  [[ -e "$f" ]] || continue
  case "$(basename "$f")" in "$fi_carried" | "$fi_carried.sha256" | "$ffi_wheel") ;; *)
    echo "removing other version $(basename "$f")"; rm -f "$f" ;;
  esac
done

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
want_sha() { echo "${1##*sha256:}"; }
# pip checks the hashes of what it downloads; each file is checked again on disk below (one kept from
# before). The GPU machine's interpreter: CPython 3.12, x86-64, manylinux, whatever runs pip here.
download() {  # download PIN FILE DIR
  [[ -f "$3/$2" && "$(sha256sum "$3/$2" | cut -d' ' -f1)" == "$(want_sha "$1")" ]] && return 0
  printf '%s\n' "$1" >"$work/req.txt"
  python3 -m pip download -q --no-deps --require-hashes -r "$work/req.txt" -d "$3" \
    --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64
  [[ "$(sha256sum "$3/$2" | cut -d' ' -f1)" == "$(want_sha "$1")" ]] ||
    { echo "sha256 mismatch: $2" >&2; rm -f "$3/$2"; exit 1; }
}
download "$ffi_pin" "$ffi_wheel" "$dest"

# The wheel's files, for the prebuild (pure Python: unpacked is installed).
site="$work/site"
if [[ $packed == 0 ]]; then
  download "$fi_pin" "$fi_wheel" "$dest"
  fi_from="$dest/$fi_wheel"
# A packed copy is remade only when it was not made from this very wheel (its .sha256 says which).
elif [[ -f "$dest/$fi_packed" && "$(cat "$dest/$fi_packed.sha256" 2>/dev/null)" == "$(want_sha "$fi_pin")" ]]; then
  echo "$fi_packed: already made from the pinned wheel"
  fi_from=""
else
  download "$fi_pin" "$fi_wheel" "$work"
  fi_from="$work/$fi_wheel"
  mkdir -p "$site"
  python3 -m zipfile -e "$fi_from" "$site"
  [[ -z "$(compgen -G "$site/*.data")" ]] || { echo "$fi_wheel has a .data folder: unpacking is not installing" >&2; exit 1; }
  echo "packing $fi_wheel's files into .whl/$fi_packed (xz, a few minutes)"
  rm -f "$dest/$fi_packed.sha256"
  tar -C "$site" -cf - . | xz -9 -T0 >"$dest/$fi_packed.partial"
  mv "$dest/$fi_packed.partial" "$dest/$fi_packed"
  want_sha "$fi_pin" >"$dest/$fi_packed.sha256"
fi

if [[ -n "${FI_PREBUILD_PYTHON:-}" ]]; then
  nvcc_bin="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  "$nvcc_bin" --version | grep -q "release 13.0" ||
    echo "warning: $nvcc_bin is not CUDA 13.0 (the GPU machine's toolkit and driver are 13.0)" >&2
  if [[ ! -d "$site" ]]; then
    mkdir -p "$site"
    if [[ -n "$fi_from" ]]; then python3 -m zipfile -e "$fi_from" "$site"; else tar -xJf "$dest/$fi_packed" -C "$site"; fi
  fi
  "$FI_PREBUILD_PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$dest/$ffi_wheel"
  rm -rf "$dest/flashinfer-aot"; mkdir -p "$dest/flashinfer-aot"
  # flashinfer's own JIT (its nvcc flags, -gencode sm_90a) in a throw-away cache; only the .so files are kept.
  PATH="$(dirname "$FI_PREBUILD_PYTHON"):$PATH" PYTHONPATH="$site" FLASHINFER_WORKSPACE_BASE="$work/ws" \
    FLASHINFER_CUDA_ARCH_LIST=9.0a CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    "$FI_PREBUILD_PYTHON" - "$dest/flashinfer-aot" <<'EOF'
import shutil, sys, time
from pathlib import Path
import torch
from flashinfer.jit import gen_batch_mla_module
for kv in (torch.float8_e4m3fn, torch.bfloat16):
    spec = gen_batch_mla_module("fa3", torch.bfloat16, kv, torch.bfloat16, torch.int32, 512, 64, False)
    t = time.time()
    spec.build()
    out = Path(sys.argv[1]) / spec.name
    out.mkdir()
    shutil.copy2(spec.jit_library_path, out / f"{spec.name}.so")
    print(f"prebuilt {spec.name} ({time.time() - t:.0f} s)")
EOF
  echo "$fi_carried" >"$dest/flashinfer-aot/built-for"
fi

ls -l "$dest"
echo "total $(du -cb "$dest" | tail -1 | cut -f1) bytes in .whl/ (the GPU machine takes at most 64 MiB per call, work tree included)"
