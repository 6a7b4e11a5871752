#!/usr/bin/env bash
# Online learning against random MD frames at the same CP2K budget, on silicon from the 38 shipped frames
# (docs/benchmarks.md, "Online learning"; docs/online-learning.md, the tutorial):
#   1. runs/learn-hot:    held-out frames, NVT MD at 1500 K labelled by CP2K (configs/learn/si_hot.json)
#   2. runs/learn-si:     the loop, frames chosen by the ensemble's force deviation (configs/learn/si_loop.json)
#   3. runs/learn-random: the same exploration and budget, frames drawn at random (configs/learn/si_random.json)
#   4. runs/learn-kalman: the loop with one model, frames chosen by its Kalman sigma (configs/learn/si_kalman.json)
#   5. the curves: held-out force and energy RMSE against CP2K frames labelled (markdown table on stdout,
#      docs/learn-si-benchmark.svg, docs/learn-si-iterations.svg)
#
#   bash bench/learn/si_loop_vs_random.sh [BUILD_DIR]       (from the repository root; resumable: run it again)
#   SEEDS="1 2 3" bash bench/learn/si_loop_vs_random.sh     replicates of steps 2 to 4 (deepkf learn --seed: other MD
#                                                            velocities and draws; seed 1 is the inputs' own)
#
# Needs cp2k.psmp (scripts/install_deps.sh) and the LAMMPS of scripts/build_lammps.sh in BUILD_DIR/lammps.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build=$(realpath "${1:-$root/build}")
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p runs
learn() {  # CONFIG NAME [deepkf learn options]
  local config=configs/learn/$1.json name=$2
  shift 2
  echo "== deepkf learn $config -o runs/$name $*" >&2
  local start=$SECONDS
  "$build/src/cli/deepkf" learn "$config" -o "runs/$name" "$@" > "runs/$name.out" 2>&1 ||
    { tail -20 "runs/$name.out" >&2; exit 1; }
  tail -6 "runs/$name.out" >&2
  echo "$name: $((SECONDS - start)) s wall (this start)" >&2
}
learn si_hot learn-hot
curves=()
for seed in ${SEEDS:-1}; do
  suffix=$([ "$seed" = 1 ] && echo "" || echo "-s$seed")
  label=$([ "$seed" = 1 ] && echo "" || echo " (seed $seed)")
  learn si_loop "learn-si$suffix" --seed "$seed"
  learn si_random "learn-random$suffix" --seed "$seed"
  learn si_kalman "learn-kalman$suffix" --seed "$seed"
  curves+=("model deviation$label=runs/learn-si$suffix/iterations.jsonl"
           "random frames$label=runs/learn-random$suffix/iterations.jsonl"
           "Kalman sigma, 1 model$label=runs/learn-kalman$suffix/iterations.jsonl")
done
"$build/bench/learn/bench_learn_curves" docs/learn-si-benchmark.svg "${curves[@]}"
cp runs/learn-si/iterations.svg docs/learn-si-iterations.svg
