#!/usr/bin/env bash
# Trains DeePMD-kit's water model for scripts/gpu_check.sh's `train` phase (it can run alone as well).
#
#   bash scripts/gpu_train_water.sh DEEPKF OUT_DIR DEVICE DRY     # DRY: 1 for a CPU dry run
#
# Reads the water data from $DEEPKF_SHARED_DATASETS/water; DEEPKF_GPU_TRAIN_RUNS and DEEPKF_GPU_TRAIN_SECONDS
# as gpu_check.sh documents them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# DEEPKF OUT DEVICE DRY: DeePMD-kit's water model (configs/water_se_e2_a.json: embedding
# [25, 50, 100], fitting [240, 240, 240]) trained on the shared water data for a fixed wall time with RLEKF,
# with a trust radius, with the joint update by share (energy 0.3, forces 0.1, p0_shape "gradient"), with the joint update and the
# automatic force noise, as DeePMD-kit's LKF (lkf), at the defaults (default: kf_update "auto", which takes
# the joint update with the large-model settings for this model, measured on a float32 copy of the model;
# default_f64: the same measured in float64, force gradients by difference), then with Adam
# (DeePMD-kit's own learning rate and loss from its example input); the learning curves
# (lcurve.out: validation RMSE and wall time every few steps) and logs go to OUT.
train_water() {
  local deepkf="$1" out="$2" device="$3" dry="$4"
  local water="${DEEPKF_SHARED_DATASETS:-}/water"
  if [ ! -d "$water/data_0" ]; then
    echo "no water data at $water: skipped"
    return 0
  fi
  local seconds="${DEEPKF_GPU_TRAIN_SECONDS:-50}"
  local work
  work="$(mktemp -d)"
  python3 - "$root/configs/water_se_e2_a.json" "$water" "$device" "$dry" "$work" <<'PY'
import json, sys
config, water, device, dry, work = sys.argv[1:]
doc = json.load(open(config))
t = doc["training"]
t["training_data"]["systems"] = [f"{water}/data_{k}" for k in range(3)]
t["validation_data"]["systems"] = [f"{water}/data_3"]
t.update({"numb_steps": 1000000, "disp_freq": 10, "save_freq": 1000000000})
doc["device"] = device
if dry == "1":
    doc["optimizer"]["kf_blocksize"] = 1024  # the reference blocksize's 19 GiB covariance fits no CPU here
doc["optimizer"]["log_filter"] = True  # each display line: the filter's state and the step time split
# The joint update with the automatic force noise (docs/rlekf.md).
joint = json.loads(json.dumps(doc))
joint["optimizer"].update({"kf_update": "joint", "force_noise": "auto"})
json.dump(joint, open(f"{work}/rlekf.json", "w"), indent=1)
# The joint update with noise by share and the per-weight initial covariance (docs/rlekf.md): the variant
# whose forces fell first on the CPU (docs/benchmarks.md, "Forces from the first step").
shares = json.loads(json.dumps(doc))
shares["optimizer"].update({"kf_update": "joint", "energy_share": 0.3, "force_share": 0.1, "p0_shape": "gradient"})
json.dump(shares, open(f"{work}/shares.json", "w"), indent=1)
# The same with one force group and blocks of 1024: the cheapest step per error on the CPU (docs/benchmarks.md,
# "Smaller covariance blocks").
small = json.loads(json.dumps(shares))
small["optimizer"].update({"groupsize": 24, "kf_blocksize": 1024})
json.dump(small, open(f"{work}/shares1024.json", "w"), indent=1)
# The joint update with the automatic force noise and every step bounded to |dw| <= 0.3, one force group in
# blocks of 1024: the variant whose forces fell first and lowest on the CPU (docs/benchmarks.md, "A trust
# radius").
trust = json.loads(json.dumps(doc))
trust["optimizer"].update({"kf_update": "joint", "force_noise": "auto", "groupsize": 24, "kf_blocksize": 1024,
                           "trust_radius": 0.3})
json.dump(trust, open(f"{work}/trust1024.json", "w"), indent=1)
# The same with the forces of all 192 atoms in one measurement and a radius of 0.5: the fewest steps to
# 0.10 eV/A on the CPU (docs/benchmarks.md, "One force group of every atom"); and with four groups of 24.
every = json.loads(json.dumps(trust))
every["optimizer"].update({"nselect": 192, "groupsize": 192, "trust_radius": 0.5})
json.dump(every, open(f"{work}/all192.json", "w"), indent=1)
groups4 = json.loads(json.dumps(trust))
groups4["optimizer"].update({"nselect": 96})
json.dump(groups4, open(f"{work}/groups4.json", "w"), indent=1)
# The defaults (kf_update "auto": the joint update with the large-model settings, docs/rlekf.md).
json.dump(doc, open(f"{work}/default.json", "w"), indent=1)
# The same measured in float64 (force gradients by difference); the defaults measure on a float32 copy of
# the model (docs/rlekf.md, "Measurements in float32").
f64 = json.loads(json.dumps(doc))
f64["optimizer"]["measure_precision"] = "float64"
json.dump(f64, open(f"{work}/default_f64.json", "w"), indent=1)
# DeePMD-kit's LKF: one Kalman update per measurement, its groups and blocks.
lkf = json.loads(json.dumps(doc))
lkf["optimizer"].update({"kf_update": "sequential", "nselect": 24, "groupsize": 6})
if dry != "1":
    lkf["optimizer"]["kf_blocksize"] = 5120
json.dump(lkf, open(f"{work}/lkf.json", "w"), indent=1)
# DeePMD-kit's water example: Adam, its exponential learning rate and loss prefactors.
ref = json.load(open(f"{water}/input_se_e2_a.reference.json"))
doc["optimizer"] = {"type": "Adam"}
doc["learning_rate"] = ref["learning_rate"]
doc["loss"] = ref["loss"]
t["disp_freq"] = 50
json.dump(doc, open(f"{work}/adam.json", "w"), indent=1)
PY
  for opt in ${DEEPKF_GPU_TRAIN_RUNS:-all192 trust1024 adam}; do
    # Killed at the time limit: lcurve.out is written line by line, and no checkpoint is wanted.
    timeout -s KILL "$seconds" "$deepkf" train "$work/$opt.json" -o "$work/$opt" >"$work/$opt.stdout" 2>&1 || true
    echo "-- $opt: train.log"
    head -40 "$work/$opt/train.log" 2>/dev/null || tail -20 "$work/$opt.stdout"
    echo "-- $opt: last lines of lcurve.out"
    tail -4 "$work/$opt/lcurve.out" 2>/dev/null || echo "(none)"
  done
  # The learning curves, logs and inputs in one file (the GPU machine returns at most 8).
  (cd "$work" && find . -maxdepth 2 \( -name '*.json' -o -name '*.stdout' -o -name lcurve.out -o -name train.log \) \
    -print0 | tar -czf "$out/train.tar.gz" --null -T -) || true
  rm -rf "$work"
}

train_water "$@"
