#!/usr/bin/env bash
# Node.js + npm (for the guest runners, docs/guest-protocol.md) and every guest/*/package-lock.json
# installed with `npm ci --omit=optional` (slim: NANOPI-HOST.md §4 — the optional native binaries are
# not needed to transpile or host components). Called by scripts/deps.sh.
# Fast no-op when done: a stamp in each node_modules records the lock file's hash and node's version.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_MIN_MAJOR=18   # docs/guest-protocol.md "Node ≥ 18" (worker_threads, Atomics.wait, node:test)

die() { echo "deps-node: ERROR: $*" >&2; exit 1; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "deps-node: installing nodejs npm (Debian packages)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm \
    || die "could not install nodejs/npm with apt-get; install Node.js >= ${NODE_MIN_MAJOR} and npm by hand"
fi
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$major" -ge "$NODE_MIN_MAJOR" ] || die "node $(node --version 2>/dev/null) is too old: the guest runners need Node >= ${NODE_MIN_MAJOR}"
# jco-transpile 0.15's own dependencies declare node >= 20 (Debian 12's nodejs is 18): say so, go on.
if [ "$major" -lt 20 ]; then
  echo "deps-node: WARNING: node $(node --version) — the nanopi runner is tested on Node 20; jco-transpile's dependencies declare >= 20"
fi

shopt -s nullglob
for lock in guest/*/package-lock.json; do
  dir=$(dirname "$lock")
  stamp="$dir/node_modules/.conform-deps-stamp"
  want="$(sha256sum "$lock" | cut -d' ' -f1) node-$(node --version)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "deps-node: $dir up to date"
    continue
  fi
  echo "deps-node: npm ci in $dir"
  if ! (cd "$dir" && npm ci --omit=optional --no-audit --no-fund --loglevel=error); then
    die "npm ci failed in $dir (is the npm registry reachable? see npm's log above)"
  fi
  echo "$want" > "$stamp"
done
