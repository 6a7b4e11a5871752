#!/usr/bin/env bash
# Per-atom energy errors by cell size after training on silicon cells of 8 to 216 atoms (Stillinger-Weber
# labels, bench/accuracy/si_sw_data.py): does a per-atom energy offset remain on the cells of one size?
#
#   bash bench/accuracy/mixed_sizes.sh DEEPKF OUT_DIR [EPOCHS (1)] [SEEDS (1)]
#
# The small se_e2_a of the first-epoch benchmark (bench/accuracy/first_epoch.sh), batch size 1, RLEKF at the
# defaults plus the keys in OPTIMIZER (e.g. OPTIMIZER='"kf_update": "joint"'), EPOCHS passes over the 274
# training frames. Prints, per validation cell size, the frames and the mean and spread of the per-atom energy
# error (prediction - label, meV/atom), then `deepkf test`'s overall line.
set -euo pipefail
deepkf=$(realpath "$1"); out=$2; epochs=${3:-1}; seeds=${4:-1}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Debian's interpreter (with NumPy) unless PYTHON names another.
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
mkdir -p "$out"
[ -d "$out/data/train" ] || "$py" "$root/bench/accuracy/si_sw_data.py" "$out/data" >/dev/null
ntrain=$("$py" -c "import numpy as np, glob; print(sum(len(np.load(f)) for f in glob.glob('$out/data/train/*/set.000/energy.npy')))")
for seed in $seeds; do
  run="$out/epochs-$epochs-seed-$seed"
  mkdir -p "$run"
  cat >"$run/input.json" <<EOF
{"model": {"type_map": ["Si"],
  "descriptor": {"type": "se_e2_a", "sel": "auto", "rcut_smth": 0.5, "rcut": 5.0,
                 "neuron": [8, 16, 32], "axis_neuron": 8, "seed": 1},
  "fitting_net": {"neuron": [32, 32, 32], "resnet_dt": true, "seed": 1}},
 "optimizer": {"type": "RLEKF", ${OPTIMIZER:+$OPTIMIZER,} "log_filter": true},
 "training": {"training_data": {"systems": ["$out/data/train"], "batch_size": 1},
   "validation_data": {"systems": ["$out/data/valid"], "batch_size": 1, "numb_btch": 1},
   "numb_steps": $((ntrain * epochs)), "seed": $seed, "disp_freq": 1000000, "save_freq": 1000000}}
EOF
  OPENBLAS_NUM_THREADS=1 "$deepkf" train "$run/input.json" -o "$run/out" >"$run/train.stdout" 2>&1
  "$deepkf" test -m "$run/out/model.pt" -s "$out/data/valid" -o "$run/test" >"$run/test.txt" 2>&1
  echo "== $epochs epoch(s), seed $seed${OPTIMIZER:+, $OPTIMIZER}"
  "$py" - "$run/test.frames.tsv" <<'PY'
import collections, csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by_size = collections.defaultdict(list)
for r in rows:
    by_size[int(r["natoms"])].append(1000 * float(r["de_per_atom"]))
print("| atoms | frames | mean error (meV/atom) | spread (meV/atom) |")
print("|---:|---:|---:|---:|")
for n in sorted(by_size):
    v = by_size[n]
    print(f"| {n} | {len(v)} | {statistics.mean(v):.1f} | {statistics.pstdev(v):.1f} |")
PY
  grep '^all systems' "$run/test.txt"
done
