#!/usr/bin/env bash
# `deepkf test` with `dp test`'s options on the project's data: systems listed in a file (-f), the first N
# frames of each (-n), DeePMD-kit's detail files (-d), an input's data (--train-data, --valid-data), a seeded
# shuffle (--shuffle-test -r), and the mistakes it refuses with one error line.
# Usage: cli_test.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"

cat >"$work/input.json" <<JSON
{"model": {"type_map": ["O", "H", "Si"],
           "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [12, 24, 40], "neuron": [4, 8],
                          "axis_neuron": 2},
           "fitting_net": {"neuron": [8, 8]}},
 "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0},
 "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5", "$source_dir/data/water_cp2k.h5"]},
              "numb_steps": 2, "disp_freq": 1, "save_freq": 2, "num_threads": 1}}
JSON
expect "train a model" "step" "$deepkf" train "$work/input.json" -o "$work/run"
# -s takes every data format, DeePMD-kit's LMDB databases among them, and its help says so.
expect "test --help names LMDB databases for -s" "LMDB" "$deepkf" test --help

# A dp test style list: a comment, a blank line, two data files.
printf '# systems\n%s\n\n  %s  \n' "$source_dir/data/si_cp2k.h5" "$source_dir/data/water_cp2k.h5" >"$work/systems.txt"
expect "test the listed systems, two frames each, with detail files" "detail file       $work/detail.f.out" \
  "$deepkf" test -m "$work/run/model.pt" -f "$work/systems.txt" -n 2 -o "$work/t" -d "$work/detail"
systems=$(grep -c '^#' "$work/detail.e.out")
frames=$(grep -vc '^#' "$work/detail.e.out")
atoms=$(grep -vc '^#' "$work/detail.f.out")
# si_cp2k.h5 holds systems of 8, 16 and 15 atoms, water_cp2k.h5 one of 24: two frames of each.
if [ "$systems" = 4 ] && [ "$frames" = 8 ] && [ "$atoms" = $((2 * (8 + 16 + 15 + 24))) ]; then
  ok "detail files: 4 systems, 8 frames, 126 atom rows"
else
  fail "detail files: $systems systems, $frames frames, $atoms atom rows; expected 4, 8, 126"
