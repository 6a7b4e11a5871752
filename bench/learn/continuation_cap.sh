#!/usr/bin/env bash
# The trainings of a `deepkf learn` run with one model (iteration 0 from scratch, then each later iteration
# continuing the filter on the grown data), replayed with optimizer.p_cap = CAP, each model tested on the
# held-out 1500 K frames (docs/benchmarks.md, "Bounded covariance").
#
#   bash bench/learn/continuation_cap.sh CAP OUT RUN [BUILD_DIR] [FIRST_CAP]
#     CAP        p_cap of the replay ("none" or a number)
#     RUN        a finished run of bench/learn/si_loop_vs_random.sh, e.g. runs/learn-random
#     FIRST_CAP  p_cap of iteration 0 only (default CAP): "none" caps only the continued trainings
# Prints the held-out force and energy RMSE of each iteration's model.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cap=$1 out=$2 run=$(realpath "$3")
build=$(realpath "${4:-$root/build}")
first_cap=${5:-$cap}
held_out="$root/runs/learn-hot/labels.h5#/iter.000"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
out=$(realpath "$out")
for dir in "$run"/iter.*/train/model_0; do
  it=$(basename "$(dirname "$(dirname "$dir")")")
  d=$out/$it
  mkdir -p "$d"
  c=$([ "$it" = iter.000 ] && echo "$first_cap" || echo "$cap")
  python3 - "$dir/input.json" "$d/input.json" "$c" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["optimizer"]["p_cap"] = "none" if sys.argv[3] == "none" else float(sys.argv[3])
doc["optimizer"]["log_filter"] = True
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
  cont=()
  [ -n "${previous:-}" ] && cont=(--continue "$previous/model.ckpt")
  [ -f "$d/model.pt" ] || (cd "$d" && "$build/src/cli/deepkf" train input.json -o . --no-progress "${cont[@]}" \
    > train.out 2>&1)
  "$build/src/cli/deepkf" test -m "$d/model.pt" -s "$held_out" -o "$d/test" > "$d/test.out" 2>&1
  echo "$it p_cap $c: held-out $(grep "all systems" "$d/test.out" | awk '{print "force", $6, "eV/A, energy", $4, "eV/atom"}')"
  previous=$d
done
