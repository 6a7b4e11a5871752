# Checks shared by the command-line test scripts (sourced): ok, fail, expect and expect_error, counting
# failures in $failures and writing scratch output into $work (set by the script).
failures=${failures:-0}

fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}

ok() { echo "ok: $*"; }

# expect_error NAME EXPECTED_TEXT COMMAND...: status 1, the expected text on the error line, no internal error.
expect_error() {
  local name=$1 expected=$2
  shift 2
  "$@" >"$work/out" 2>&1
  local rc=$?
  if [ $rc -ne 1 ]; then
    fail "$name: exit status $rc, expected 1: $(tail -3 "$work/out")"
  elif grep -q "internal error" "$work/out"; then
    fail "$name: internal error: $(grep "internal error" "$work/out")"
  elif ! grep -F -q -- "$expected" "$work/out"; then
    fail "$name: no '$expected' in: $(tail -3 "$work/out")"
  else
    ok "$name: $(grep "deepkf: error" "$work/out" | head -1)"
  fi
}

# expect NAME EXPECTED_TEXT COMMAND...: status 0 and the expected text in the output.
expect() {
  local name=$1 expected=$2
  shift 2
  "$@" >"$work/out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    fail "$name: exit status $rc: $(tail -3 "$work/out")"
  elif ! grep -F -q -- "$expected" "$work/out"; then
    fail "$name: no '$expected' in: $(tail -5 "$work/out")"
  else
    ok "$name"
  fi
}
