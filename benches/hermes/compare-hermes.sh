#!/usr/bin/env bash
# Side-by-side benchmark of Talaria and Hermes Agent on the same scripted work.
# Installs Hermes into target/bench/hermes-venv, builds Talaria and the scripted
# model server, runs every scenario on both and writes benches/hermes/RESULTS.md.
# Options: benches/hermes/compare-hermes.sh --help; details: benches/hermes/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 benches/hermes/compare_hermes.py "$@"
