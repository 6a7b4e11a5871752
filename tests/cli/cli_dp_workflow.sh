#!/usr/bin/env bash
# DeePMD-kit's command sequence with `dp` replaced by `deepkf`, in a training folder, as its documentation
# gives it (train, freeze, compress, test), dp train's options for starting from earlier work, dp model-devi,
# on the project's silicon data; then the mistakes freeze, compress and model-devi refuse with one error
# line.
# Usage: cli_dp_workflow.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-dp-workflow.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"
source "$source_dir/tests/cli/si_input.sh"

mkdir -p "$work/train" "$work/empty"
write_si_input "$work/train/input.json"
cd "$work/train" || exit 1
expect "deepkf train input.json" "model.ckpt" "$deepkf" train input.json --no-progress
expect "deepkf freeze -o graph.pb" "model written to graph.pb" "$deepkf" freeze -o graph.pb
expect "deepkf compress -i graph.pb -o graph-compress.pb -t input.json" "note: -t input.json is not needed" \
  "$deepkf" compress -i graph.pb -o graph-compress.pb -t input.json
expect "deepkf test -m graph-compress.pb -s DATA -n 2" "all systems" \
  "$deepkf" test -m graph-compress.pb -s "$source_dir/data/si_cp2k.h5" -n 2

# freeze wrote what export writes from the same checkpoint: the same predictions on every frame.
expect "export the same checkpoint" "model written to" "$deepkf" export model.ckpt -o exported.pt
"$deepkf" test -m graph.pb -s "$source_dir/data/si_cp2k.h5" -o frozen >/dev/null 2>&1 || fail "test graph.pb"
"$deepkf" test -m exported.pt -s "$source_dir/data/si_cp2k.h5" -o exported >/dev/null 2>&1 || fail "test exported.pt"
if cmp -s frozen.frames.tsv exported.frames.tsv; then
  ok "freeze and export: the same per-frame results"
else
  fail "freeze and export differ: $(diff frozen.frames.tsv exported.frames.tsv | head -3)"
fi
# dp train's ways to start from earlier work: a checkpoint's weights (-i, as DP-GEN passes it), a frozen
# model (-f), fine-tuning (-t), a restart (-r); --skip-neighbor-stat and --use-pretrain-script are accepted.
expect "deepkf train input.json --init-model model.ckpt --skip-neighbor-stat" \
  "note: --skip-neighbor-stat changes nothing" \
  "$deepkf" train input.json --init-model model.ckpt --skip-neighbor-stat -o init --no-progress
grep -q "starting from the weights of checkpoint model.ckpt" init/train.log &&
  ok "init-model from a checkpoint: its weights" || fail "init-model: no line naming the checkpoint in init/train.log"
expect "deepkf train input.json -f graph.pb" "model.ckpt" "$deepkf" train input.json -f graph.pb -o frz --no-progress
grep -q "starting from model graph.pb" frz/train.log && ok "init-frz-model: the model's weights" ||
  fail "init-frz-model: no line naming graph.pb in frz/train.log"
# dp train -t: the model's weights, its energy bias first refitted to the training data, by the shift
# `deepkf change-bias` fits on the same frames; started from a copy whose bias is 6.9 eV/atom off.
expect "a model with its bias off" "model written to off.pb" "$deepkf" change-bias graph.pb -b -100 -o off.pb
expect "deepkf train input.json -t off.pb --use-pretrain-script" "note: --use-pretrain-script changes nothing" \
  "$deepkf" train input.json -t off.pb --use-pretrain-script -o tune --no-progress
fitted=$(grep -o 'for fine-tuning (--finetune) by .* eV/atom' tune/train.log | grep -o '[0-9.e+-]* -> [0-9.e+-]*')
expect "change-bias on the training data" "energy rmse on" \
  "$deepkf" change-bias off.pb -s "$source_dir/data/si_cp2k.h5" -o tuned-bias.pb
