#!/usr/bin/env bash
# `deepkf plan` and `deepkf train` when the covariance asked for does not fit (memory set with
# DEEPKF_AVAILABLE_MEMORY): exit status 1, one line naming the need and what would fit, no stack trace, and
# train stops at set-up before the statistics; with room, plan prints the plan and exits 0.
# Usage: cli_memory_plan.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-memory-plan.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/input.json" <<EOF
{
  "model": {
    "type_map": ["Si"],
    "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                   "axis_neuron": 4, "type_one_side": true},
    "fitting_net": {"neuron": [32, 32]}
  },
  "optimizer": {"type": "RLEKF", "kf_blocksize": 5120, "p_precision": "float64"},
  "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5"]}, "numb_steps": 2}
}
EOF
fail() {
  echo "FAILED: $*"
  exit 1
}

DEEPKF_AVAILABLE_MEMORY=8MiB "$deepkf" plan "$work/input.json" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 1 ] || fail "plan with 8 MiB: exit status $rc, expected 1: $(cat "$work/err")"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "plan with 8 MiB: expected one line, got: $(cat "$work/err")"
grep -q "^deepkf: error: not enough memory: kf_blocksize 5120, float64 needs .* 8.0 MiB available (host, 90 % usable); these fit: kf_blocksize 512, float32" "$work/err" ||
  fail "plan with 8 MiB: unexpected message: $(cat "$work/err")"

DEEPKF_AVAILABLE_MEMORY=8MiB "$deepkf" train "$work/input.json" -o "$work/run" --no-progress >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 1 ] || fail "train with 8 MiB: exit status $rc, expected 1: $(cat "$work/err")"
grep -q "^deepkf: error: not enough memory" "$work/err" || fail "train with 8 MiB: $(cat "$work/err")"
grep -q "internal error\|frame #" "$work/err" && fail "train with 8 MiB: internal error: $(cat "$work/err")"
grep -q "energy bias" "$work/out" "$work/err" "$work/run/train.log" 2>/dev/null &&
  fail "train with 8 MiB: the statistics ran before the plan stopped it"

DEEPKF_AVAILABLE_MEMORY=8GiB "$deepkf" plan "$work/input.json" >"$work/out" 2>"$work/err" ||
  fail "plan with 8 GiB: exit status $?: $(cat "$work/err")"
grep -q "^memory plan: kf_blocksize 5120, float64 covariance: .* 8.0 GiB available (host)" "$work/out" ||
  fail "plan with 8 GiB: $(cat "$work/out")"
echo "memory plan: messages and exit statuses as documented"
