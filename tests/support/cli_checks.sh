# Shared by the command-line test scripts (sourced): a failure counter and checks of one command's exit
# status and output. The script sets $work (a scratch folder) before calling them.
failures=0
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}

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
    echo "ok: $name: $(grep "deepkf: error" "$work/out" | head -1)"
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
    echo "ok: $name"
  fi
}
