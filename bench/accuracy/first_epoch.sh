#!/usr/bin/env bash
# One epoch of RLEKF at the defaults (no p0, no kf_blocksize in the input), and at fixed p0 values for
# comparison: the validation errors after one epoch, per dataset, as markdown table rows.
#
#   bash bench/accuracy/first_epoch.sh DEEPKF DATASETS_DIR OUT_DIR [DATASET...] [-- P0...]
#
# DATASET: water, si_mlearn, cho_nopbc, si_cp2k (default: all four); si_cp2k is the project's
# data/si_cp2k.h5, the others are read from DATASETS_DIR. The model is the small se_e2_a of the
# time-to-accuracy benchmark (embedding [8, 16, 32], axis 8, fitting [32, 32, 32], rcut 5), batch size 1,
# OPENBLAS_NUM_THREADS=1. SEEDS="1 2 3" in the environment repeats every run with those training seeds
# (data order and atom draws; the model's initial weights stay seed 1): one epoch at batch size 1 is far
# from converged, and its errors move by a factor of 2 from seed to seed. OPTIMIZER='"energy_last": false'
# in the environment adds those keys to every run's optimizer section; EPOCHS=10 trains 10 epochs instead
# of one. ADAM=1 trains with Adam instead, on the schedule of the time-to-accuracy benchmark (DeePMD-kit's:
# learning rate 1e-3 to 1e-5 over the run, force prefactor 1000 to 1, energy 0.02 to 1); the p0 list is
# then ignored and the p0 columns read "-". DESCRIPTOR=se_e2_r (or se_e3) trains the radial (three-body)
# descriptor with the same embedding and fitting nets (no axis_neuron) instead of se_e2_a; DESCRIPTOR=hybrid
# trains se_e2_a of rcut 3.5 beside se_e2_r of rcut 5. DESCRIPTOR=se_e2_a_tebd (or se_a_ebd_v2) trains se_e2_a
# with a type embedding of widths [2, 4, 8] (DeePMD-kit's se_e2_a_tebd example's), in "concat" (or "strip")
# form, type_one_side true as in that example. DESCRIPTOR=se_atten (or se_atten_v2) trains DPA-1 over the
# neighbours of any type with two attention layers of width 32 and tebd_dim 8 (se_atten: "concat",
# se_atten_v2: "strip" with the smooth gates). DESCRIPTOR=se_e3_tebd trains the three-body descriptor over
# the neighbours of any type (tebd_dim 8 concatenated, DeePMD-kit's defaults). THREADS=1 sets
# training.num_threads (default: one thread per core).
set -euo pipefail
deepkf=$(realpath "$1"); datasets=$(realpath "$2"); out=$3; shift 3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
names=(); p0s=(auto)
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; p0s+=("$@"); break; fi
  names+=("$1"); shift
