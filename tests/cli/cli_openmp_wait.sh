#!/usr/bin/env bash
# The deepkf command bounds how long idle OpenMP threads spin (src/core/OpenMpWait.hpp): GOMP_SPINCOUNT 1000
# when the environment sets neither it nor OMP_WAIT_POLICY, the user's setting otherwise; the training log
# says which, and the arguments survive the re-execution. OpenBLAS's pthreads build runs its products on one
# thread unless OPENBLAS_NUM_THREADS says otherwise (checked where that is the BLAS LibTorch loads).
# Usage: cli_openmp_wait.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-omp.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"

cat >"$work/input.json" <<JSON
{"model": {"type_map": ["Si"],
           "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                          "axis_neuron": 2},
           "fitting_net": {"neuron": [8]}},
 "optimizer": {"type": "Adam"},
 "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5"]},
              "numb_steps": 1, "disp_freq": 1, "save_freq": 1, "num_threads": 1}}
JSON
check() {  # NAME EXPECTED ENV...: EXPECTED is text the training log's thread line must hold
  local name=$1 expected=$2
  shift 2
  rm -rf "$work/run"
  env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS "$@" "$deepkf" train \
    "$work/input.json" -o "$work/run" --no-progress >"$work/out" 2>&1 ||
    { fail "$name: exit status $?: $(tail -3 "$work/out")"; return; }
  if grep -F -q "$expected" "$work/run/train.log"; then
    ok "$name: $expected"
  else
    fail "$name: no '$expected' in: $(grep 'threads per rank' "$work/run/train.log")"
  fi
}
check "neither variable set: bounded" "(idle threads: GOMP_SPINCOUNT 1000)"
check "the user's spin count wins" "(idle threads: GOMP_SPINCOUNT 5)" GOMP_SPINCOUNT=5
check "the user's wait policy wins" "(idle threads: OMP_WAIT_POLICY passive)" OMP_WAIT_POLICY=passive
if grep -F -q "matrix products: OpenBLAS (pthreads)" "$work/run/train.log"; then
  check "OpenBLAS's pthreads pool: one thread" "matrix products: OpenBLAS (pthreads) 1 thread,"
  check "the user's OpenBLAS thread count wins" "matrix products: OpenBLAS (pthreads) 2 threads," \
    OPENBLAS_NUM_THREADS=2
else
  echo "SKIP: LibTorch's BLAS here is not OpenBLAS's pthreads build ($(grep -o 'matrix products: [^,]*' \
    "$work/run/train.log")): its thread count is left as it is"
fi
[ "$failures" -eq 0 ] || exit 1
