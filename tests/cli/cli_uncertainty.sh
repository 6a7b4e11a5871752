#!/usr/bin/env bash
# `deepkf uncertainty` through the command line: two small RLEKF runs on the project's silicon data (their
# checkpoints carry a calibration, which `deepkf export` and `deepkf info` pass on), then the Kalman sigma of
# one checkpoint and the deviation of both model files on the same frames: the table's columns and rows, the
# summary, the plot, the same sigma on 2 ranks as on 1, frames from a LAMMPS dump, and one error line for
# each ordinary mistake.
# Usage: cli_uncertainty.sh DEEPKF SOURCE_DIR MPIEXEC
set -u
deepkf=$1
source_dir=$2
mpiexec=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-cli-uncertainty.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
source "$source_dir/tests/support/cli_checks.sh"
data=$source_dir/data/si_cp2k.h5

# A small silicon run with 20% of the frames held out; $1 = seed, $2 = output directory.
train() {
  cat >"$work/input-$1.json" <<EOF
{"model": {"type_map": ["Si"],
  "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8], "axis_neuron": 2,
                 "seed": $1},
  "fitting_net": {"neuron": [8, 8], "seed": $1}},
 "optimizer": {"type": "RLEKF", "kf_blocksize": 64, "p0": 10.0},
 "training": {"training_data": {"systems": ["$data"]}, "validation_fraction": 0.2, "numb_steps": 4, "calibration_frames": 4,
              "seed": $1, "disp_freq": 1000, "save_freq": 1000, "num_threads": 1}}
EOF
  "$deepkf" train "$work/input-$1.json" -o "$2" --no-progress >"$work/train-$1.out" 2>&1 ||
    { fail "training seed $1: $(tail -3 "$work/train-$1.out")"; exit 1; }
}
train 1 "$work/a"
train 2 "$work/b"

grep -q "uncertainty calibration on" "$work/a/train.log" && ok "training logs its calibration" ||
  fail "no calibration line in train.log"
"$deepkf" export "$work/a/model.ckpt" -o "$work/exported.pt" >/dev/null &&
  "$deepkf" info "$work/exported.pt" | grep -q '^uncertainty     calibration {"energy"' &&
  ok "export keeps the calibration" || fail "the exported model file has no calibration"

# The Kalman sigma and the ensemble deviation of the same frames.
"$deepkf" uncertainty -c "$work/a/model.ckpt" -m "$work/a/model.pt" -m "$work/b/model.pt" -s "$data" \
  -o "$work/u1" --force-atoms 4 --threads 1 >"$work/u1.out" 2>&1 || fail "uncertainty: $(tail -3 "$work/u1.out")"
header=$(head -1 "$work/u1.frames.tsv")
expected=$(printf 'system\tframe\ttimestep\tnatoms\tsigma_e\tsigma_f_max\tsigma_f_mean\tsigma_f_rms\tmax_devi_v\tmin_devi_v\tavg_devi_v\tmax_devi_f\tmin_devi_f\tavg_devi_f\terr_e\terr_f_rmse\terr_f_max')
[ "$header" = "$expected" ] && ok "table columns" || fail "table header: $header"
rows=$(($(wc -l <"$work/u1.frames.tsv") - 1))
[ "$rows" -eq 38 ] && ok "one row per frame (38)" || fail "$rows rows, expected 38"
grep -q "sigma calibrated at the end of training on" "$work/u1.out" && ok "summary names the calibration" ||
  fail "no calibration in: $(cat "$work/u1.out")"
grep -q "^sigma_f_max" "$work/u1.out" && grep -q "^max_devi_f" "$work/u1.out" && ok "rank correlations printed" ||
  fail "no rank correlation rows in: $(cat "$work/u1.out")"
grep -q "<circle" "$work/u1.sigma.svg" && ok "plot written" || fail "no points in $work/u1.sigma.svg"
# No sigma or deviation is missing or negative.
awk -F'\t' 'NR > 1 { for (c = 5; c <= 14; ++c) if ($c == "nan" || $c < 0) bad = 1 } END { exit bad }' \
  "$work/u1.frames.tsv" && ok "every sigma and deviation is a number >= 0" || fail "nan or negative values"

# Two ranks split the frames and the covariance blocks: the same table.
"$mpiexec" -n 2 --oversubscribe "$deepkf" uncertainty -c "$work/a/model.ckpt" -m "$work/a/model.pt" \
  -m "$work/b/model.pt" -s "$data" -o "$work/u2" --force-atoms 4 --threads 1 >"$work/u2.out" 2>&1 ||
  fail "uncertainty on 2 ranks: $(tail -3 "$work/u2.out")"
cmp -s "$work/u1.frames.tsv" "$work/u2.frames.tsv" && ok "2 ranks give the table of 1 rank" ||
  fail "2 ranks differ: $(diff "$work/u1.frames.tsv" "$work/u2.frames.tsv" | head -4)"

# Frames of a LAMMPS dump (no labels): eight silicon atoms of the diamond cell at two timesteps.
{
  for step in 0 100; do
    printf 'ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n8\nITEM: BOX BOUNDS pp pp pp\n0 5.43\n0 5.43\n0 5.43\n' "$step"
    printf 'ITEM: ATOMS id type xs ys zs\n'
    i=0
    for f in "0 0 0" "0 0.5 0.5" "0.5 0 0.5" "0.5 0.5 0" "0.25 0.25 0.25" "0.25 0.75 0.75" "0.75 0.25 0.75" \
      "0.75 0.75 0.26"; do
      i=$((i + 1))
      echo "$i 1 $f"
    done
  done
} >"$work/md.dump"
"$deepkf" uncertainty -c "$work/a/model.ckpt" -s "$work/md.dump" --type-map Si -o "$work/u3" >"$work/u3.out" 2>&1 ||
  fail "uncertainty of a dump: $(tail -3 "$work/u3.out")"
awk -F'\t' 'NR == 3 { exit !($3 == 100 && $4 == 8 && NF == 8) }' "$work/u3.frames.tsv" &&
  ok "dump frames with their timesteps, no error columns" || fail "dump table: $(cat "$work/u3.frames.tsv")"

# Ordinary mistakes: status 1 and one error line.
expect_error "one model is no ensemble" "needs at least two" "$deepkf" uncertainty -m "$work/a/model.pt" -s "$data"
expect_error "nothing to score with" "give a checkpoint" "$deepkf" uncertainty -s "$data"
expect_error "a model file given as checkpoint" "is a model file" \
  "$deepkf" uncertainty -c "$work/a/model.pt" -s "$data"
expect_error "a dump without a type map" "no 'element' column" \
  "$deepkf" uncertainty -c "$work/a/model.ckpt" -s "$work/md.dump"
expect_error "a bad --force-atoms" "--force-atoms is 'some'" \
  "$deepkf" uncertainty -c "$work/a/model.ckpt" -s "$data" --force-atoms some

# -s takes every data format, DeePMD-kit's LMDB databases among them, and its help says so.
expect "uncertainty --help names LMDB databases for -s" "LMDB" "$deepkf" uncertainty --help

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all uncertainty command checks passed"