done
[ ${#names[@]} -gt 0 ] || names=(water si_mlearn cho_nopbc si_cp2k)
mkdir -p "$out"

echo "| data | p0 in the input | p0 used | seed | steps | val rmse_e (meV/atom) | val rmse_f (eV/A) | wall (s) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for name in "${names[@]}"; do
  case $name in
    water) types='["O", "H"]'; train="[\"$datasets/water/data_0\", \"$datasets/water/data_1\", \"$datasets/water/data_2\"]"
           valid="\"validation_data\": {\"systems\": [\"$datasets/water/data_3\"], \"batch_size\": 1, \"numb_btch\": 1},"; steps=320;;
    si_mlearn) types='["Si"]'; train="[\"$datasets/si_mlearn/train\"]"
           valid="\"validation_data\": {\"systems\": [\"$datasets/si_mlearn/test\"], \"batch_size\": 1, \"numb_btch\": 1},"; steps=214;;
    cho_nopbc) types='["C", "H", "O"]'; train="[\"$datasets/cho_nopbc\"]"; valid='"validation_fraction": 0.1,'; steps=1856;;
    si_cp2k) types='["Si"]'; train="[\"$root/data/si_cp2k.h5\"]"; valid='"validation_fraction": 0.2,'; steps=31;;
    *) echo "unknown dataset $name" >&2; exit 2;;
  esac
  steps=$((steps * ${EPOCHS:-1}))
  [ -z "${ADAM:-}" ] || p0s=(-)
  for p0 in "${p0s[@]}"; do for seed in ${SEEDS:-1}; do
    dir="$out/$name-${DESCRIPTOR:+$DESCRIPTOR-}${ADAM:+adam-}p0-$p0-seed-$seed"; mkdir -p "$dir"
    p0_key=""; [ "$p0" = auto ] || p0_key="\"p0\": $p0,"
    optimizer="{\"type\": \"RLEKF\", $p0_key ${OPTIMIZER:+$OPTIMIZER,} \"log_filter\": true}"
    schedule=""
    if [ -n "${ADAM:-}" ]; then
      optimizer='{"type": "Adam"}'
      schedule='"learning_rate": {"type": "exp", "start_lr": 0.001, "stop_lr": 1e-5, "decay_steps": 100},
 "loss": {"type": "ener", "start_pref_e": 0.02, "limit_pref_e": 1, "start_pref_f": 1000, "limit_pref_f": 1},'
    fi
    axis='"axis_neuron": 8,'; type=${DESCRIPTOR:-se_e2_a}; tebd=""
    case $type in
      se_e2_a) ;;
      se_e2_a_tebd|se_a_ebd_v2) [ "$type" = se_a_ebd_v2 ] || type=se_e2_a
        axis="$axis \"type_one_side\": true,"; tebd='"type_embedding": {"neuron": [2, 4, 8]},';;
      se_atten|se_atten_v2) axis="$axis \"attn\": 32, \"attn_layer\": 2, \"tebd_dim\": 8,";;
      *) axis="";;
    esac
    descriptor="{\"type\": \"$type\", \"sel\": \"auto\", \"rcut_smth\": 0.5, \"rcut\": 5.0,
                 \"neuron\": [8, 16, 32], $axis \"seed\": 1}"
    if [ "${DESCRIPTOR:-}" = hybrid ]; then
      # se_e2_a of rcut 3.5 beside se_e2_r of rcut 5, the nets of the other rows
      descriptor='{"type": "hybrid", "list": [
        {"type": "se_e2_a", "sel": "auto", "rcut_smth": 0.5, "rcut": 3.5, "neuron": [8, 16, 32], "axis_neuron": 8, "seed": 1},
        {"type": "se_e2_r", "sel": "auto", "rcut_smth": 0.5, "rcut": 5.0, "neuron": [8, 16, 32], "seed": 1}]}'
    fi
    cat > "$dir/input.json" <<EOF
{"model": {"type_map": $types, $tebd
  "descriptor": $descriptor,
  "fitting_net": {"neuron": [32, 32, 32], "resnet_dt": true, "seed": 1}},
 "optimizer": $optimizer, $schedule
 "training": {"training_data": {"systems": $train, "batch_size": 1}, $valid
   "numb_steps": $steps, "seed": $seed, ${THREADS:+\"num_threads\": $THREADS,} "disp_freq": 1000000, "save_freq": 1000000}}
EOF
    start=$(date +%s.%N)
    OPENBLAS_NUM_THREADS=1 "$deepkf" train "$dir/input.json" -o "$dir" > "$dir/stdout" 2>&1
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    used=$(grep -o 'p0 [0-9.e+-]*' "$dir/train.log" | head -1 | cut -d' ' -f2 || true); used=${used:--}
    line=$(grep 'validation on all' "$dir/train.log")
    e=$(echo "$line" | sed -E 's/.*rmse_e ([^ ]*) eV.*/\1/'); f=$(echo "$line" | sed -E 's/.*rmse_f ([^ ]*) eV\/A.*/\1/')
    printf "| %s | %s | %s | %s | %d | %.1f | %.3f | %.0f |\n" "$name" "$p0" "$used" "$seed" "$steps" "$(awk -v e="$e" 'BEGIN { print e * 1000 }')" "$f" "$wall"
  done; done
done
