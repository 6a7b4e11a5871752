#!/usr/bin/env bash
# `deepkf compress` end to end on the project's silicon data: a trained model records its training range,
# compresses over it, `deepkf info` shows the tables, `deepkf test` gives the uncompressed model's errors
# (se_e2_a and se_e3, each through its CPU kernel), and compressing twice, bad settings, overwriting the input and training from a compressed model are
# refused with one error line (exit status 1).
# Usage: cli_compress.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-compress.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"

cat >"$work/input.json" <<JSON
{"model": {"type_map": ["Si"],
           "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                          "axis_neuron": 2, "type_one_side": true},
           "fitting_net": {"neuron": [8, 8]}},
 "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0},
 "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5"]}, "numb_steps": 2,
              "disp_freq": 1, "save_freq": 2, "num_threads": 1}}
JSON

expect "training records the closest neighbours" "closest neighbours within rcut in the training data (A): Si-Si" \
  "$deepkf" train "$work/input.json" -o "$work/run"
expect "info shows the training range" "training range  closest neighbours" "$deepkf" info "$work/run/model.pt"
expect "info says an uncompressed model is not compressed" "compressed      no" "$deepkf" info "$work/run/model.pt"
expect "compress over the training range" "the training data's closest neighbours" \
  "$deepkf" compress "$work/run/model.pt" -o "$work/compressed.pt"
expect "info shows the tables" "compressed      yes: step 0.01" "$deepkf" info "$work/compressed.pt"
expect "compress with other settings" "step            0.02 (fine), 0.2 (coarse, up to 3 x the largest s)" \
  "$deepkf" compress "$work/run/model.pt" -o "$work/coarse.pt" --step 0.02 --extrapolate 3 --min-distance 1.5

# same_predictions NAME PLAIN COMPRESSED: deepkf test gives the same errors for both models (to the table's
# accuracy): per frame, predicted energy (eV, 10 digits) and force RMSE (eV/A) within 1e-6
same_predictions() {
  local name=$1 plain=$2 comp=$3
  "$deepkf" test -m "$plain" -s "$source_dir/data/si_cp2k.h5" -o "$work/$name-plain" >"$work/plain.txt" 2>&1 ||
    fail "deepkf test ($name, uncompressed): $(tail -3 "$work/plain.txt")"
  "$deepkf" test -m "$comp" -s "$source_dir/data/si_cp2k.h5" -o "$work/$name-comp" >"$work/comp.txt" 2>&1 ||
    fail "deepkf test ($name, compressed): $(tail -3 "$work/comp.txt")"
  if ! paste "$work/$name-plain.frames.tsv" "$work/$name-comp.frames.tsv" | awk -F'\t' '
      /^#/ { next }
      { n++; de = $5 - $13; df = $7 - $15; if (de > 1e-6 || de < -1e-6 || df > 1e-6 || df < -1e-6) bad++ }
      END { exit (n == 0 || bad > 0) }'; then
    fail "deepkf test: the compressed $name model's per-frame predictions differ from the uncompressed ones"
  else
    echo "ok: deepkf test gives the same $name predictions per frame: $(grep "^all systems" "$work/comp.txt")"
  fi
}
same_predictions se_e2_a "$work/run/model.pt" "$work/compressed.pt"

expect_error "compressing a compressed model" "is already compressed" \
  "$deepkf" compress "$work/compressed.pt" -o "$work/twice.pt"
expect_error "a step of 0" "--step must be a positive number" \
  "$deepkf" compress "$work/run/model.pt" -o "$work/zero.pt" --step 0
expect_error "extrapolate below 1" "--extrapolate must be at least 1" \
  "$deepkf" compress "$work/run/model.pt" -o "$work/x.pt" --extrapolate 0.5
expect_error "writing over the input" "must differ from the model file" \
  "$deepkf" compress "$work/run/model.pt" -o "$work/run/model.pt"
expect_error "training from a compressed model" "is a compressed model" \
  "$deepkf" train "$work/input.json" -o "$work/run2" --init-model "$work/compressed.pt"
[ -e "$work/twice.pt" ] && fail "a refused compression left a file behind"

# se_e3, like se_e2_a, has a CPU kernel of its own: compressing it prints no note that it runs slower.
sed -e 's/"type": "se_e2_a"/"type": "se_e3"/' -e 's/"axis_neuron": 2, "type_one_side": true/"sel": [20]/' \
  -e 's/"sel": \[40\], //' -e 's/"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0/"type": "Adam"/' \
  "$work/input.json" >"$work/input_e3.json"
expect "training an se_e3 model" "model written to" "$deepkf" train "$work/input_e3.json" -o "$work/run_e3"
expect "compressing an se_e3 model" "compressed model written to" \
  "$deepkf" compress "$work/run_e3/model.pt" -o "$work/compressed_e3.pt"
grep -q "runs slower" "$work/out" && fail "compressing se_e3 printed a note that it runs slower"
same_predictions se_e3 "$work/run_e3/model.pt" "$work/compressed_e3.pt"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_compress checks passed"