fi
# Every data row has 2 (energy), 6 (force) and 18 (virial) columns.
for spec in e.out:2 e_peratom.out:2 f.out:6 v.out:18 v_peratom.out:18; do
  file=${spec%%:*} columns=${spec##*:}
  bad=$(awk -v n="$columns" '!/^#/ && NF != n' "$work/detail.$file" | wc -l)
  [ "$bad" = 0 ] && ok "detail.$file: $columns columns" || fail "detail.$file: $bad rows without $columns columns"
done
# The per-frame table covers the same frames.
rows=$(grep -vc '^#' "$work/t.frames.tsv")
[ "$rows" = 8 ] && ok "per-frame table: 8 rows" || fail "per-frame table: $rows rows, expected 8"

# --train-data: the systems of a training input (here the input just trained), the same frames as -s.
expect "test on an input's training data" "all systems" \
  "$deepkf" test -m "$work/run/model.pt" --train-data "$work/input.json" -o "$work/by-input"
expect "test on the same systems given with -s" "all systems" \
  "$deepkf" test -m "$work/run/model.pt" -s "$source_dir/data/si_cp2k.h5" "$source_dir/data/water_cp2k.h5" \
  -o "$work/by-path"
cmp -s "$work/by-input.frames.tsv" "$work/by-path.frames.tsv" && ok "--train-data tests the input's systems" ||
  fail "--train-data and -s differ: $(diff "$work/by-input.frames.tsv" "$work/by-path.frames.tsv" | head -3)"
expect_error "--valid-data of an input without validation data" "has no training.validation_data.systems" \
  "$deepkf" test -m "$work/run/model.pt" --valid-data "$work/input.json"
# An input that holds out validation_fraction of its training data: --valid-data tests exactly the frames
# training held out (its figures equal the log's final validation line), --train-data the frames it kept.
sed 's/"numb_steps": 2,/"numb_steps": 2, "validation_fraction": 0.25, "seed": 5,/' "$work/input.json" >"$work/split.json"
expect "train with validation_fraction" "step" "$deepkf" train "$work/split.json" -o "$work/split"
expect "test on the held-out frames" "held-out frames of $work/split.json" \
  "$deepkf" test -m "$work/split/model.pt" --valid-data "$work/split.json" -o "$work/held"
cp "$work/out" "$work/held.out"
"$deepkf" test -m "$work/split/model.pt" --train-data "$work/split.json" -o "$work/kept" >/dev/null 2>&1 ||
  fail "test on the training part"
read -r logged_n logged_e logged_f < <(sed -n 's/.*validation on all \([0-9]*\) frames: rmse_e \([^ ]*\) eV\/atom, rmse_f \([^ ]*\) eV.*/\1 \2 \3/p' \
  "$work/split/train.log")
read -r tested_n tested_e tested_f < <(awk '$1 == "all" && $2 == "systems" { print $3, $4, $6 }' "$work/held.out")
same=$(awk -v a="$logged_e" -v b="$tested_e" -v c="$logged_f" -v d="$tested_f" \
  'BEGIN { print (a > 0 && (a - b) ^ 2 <= (1e-3 * a) ^ 2 && (c - d) ^ 2 <= (1e-3 * c) ^ 2) ? 1 : 0 }')
[ "${logged_n:-x}" = "${tested_n:-y}" ] && [ "$same" = 1 ] &&
  ok "held-out test = the log's validation ($tested_n frames, rmse_e $tested_e, rmse_f $tested_f)" ||
  fail "held-out test ($tested_n frames, $tested_e, $tested_f) against the log ($logged_n frames, $logged_e, $logged_f)"
overlap=$(awk -F'\t' '!/^#/ { sub(/ \(.*\)$/, "", $1); k = $1 ":" $2; if (FILENAME ~ /held/) h[k] = 1; else if (k in h) n++ }
  END { print n + 0 }' "$work/held.frames.tsv" "$work/kept.frames.tsv")
rows=$(grep -vc '^#' "$work/held.frames.tsv" "$work/kept.frames.tsv" | awk -F: '{ n += $2 } END { print n }')
[ "$overlap" = 0 ] && [ "$rows" = 47 ] && ok "held-out and kept frames: disjoint, 47 in all (38 silicon, 9 water)" ||
  fail "held-out and kept frames: $overlap shared, $rows in all (expected 0 and 47)"
# --shuffle-test -r 7 -n 2: the same sample twice, numbered by the frames' places in the files (each row's
# prediction is the one the unshuffled run gives for that frame).
for k in 1 2; do
  "$deepkf" test -m "$work/run/model.pt" -s "$source_dir/data/si_cp2k.h5" -n 2 --shuffle-test -r 7 \
    -o "$work/shuffled$k" >/dev/null 2>&1 || fail "shuffled test $k"
done
cmp -s "$work/shuffled1.frames.tsv" "$work/shuffled2.frames.tsv" && ok "--shuffle-test -r 7 repeats its sample" ||
  fail "--shuffle-test -r 7 drew two samples"
rows=$(awk -F'\t' 'NR == FNR { if (!/^#/) p[$1 ":" $2] = $5; next } !/^#/ { n++; if (p[$1 ":" $2] != $5) bad++ }
  END { print n + 0, bad + 0 }' "$work/by-path.frames.tsv" "$work/shuffled1.frames.tsv")
[ "$rows" = "6 0" ] && ok "shuffled rows carry their frames' numbers (6 rows)" ||
  fail "shuffled rows against the unshuffled run: $rows (rows, mismatches)"
moved=$(awk -F'\t' '!/^#/ && $2 > 1' "$work/shuffled1.frames.tsv" | wc -l)
[ "$moved" -gt 0 ] && ok "the shuffled sample is not the first frames" || fail "the shuffled sample is the first frames"

printf '# nothing here\n\n' >"$work/empty.txt"
expect_error "an empty list of systems" "the list of systems $work/empty.txt names no system" \
  "$deepkf" test -m "$work/run/model.pt" -f "$work/empty.txt"
expect_error "no systems at all" "give systems with -s, a list with -f, or an input" "$deepkf" test -m "$work/run/model.pt"
expect_error "a list that does not exist" "cannot read the list of systems $work/missing.txt" \
  "$deepkf" test -m "$work/run/model.pt" -f "$work/missing.txt"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_test checks passed"
