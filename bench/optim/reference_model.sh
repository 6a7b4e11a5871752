#!/usr/bin/env bash
# DeePMD-kit's water reference model (examples/water/se_e2_a/input_torch.json: embedding [25, 50, 100],
# fitting [240, 240, 240], 1,014,182 weights) on the shared water data, trained by RLEKF and by Adam in one
# invocation: the log's step times and the validation force error on data_3 after the run.
#
#   bash bench/optim/reference_model.sh DEEPKF DATASETS_DIR OUT_DIR [STEPS] [ADAM_STEPS] [-- VARIANT...]
#
# VARIANT: a name=JSON pair of optimizer keys for one RLEKF run, e.g. 'sequential={"kf_update": "sequential",
# "force_noise": "none"}'; default: the joint update with the automatic force noise and the defaults
# (DeePMD-kit's LKF), as they ran on 2026-11-26 (docs/benchmarks.md, "Joint update"). The input is the
# example's own, with numb_steps, displays at the first and last step, the optimizer keys, validation on
# every frame of data_3 at the end, the end-of-run bias fit and uncertainty calibration off (they cost
# minutes and are not training). STEPS defaults to 20, ADAM_STEPS to 60. Prints one table row per run.
set -euo pipefail
deepkf=$(realpath "$1"); datasets=$(realpath "$2"); out=$3; steps=${4:-20}; adam_steps=${5:-60}
shift $(( $# < 5 ? $# : 5 ))
variants=()
if [ "${1:-}" = -- ]; then shift; variants=("$@"); fi
[ ${#variants[@]} -gt 0 ] ||
  variants=('joint={"kf_update": "joint", "force_noise": "auto"}' 'lkf={"kf_update": "sequential", "force_noise": "none"}')
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$out/work/data"
for d in data_0 data_1 data_2 data_3; do ln -sfn "$datasets/water/$d" "$out/work/data/$d"; done

run() {  # name, optimizer JSON, steps
  local name=$1 optimizer=$2 n=$3 dir="$out/work/$1"
  mkdir -p "$dir"
  python3 - "$root/tests/train/deepmd-kit-inputs/input_torch.json" "$dir/input.json" "$optimizer" "$n" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["optimizer"] = json.loads(sys.argv[3])
t = doc["training"]
t["numb_steps"], t["disp_freq"], t["save_freq"] = int(sys.argv[4]), int(sys.argv[4]), 1000000
t["change_bias_after_training"], t["calibration_frames"] = False, 0
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
  (cd "$dir" && "$deepkf" train input.json -o . --no-progress > stdout 2>&1)
  local per_step f split
  # Time inside the training steps (lcurve.out's step_s, the last column) between the first and the last
  # display (steps 1 and n: the set-up and the first step are not in it), per step.
  per_step=$(awk '!/^#/ { if (!s0) { s0 = $1; w0 = $NF } s = $1; w = $NF } END { printf "%.3f", (w - w0) / (s - s0) }' "$dir/lcurve.out")
  f=$(grep 'validation on all' "$dir/train.log" | sed -E 's/.*rmse_f ([^ ]*) eV\/A.*/\1/')
  split=$(grep -oE 'Kalman filter [0-9.e+-]+ s \([0-9]+%, [0-9.]+ updates\), model [0-9.e+-]+ s' "$dir/train.log" | tail -1 || true)
  printf "| %s | %d | %s | %s | %s |\n" "$name" "$n" "$per_step" "$f" "${split:--}"
  rm -f "$dir/model.ckpt"  # the final checkpoint: 19 GiB of covariance per RLEKF run
}

echo "| run | steps | s per step | val rmse_f on data_3 (eV/A) | RLEKF step split (whole run) |"
echo "|---|---:|---:|---:|---|"
for v in "${variants[@]}"; do
  name=${v%%=*}; keys=${v#*=}; [ -n "$keys" ] || keys='{}'
  run "$name" "$(python3 -c 'import json,sys; d = json.loads(sys.argv[1]); d.update({"type": "RLEKF", "log_filter": True}); print(json.dumps(d))' "$keys")" "$steps"
done
run adam '{"type": "Adam"}' "$adam_steps"
