#!/usr/bin/env bash
# Side-by-side benchmark of Talaria and Hermes Agent on the same scripted work.
# Installs Hermes into target/bench/hermes-venv, builds Talaria and the scripted
# model server, runs every scenario on both and writes bench/RESULTS.md.
# Options: bench/compare-hermes.sh --help; details: bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/compare_hermes.py "$@"
