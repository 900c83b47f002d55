#!/usr/bin/env bash
# Builds this JavaScript plugin with componentize-js into a package:
#   dist/<name>/plugin.toml + dist/<name>/plugin.wasm
#
# componentize-js (pinned: 0.23.0) is taken from ./node_modules (`npm install`)
# or from $TALARIA_TOOLCHAINS/npm/node_modules when TALARIA_TOOLCHAINS names a
# directory of shared toolchains. Needs node >= 20.
set -euo pipefail
cd "$(dirname "$0")"

componentize_js_version=0.23.0

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

if ! command -v node >/dev/null 2>&1; then
  echo "error: node not found: install Node.js 20 or later" >&2
  exit 1
fi
package_dir=
for dir in node_modules ${TALARIA_TOOLCHAINS:+"$TALARIA_TOOLCHAINS/npm/node_modules"}; do
  if [[ -f "$dir/@bytecodealliance/componentize-js/src/cli.js" ]]; then
    package_dir="$dir/@bytecodealliance/componentize-js"
    break
  fi
done
if [[ -z "$package_dir" ]]; then
  echo "error: componentize-js not found: run npm install here" >&2
  echo "       (or set TALARIA_TOOLCHAINS to a directory holding npm/node_modules/@bytecodealliance/componentize-js)" >&2
  exit 1
fi
found=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$package_dir/package.json")
if [[ "$found" != "$componentize_js_version" ]]; then
  echo "warning: componentize-js $found found; this template was tested with $componentize_js_version" >&2
fi

mkdir -p build
# fetch() stays (outgoing HTTP through wasi:http); the incoming handler is
# not used by a tool plugin.
node "$package_dir/src/cli.js" src/plugin.js --wit wit --world-name tool-plugin \
  --disable fetch-event --out build/plugin.wasm >/dev/null

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
