#!/usr/bin/env bash
# `deepkf change-bias` (dp change-bias's options) on the project's silicon data, checked against arithmetic
# on the labels and on `deepkf test`'s per-frame errors: "change" leaves the per-atom energy errors with
# mean zero (the least-squares shift of one element), "set" gives sum_k N_k E_k / sum_k N_k^2 (the
# least-squares bias of one element from the labels), -b sets the values given; forces do not change; and
# the mistakes it refuses give one error line.
# Usage: cli_change_bias.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-change-bias.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"
data=$source_dir/data/si_cp2k.h5

cat >"$work/input.json" <<JSON
{"model": {"type_map": ["Si"],
           "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                          "axis_neuron": 2, "type_one_side": true},
           "fitting_net": {"neuron": [8, 8]}},
 "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0},
 "training": {"training_data": {"systems": ["$data"]}, "numb_steps": 2, "disp_freq": 1, "save_freq": 2,
              "num_threads": 1, "change_bias_after_training": false}}
JSON
expect "train a model" "step" "$deepkf" train "$work/input.json" -o "$work/run"

# Per-frame errors of a model: column 6 of test's table is (E_pred - E_ref) / N, column 7 the force RMSE.
frames() { "$deepkf" test -m "$1" -s "$data" -o "$work/t" >/dev/null 2>&1 && grep -v '^#' "$work/t.frames.tsv"; }
frames "$work/run/model.pt" >"$work/before.tsv" || fail "deepkf test of the trained model"

expect "change: the default output name" "model written to $work/run/model_updated.pt" \
  "$deepkf" change-bias "$work/run/model.pt" -s "$data"
frames "$work/run/model_updated.pt" >"$work/change.tsv" || fail "deepkf test of the changed model"
mean=$(awk -F'\t' '{ s += $6; n++ } END { printf "%.3e", s / n }' "$work/change.tsv")
awk -v m="$mean" 'BEGIN { exit !(m < 1e-6 && m > -1e-6) }' &&
  ok "change: mean per-atom energy error $mean" || fail "change: mean per-atom energy error $mean, expected 0"
before=$(awk -F'\t' '{ s += $6 * $6; n++ } END { printf "%.6e", sqrt(s / n) }' "$work/before.tsv")
after=$(awk -F'\t' '{ s += $6 * $6; n++ } END { printf "%.6e", sqrt(s / n) }' "$work/change.tsv")
awk -v a="$after" -v b="$before" 'BEGIN { exit !(a <= b) }' &&
  ok "change: energy rmse $before -> $after" || fail "change: energy rmse rose, $before -> $after"
forces=$(paste "$work/before.tsv" "$work/change.tsv" | awk -F'\t' '$7 != $15' | wc -l)
[ "$forces" = 0 ] && ok "change: forces unchanged" || fail "change: $forces frames with other forces"

expect "set: from the labels" "energy bias from the labels of 38 frames in 3 systems" \
  "$deepkf" change-bias "$work/run/model.pt" -s "$data" -m set -o "$work/set.pt"
want=$(awk -F'\t' '{ ne += $3 * $4; nn += $3 * $3 } END { printf "%.5f", ne / nn }' "$work/before.tsv")
got=$("$deepkf" info "$work/set.pt" | awk '/^energy bias/ { printf "%.5f", $4 }')
[ "$got" = "$want" ] && ok "set: bias $got = sum N E / sum N^2" || fail "set: bias $got, expected $want"
expect "set, two frames per system" "energy bias from the labels of 6 frames in 3 systems" \
  "$deepkf" change-bias "$work/run/model.pt" -s "$data" -m set -n 2 -o "$work/set2.pt"
expect "values" "energy bias (eV) after:  Si -100.500000" \
  "$deepkf" change-bias "$work/run/model.pt" -b -100.5 -o "$work/values.pt"
expect "the record in the model file" '"mode": "values"' "$deepkf" info "$work/values.pt"

expect_error "-b with the wrong count" "-b gives 2 values, but model $work/run/model.pt has 1 elements (Si)" \
  "$deepkf" change-bias "$work/run/model.pt" -b 1 2
expect_error "no frames and no values" "give the labelled frames with -s, or the values with -b" \
  "$deepkf" change-bias "$work/run/model.pt"
expect_error "elements the model lacks" "element 'O' of $source_dir/data/water_cp2k.h5#/H2O_24 is not in the type map" \
  "$deepkf" change-bias "$work/run/model.pt" -s "$source_dir/data/water_cp2k.h5"
# A value outside an option's choices is the command line parser's usage error (its own exit status).
if "$deepkf" change-bias "$work/run/model.pt" -s "$data" -m shift >"$work/out" 2>&1; then
  fail "an unknown mode was accepted"
elif grep -F -q -- "--mode: shift not in {change,set}" "$work/out"; then
  ok "an unknown mode: $(head -1 "$work/out")"
else
  fail "an unknown mode: $(head -3 "$work/out")"
fi

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_change_bias checks passed"
