#!/usr/bin/env bash
# Installs the Debian packages the patcher builds against, and any named as arguments (scripts/test.sh
# adds shellcheck and clang-tidy for the lint.shell and lint.cpp tests); skips apt when all are present.
set -euo pipefail
packages=(cmake ninja-build g++ git python3 python3-pip
          libtree-sitter-dev libgit2-dev doctest-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
          libpugixml-dev
          pkgconf "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "kvpatch set-up: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
