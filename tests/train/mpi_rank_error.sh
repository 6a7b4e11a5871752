#!/usr/bin/env bash
# `deepkf train` on 2 ranks where a data set is missing, must end with the message and a non-zero exit
# status well within a time limit (never hang):
#   1. only rank 1 is given the bad input (an MPMD launch: rank 0 trains from a good input);
#   2. both ranks are given the bad input.
# Usage: mpi_rank_error.sh DEEPKF MPIEXEC SOURCE_DIR. Exits 77 (skipped) without ../shared/datasets/si_mlearn.
set -u
deepkf=$1
mpiexec=$2
source_dir=$3
datasets=${DEEPKF_SHARED_DATASETS:-$source_dir/../shared/datasets}
si=$datasets/si_mlearn
if [ ! -d "$si" ]; then
  echo "skipped: dataset $si not found"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-mpi-rank-error.XXXXXX")
trap 'rm -rf "$work"' EXIT

write_input() {  # write_input FILE SYSTEM...
  local file=$1
  shift
  local systems
  systems=$(printf '"%s", ' "$@")
  cat >"$file" <<EOF
{
  "model": {
    "type_map": ["Si"],
    "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                   "axis_neuron": 4, "type_one_side": true, "seed": 3},
    "fitting_net": {"neuron": [16, 16], "seed": 3}
  },
  "optimizer": {"type": "LKF", "kf_blocksize": 512, "nselect": 6, "groupsize": 6},
  "training": {"training_data": {"systems": [${systems%, }], "batch_size": 2},
               "numb_steps": 2, "seed": 1, "disp_freq": 1000, "save_freq": 1000, "num_threads": 1}
}
EOF
}
write_input "$work/good.json" "$si/train/sys_Si16" "$si/train/sys_Si24"
write_input "$work/bad.json" "$si/train/sys_Si16" "$work/missing_system"

failures=0
check() {  # check NAME MPIEXEC-ARGS...
  local name=$1
  shift
  local start=$SECONDS
  timeout 150 "$mpiexec" "$@" >"$work/$name.log" 2>&1
  local status=$? elapsed=$((SECONDS - start))
  echo "--- $name: exit status $status after ${elapsed} s; output:"
  tail -n 15 "$work/$name.log"
  if [ "$status" -eq 0 ]; then
    echo "FAIL $name: the job succeeded"
    failures=$((failures + 1))
  elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "FAIL $name: the job hung (killed after 150 s)"
    failures=$((failures + 1))
  elif ! grep -q "missing_system" "$work/$name.log"; then
    echo "FAIL $name: the output does not name the missing data set"
    failures=$((failures + 1))
  else
    echo "ok $name"
  fi
}

train=(train --no-progress -o "$work/out")
check rank1-only -n 1 "$deepkf" "${train[@]}" "$work/good.json" : -n 1 "$deepkf" "${train[@]}" "$work/bad.json"
check both-ranks -n 2 "$deepkf" "${train[@]}" "$work/bad.json"

if [ "$failures" -ne 0 ]; then
  echo "$failures of 2 failed"
  exit 1
fi
echo "2 of 2 passed"
