#!/usr/bin/env bash
# `deepkf neighbor-stat` (dp neighbor-stat's options) on the project's data, against two other code paths:
# the neighbour counts of `deepkf data summary` and the closest neighbours a training run logs (from the
# model's pair vectors), over the same frames.
# Usage: cli_neighbor_stat.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-neighbor-stat.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"
data=$source_dir/data/water_cp2k.h5

expect "neighbor-stat" "max_nbor_size" "$deepkf" neighbor-stat -s "$data" -r 5 -t O H
stat=$(grep max_nbor_size "$work/out" | sed 's/.*\[\(.*\)\]/\1/')
closest=$(awk '/^min_nbor_dist/ { print $2 }' "$work/out")
"$deepkf" data summary "$data" --rcut 5 --type-map O H >"$work/summary" 2>&1 || fail "data summary"
summary=$(awk '/^total/ { print $(NF - 1), $NF }' "$work/summary")
[ "$stat" = "$summary" ] && ok "max_nbor_size [$stat] = data summary's counts" ||
  fail "max_nbor_size [$stat], data summary's counts $summary"

cat >"$work/input.json" <<JSON
{"model": {"type_map": ["O", "H"],
           "descriptor": {"type": "se_e2_a", "rcut": 5.0, "rcut_smth": 1.0, "sel": [40, 80], "neuron": [4, 8],
                          "axis_neuron": 2},
           "fitting_net": {"neuron": [8]}},
 "optimizer": {"type": "Adam"},
 "training": {"training_data": {"systems": ["$data"]}, "numb_steps": 1, "disp_freq": 1, "save_freq": 1,
              "num_threads": 1}}
JSON
expect "train" "closest neighbours" "$deepkf" train "$work/input.json" -o "$work/run"
# "closest neighbours within rcut in the training data (A): O-O 2.412, O-H 0.953, H-H 1.466"
logged=$(grep -o 'closest neighbours within rcut in the training data (A): .*' "$work/run/train.log" |
  tr ',' '\n' | awk '{ print $NF }' | sort -g | head -1)
want=$(printf '%.3f' "$closest")
[ "$want" = "$logged" ] && ok "min_nbor_dist $closest = the training log's closest pair $logged" ||
  fail "min_nbor_dist $closest, the training log's closest pair $logged"

# All elements counted together: at least each element's most, at most their sum (not always the same atom).
expect "all elements as one" "max_nbor_size: [" "$deepkf" neighbor-stat -s "$data" -r 5 --one-type
one=$(grep max_nbor_size "$work/out" | sed 's/.*\[\(.*\)\]/\1/')
echo "$stat" | awk -v n="$one" '{ exit !(n >= $1 && n >= $2 && n <= $1 + $2) }' &&
  ok "one type: $one between the larger of [$stat] and their sum" || fail "one type: $one against [$stat]"
expect_error "a bad cutoff" "-r must be positive, got -1" "$deepkf" neighbor-stat -s "$data" -r -1

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_neighbor_stat checks passed"
