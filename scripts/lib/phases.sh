# Sourced by .ci/run and scripts/test: `phase NAME command…` runs a command as
# a named phase and returns its status, and when the script ends (also on
# failure) a table of every phase's time is printed, failed phases marked. CI has a
# fixed budget: the table says where it went.

_phase_names=()
_phase_seconds=()
_phase_failed=()
_phase_current=""
_phase_started=0

phase() {
  _phase_current=$1
  _phase_started=$SECONDS
  shift
  local status=0
  "$@" || status=$?
  _phase_names+=("$_phase_current")
  _phase_seconds+=($((SECONDS - _phase_started)))
  if ((status != 0)); then
    _phase_failed+=("$_phase_current")
  fi
  _phase_current=""
  return "$status"
}

_phase_line() {
  printf '  %-52s %3dm%02ds%s\n' "$1" $(($2 / 60)) $(($2 % 60)) "${3:-}" >&2
}

_phase_report() {
  echo >&2
  echo "phase times ($1):" >&2
  local i
  for i in "${!_phase_names[@]}"; do
    local mark=""
    if [[ " ${_phase_failed[*]} " == *" ${_phase_names[$i]} "* ]]; then
      mark="  (failed)"
    fi
    _phase_line "${_phase_names[$i]}" "${_phase_seconds[$i]}" "$mark"
  done
  if [[ -n $_phase_current ]]; then
    _phase_line "$_phase_current" $((SECONDS - _phase_started)) "  (failed)"
  fi
  _phase_line "total" "$SECONDS"
  # A full disk fails in odd places (pip, the linker): say how much was left.
  echo "free disk at the end: $(df -h --output=avail . 2>/dev/null | tail -1 | tr -d ' ')" >&2
}

trap '_phase_report "$(basename "$0")"' EXIT
