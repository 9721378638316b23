#!/usr/bin/env bash
# Installs, with apt-get, exactly the Debian 12 packages conform needs that are missing.
# Does nothing (and needs no network) when everything is present.
set -euo pipefail
PKGS=(cmake ninja-build clang-14 libclang-rt-14-dev rapidjson-dev libvalijson-dev libpcre2-dev
      libcli11-dev libfmt-dev catch2 libboost1.81-dev ccache make pkg-config git
      lld-14)  # lld-14: wasm-ld, for the nanopi test components (C -> wasm32)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js + the guest runners' npm packages (guest/*/package-lock.json): scripts/deps-node.sh.
node_deps() { if [ -f scripts/deps-node.sh ]; then bash scripts/deps-node.sh; fi; }
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PKGS[@]} packages present"
  node_deps
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
node_deps
