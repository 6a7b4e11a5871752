#!/usr/bin/env bash
# `deepkf test` with `dp test`'s options on the project's data: systems listed in a file (-f), the first N
# frames of each (-n), DeePMD-kit's detail files (-d), and the mistakes it refuses with one error line.
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

printf '# nothing here\n\n' >"$work/empty.txt"
expect_error "an empty list of systems" "the list of systems $work/empty.txt names no system" \
  "$deepkf" test -m "$work/run/model.pt" -f "$work/empty.txt"
expect_error "no systems at all" "give systems with -s or a list with -f" "$deepkf" test -m "$work/run/model.pt"
expect_error "a list that does not exist" "cannot read the list of systems $work/missing.txt" \
  "$deepkf" test -m "$work/run/model.pt" -f "$work/missing.txt"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_test checks passed"