changed=$(grep -o 'energy rmse on .*' "$work/out" | grep -o '[0-9.e+-]* -> [0-9.e+-]*')
[ -n "$fitted" ] && [ "$fitted" = "$changed" ] && ok "finetune: energy rmse $fitted, as change-bias fits it" ||
  fail "finetune: '$fitted' in tune/train.log, change-bias '$changed'"
# dp train -o out.json: a file for the resolved parameters; the outputs stay in the folder it runs in.
mkdir -p dpo && cp input.json dpo/
(cd dpo && "$deepkf" train input.json -o out.json --no-progress >train.out 2>&1) || fail "train -o out.json"
[ -f dpo/out.json ] && [ -f dpo/model.ckpt ] && cmp -s dpo/out.json dpo/input.resolved.json &&
  ok "-o out.json: the parameters in out.json, model.ckpt beside it" ||
  fail "-o out.json: $(ls dpo | tr '\n' ' ')"
# DeePMD-kit's num_epoch instead of numb_steps: 0.1 passes over the training frames.
sed 's/"numb_steps": 2,/"num_epoch": 0.1,/' input.json >epochs.json
expect "deepkf train epochs.json (num_epoch 0.1)" "model.ckpt" "$deepkf" train epochs.json -o epochs --no-progress
grep -q "num_epoch 0.1 x [0-9]* batches per epoch: [0-9]* steps" epochs/train.log &&
  ok "num_epoch: $(grep -o 'num_epoch 0.1 x .*' epochs/train.log)" || fail "num_epoch: no line in epochs/train.log"
sed 's/"numb_steps": 2/"numb_steps": 4/' input.json >longer.json
expect "deepkf train longer.json -r model.ckpt" "finished after 4 steps" \
  "$deepkf" train longer.json -r model.ckpt --no-progress

# dp model-devi with a second model (other seeds): one block per system, 8 columns, steps of the frequency,
# and devi_e against the energies that deepkf test predicts with each model (a separate evaluation).
sed 's/"axis_neuron": 2,/"axis_neuron": 2, "seed": 11,/; s/"numb_steps": 2,/"numb_steps": 2, "seed": 5,/' input.json \
  >seed2.json
expect "train a second model" "model.ckpt" "$deepkf" train seed2.json -o seed2 --no-progress
expect "deepkf model-devi -m graph.pb seed2/model.pt -s DATA -o md.out -f 10" "written to md.out" \
  "$deepkf" model-devi -m graph.pb seed2/model.pt -s "$source_dir/data/si_cp2k.h5" -o md.out -f 10
