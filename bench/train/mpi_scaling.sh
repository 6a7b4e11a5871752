#!/usr/bin/env bash
# Strong scaling of data-parallel RLEKF training: bench_train_mpi at 1 rank and at each rank count given
# (default 2), same global batch, the cores shared among the ranks (torch threads per rank = cores / R).
# Prints each run's report and a table: time per training step and per Kalman step, speed-up, per-rank
# efficiency T1 / (R T_R), and bytes sent per training step against the model of docs/mpi.md. With the cores
# shared (the default), one rank already uses every core by threads: the speed-up is then the gain of ranks
# over threads on the same cores, and T1 / (R T_R) is not an efficiency per core.
#
# DEEPKF_BENCH_THREADS=t in the environment fixes t torch threads per rank instead.
#
# usage: bench/train/mpi_scaling.sh [BUILD_DIR (build)] [STEPS (8)] [BATCH (4)] [BLOCKSIZE (1024)] [RANKS... (2)]
set -euo pipefail
build=${1:-build}
steps=${2:-8}
batch=${3:-4}
blocksize=${4:-1024}
shift $(( $# < 4 ? $# : 4 ))
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(2)
bench=$build/bench/train/bench_train_mpi
if [ ! -x "$bench" ]; then
  echo "no $bench: cmake --build $build --target bench_train_mpi" >&2
  exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# OpenBLAS keeps its own thread pool beside torch's: one thread each, torch sets its own count.
export OPENBLAS_NUM_THREADS=1

results=()
for r in 1 "${ranks[@]}"; do
  echo "=== $r rank(s): mpiexec -n $r --bind-to none $bench $steps $batch $blocksize"
  # A failed run is reported with its output (the log lines of the training left out) and leaves no row.
  status=0
  out=$(mpiexec -n "$r" --oversubscribe --bind-to none "$bench" "$steps" "$batch" "$blocksize" 2>&1) || status=$?
  grep -v '^\[20' <<<"$out" || true
  [ "$status" -ne 0 ] && echo "=== $r rank(s): mpiexec exited with status $status"
  results+=("$(grep '^RESULT' <<<"$out" || true)")
done

field() { sed -n "s/.* $2 \([^ ]*\).*/\1/p" <<<"$1"; }
t1=$(field "${results[0]}" step_ms)
if [ -z "$t1" ]; then
  echo "no result at 1 rank: no scaling table" >&2
  exit 1
fi
echo
if [ -z "${DEEPKF_BENCH_THREADS:-}" ]; then
  echo "(the cores shared among the ranks: speed-up = ranks against threads on the same cores)"
fi
echo "| ranks | training step ms | Kalman step ms | filter update ms | speed-up | parallel efficiency | bytes / training step (measured) | model | transfer ms / step | wait ms / step | collectives of a Kalman step alone, ms | CPU ms / step outside collectives, busiest rank |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
i=0
for r in 1 "${ranks[@]}"; do
  line=${results[$i]}
  i=$((i + 1))
  [ -z "$line" ] && continue
  t=$(field "$line" step_ms)
  awk -v r="$r" -v t="$t" -v t1="$t1" -v k="$(field "$line" kalman_step_ms)" -v f="$(field "$line" filter_ms)" \
      -v b="$(field "$line" bytes_per_step)" -v m="$(field "$line" model_bytes_per_step)" \
      -v tr="$(field "$line" transfer_ms_per_step)" -v w="$(field "$line" wait_ms_per_step)" \
      -v c="$(field "$line" collectives_alone_ms)" -v u="$(field "$line" work_cpu_ms_per_step)" \
      'BEGIN { printf "| %d | %.1f | %.1f | %.1f | %.2f | %.0f%% | %.0f | %.0f | %.2f | %.2f | %.3f | %.1f |\n", r, t, k, f, t1 / t, 100 * t1 / (r * t), b, m, tr, w, c, u }'
done
