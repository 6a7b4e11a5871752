#!/usr/bin/env bash
# How well does a predicted uncertainty rank held-out frames by their actual force error? The Kalman sigma of
# one RLEKF model (its covariance, calibrated on 10% of its training frames) against the deviation of a
# 4-model ensemble (the same model and three more trained with other seeds), on the same frames, as
# markdown table rows (docs/benchmarks.md, "Uncertainty").
#
#   bash bench/accuracy/uncertainty.sh DEEPKF DATASETS_DIR OUT_DIR [DATASET...]
#
# DATASET: si_mlearn (train/ -> test/), water (data_0..2 -> data_3), cu_pwmat (T300 -> T500, a higher
# temperature than any training frame); default: all three. Model: the small se_e2_a of the first-epoch
# benchmark (embedding [8, 16, 32], axis 8, fitting [32, 32, 32], rcut 5), batch size 1, automatic p0,
# EPOCHS passes over the training frames (default 1). Seeds 1 to 4 set the data order, the atom draws and
# the initial weights.
# FORCE_ATOMS (default 8) atoms' force components are scored per frame; FORCE_ATOMS=all scores every atom.
# OPENBLAS_NUM_THREADS=1; THREADS (default 0: one per core) LibTorch threads for training and scoring.
set -euo pipefail
deepkf=$(realpath "$1"); datasets=$(realpath "$2"); out=$3; shift 3
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(si_mlearn water cu_pwmat)
atoms=${FORCE_ATOMS:-8}
threads=${THREADS:-0}
mkdir -p "$out"
out=$(realpath "$out")
export OPENBLAS_NUM_THREADS=1

for name in "${names[@]}"; do
  case $name in
    si_mlearn) types='["Si"]'; train="[\"$datasets/si_mlearn/train\"]"; test=$datasets/si_mlearn/test; epochs=${EPOCHS:-1}; frames=214;;
    water) types='["O", "H"]'; train="[\"$datasets/water/data_0\", \"$datasets/water/data_1\", \"$datasets/water/data_2\"]"
           test=$datasets/water/data_3; epochs=${EPOCHS:-1}; frames=320;;
    cu_pwmat) types='["Cu"]'; train="[\"$datasets/cu_pwmat/T300\"]"; test=$datasets/cu_pwmat/T500; epochs=${EPOCHS:-1}; frames=100;;
    *) echo "unknown dataset $name" >&2; exit 2;;
  esac
  # 10% of the training frames are held out for the calibration.
  steps=$((epochs * frames * 9 / 10))
  for seed in 1 2 3 4; do
    dir="$out/$name/seed-$seed"; mkdir -p "$dir"
    [ -f "$dir/model.pt" ] && continue  # trained by an earlier call
    cat > "$dir/input.json" <<EOF
{"model": {"type_map": $types,
  "descriptor": {"type": "se_e2_a", "sel": "auto", "rcut_smth": 0.5, "rcut": 5.0, "neuron": [8, 16, 32],
                 "axis_neuron": 8, "seed": $seed},
  "fitting_net": {"neuron": [32, 32, 32], "resnet_dt": true, "seed": $seed}},
 "optimizer": {"type": "RLEKF"},
 "training": {"training_data": {"systems": $train, "batch_size": 1}, "validation_fraction": 0.1,
   "numb_steps": $steps, "seed": $seed, "num_threads": $threads, "disp_freq": 1000000, "save_freq": 1000000}}
EOF
    "$deepkf" train "$dir/input.json" -o "$dir" --no-progress > "$dir/stdout" 2>&1
  done
  # Training time per step of the Kalman model (seed 1), for the cost comparison.
  step_s=$(grep -o 'after [0-9]* steps in [0-9.]* s' "$out/$name/seed-1/stdout" | awk '{ print $5 / $2 }')
  "$deepkf" uncertainty -c "$out/$name/seed-1/model.ckpt" -m "$out/$name"/seed-1/model.pt -m "$out/$name"/seed-2/model.pt \
    -m "$out/$name"/seed-3/model.pt -m "$out/$name"/seed-4/model.pt -s "$test" -o "$out/$name/atoms-$atoms" \
    --force-atoms "$atoms" --threads "$threads" > "$out/$name/atoms-$atoms.out" 2>&1
  summary="$out/$name/atoms-$atoms.out"
  nframes=$(awk 'NR == 1 { print $1 }' "$summary")
  frame_s=$(grep -o '[0-9.]* s per frame' "$summary" | awk '{ print $1 }')
  ratio=$(grep -o 'energy [0-9.e+-]*, scored force components [0-9.e+-]*' "$summary" | awk '{ print $2, $6 }')
  # One row per predictor: rho against |err_e|, err_f_rmse, err_f_max, and the worst 10% caught.
  awk -v data="$name" -v n="$nframes" -v atoms="$atoms" '
    /^(sigma_e|sigma_f_max|sigma_f_mean|sigma_f_rms|max_devi_f|avg_devi_f) / {
      kind = ($1 ~ /^sigma/) ? "Kalman, 1 model" : "ensemble of 4"
      printf "| %s | %d | %s | %s | %s | %s | %s | %s |\n", data, n, kind, $1, $3, $4, $2, $5
    }' "$summary"
  echo "<!-- $name: force atoms $atoms; rms error / rms sigma (energy, forces) $ratio; scoring ${frame_s} s per frame; training ${step_s} s per step -->"
done
