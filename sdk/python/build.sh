#!/usr/bin/env bash
# Builds this Python plugin with componentize-py into a package:
#   dist/<name>/plugin.toml + dist/<name>/plugin.wasm
#
# componentize-py (pinned: 0.25.1) is taken from $TALARIA_TOOLCHAINS/py/bin
# when TALARIA_TOOLCHAINS names a directory of shared toolchains, else from
# $PATH (`pip install componentize-py==0.25.1`).
set -euo pipefail
cd "$(dirname "$0")"

componentize_py_version=0.25.1

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

if [[ -n "${TALARIA_TOOLCHAINS:-}" && -x "$TALARIA_TOOLCHAINS/py/bin/componentize-py" ]]; then
  componentize_py="$TALARIA_TOOLCHAINS/py/bin/componentize-py"
elif command -v componentize-py >/dev/null 2>&1; then
  componentize_py=componentize-py
else
  echo "error: componentize-py not found: pip install componentize-py==$componentize_py_version" >&2
  echo "       (or set TALARIA_TOOLCHAINS to a directory holding py/bin/componentize-py)" >&2
  exit 1
fi
found=$("$componentize_py" --version 2>/dev/null | awk '{print $2}')
if [[ "$found" != "$componentize_py_version" ]]; then
  echo "warning: componentize-py $found found; this template was tested with $componentize_py_version" >&2
fi

# The WIT world to build: `world` under [tool.talaria] in pyproject.toml
# (the templates name their own, in wit/world.wit), else a tool plugin's.
world=$(sed -n '/^\[tool\.talaria\]/,/^\[/s/^world[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' pyproject.toml 2>/dev/null | head -n 1)
world=${world:-tool-plugin}

# Talaria's `types` interface stays `wit_world.imports.types` even in a world
# with another `types` (wasi:http's is then `wasi_http_types`).
api=$(manifest_value api)
names=()
if [[ -n "$api" ]]; then
  names=(--import-interface-name "talaria:plugin/types@$api=types")
fi

mkdir -p build
# Only this directory is the app's Python path: whatever virtualenv the
# toolchain lives in stays out of the component.
env -u VIRTUAL_ENV "$componentize_py" -d wit -w "$world" ${names[@]+"${names[@]}"} componentize app -p . -o build/plugin.wasm >/dev/null

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