"$deepkf" test -m seed2/model.pt -s "$source_dir/data/si_cp2k.h5" -o second >/dev/null 2>&1 || fail "test seed2"
awk -v md=md.out '
  FNR == 1 { file++ }
  file <= 2 && !/^#/ { e[file, n[file]++] = $5 / $3 }   # predicted energy per atom of each frame
  END {
    k = 0
    while ((getline line < md) > 0) {
      if (line ~ /^# step/) { steps++; j = 0; continue }
      if (line ~ /^#/) { systems++; continue }
      split(line, c, " ")
      if (length(c) != 8) { print "FAILED: a model_devi row without 8 columns: " line; bad++ }
      if (c[1] != 10 * j) { print "FAILED: step " c[1] " at row " j " of system " systems; bad++ }
      d = (e[1, k] - e[2, k]) / 2; d = d < 0 ? -d : d   # std of two values: half their difference
      tol = 1e-9 * (e[1, k] < 0 ? -e[1, k] : e[1, k]) + 2e-6 * d + 1e-12   # 10 and 7 printed digits
      if (d - c[8] > tol || c[8] - d > tol) { print "FAILED: devi_e " c[8] " != " d " in row " k; bad++ }
      j++; k++
    }
    if (k != n[1] || systems != steps || systems < 1) { print "FAILED: " k " rows, " systems " systems"; bad++ }
    if (!bad) print "ok: model_devi: " k " frames in " systems " systems, steps of 10, devi_e from deepkf test"
  }' frozen.frames.tsv second.frames.tsv >md.check
cat md.check
grep -q FAILED md.check && failures=$((failures + 1))
# --relative_v (dp model-devi's): the virial columns change, the force columns and devi_e do not.
expect "deepkf model-devi --relative_v 0.1" "written to mdv.out" \
  "$deepkf" model-devi -m graph.pb seed2/model.pt -s "$source_dir/data/si_cp2k.h5" -o mdv.out -f 10 --relative_v 0.1
paste -d' ' md.out mdv.out | awk '!/^#/ {
    for (c = 5; c <= 8; c++) if ($c != $(c + 8)) same_f = "no"
    for (c = 2; c <= 4; c++) if ($c != $(c + 8)) moved_v++
    rows++
  }
  END { exit !(rows > 0 && same_f != "no" && moved_v > 0) }' &&
  ok "relative_v: the virial columns change, the force columns stay" ||
  fail "relative_v: the columns of mdv.out against md.out"
# --real_error --atomic with one model twice: each atom's deviation is then its force error |F_i - F_i^ref|,
# so their root mean square over a frame is sqrt(3) times the per-component force RMSE deepkf test reports,
# and devi_e is the absolute energy error per atom (frozen.frames.tsv: columns 6 and 7).
expect "deepkf model-devi --real_error --atomic" "written to real.out" \
  "$deepkf" model-devi -m graph.pb graph.pb -s "$source_dir/data/si_cp2k.h5" -o real.out --real_error --atomic
awk -v real=real.out '
  BEGIN { n = 0 }   # a number from the start: de[n] and de[k] must name the same element
  !/^#/ { de[n] = $6 < 0 ? -$6 : $6; fr[n++] = $7 * sqrt(3) }
  END {
    k = 0
    while ((getline line < real) > 0) {
      if (line ~ /^#/) continue
      m = split(line, c, " "); s = 0
      for (i = 9; i <= m; i++) s += c[i] * c[i]
      rms = sqrt(s / (m - 8))
      if ((rms - fr[k]) ^ 2 > (2e-6 * fr[k]) ^ 2) { print "FAILED: frame " k ": atoms rms " rms " != " fr[k]; bad++ }
      if ((c[8] - de[k]) ^ 2 > (2e-6 * de[k] + 1e-12) ^ 2) { print "FAILED: frame " k ": devi_e " c[8] " != " de[k]; bad++ }
      k++
    }
    if (k != n) { print "FAILED: " k " rows for " n " frames"; bad++ }
    if (!bad) print "ok: real_error: " k " frames, atom deviations and devi_e from deepkf test"
  }' frozen.frames.tsv >real.check
cat real.check
grep -q FAILED real.check && failures=$((failures + 1))
expect_error "model-devi with one model" "a deviation needs two or more" \
  "$deepkf" model-devi -m graph.pb -s "$source_dir/data/si_cp2k.h5"

# -c takes the training folder from elsewhere, or the checkpoint file itself.
cd "$work" || exit 1
expect "deepkf freeze -c train" "model written to frozen_model.pth" "$deepkf" freeze -c train
expect "deepkf freeze -c train/model.ckpt -o b.pt" "model written to b.pt" "$deepkf" freeze -c train/model.ckpt -o b.pt

expect_error "freeze in a folder without a checkpoint" "no checkpoint model.ckpt in $work/empty" \
  "$deepkf" freeze -c "$work/empty"
expect_error "freeze from a folder that does not exist" "-c $work/nowhere: no such folder or checkpoint file" \
  "$deepkf" freeze -c "$work/nowhere"
expect_error "compress without a model" "give the model file to compress" "$deepkf" compress -o x.pt

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_dp_workflow checks passed"
