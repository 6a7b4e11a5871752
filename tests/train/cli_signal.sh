#!/usr/bin/env bash
# `deepkf train` stopped by SIGTERM: its train.log is current while it runs; it writes its checkpoint, exits with 128 + 15 (so that a batch scheduler
# sees a preempted job, not a finished one), and --restart continues to the end with status 0.
# Usage: cli_signal.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-signal.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}
cat >"$work/input.json" <<EOF
{
  "model": {
    "type_map": ["Si"],
    "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [24], "neuron": [8, 16],
                   "axis_neuron": 4, "type_one_side": true},
    "fitting_net": {"neuron": [32, 32]}
  },
  "optimizer": {"type": "RLEKF", "kf_blocksize": 512, "p0": 10.0},
  "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5"]}, "numb_steps": 100000,
               "disp_freq": 10, "save_freq": 100000}
}
EOF
"$deepkf" train "$work/input.json" -o "$work/run" --no-progress >"$work/out" 2>&1 &
pid=$!
# Wait until training has started (the first display line), then stop it.
for _ in $(seq 1 600); do
  grep -q "step       1 " "$work/out" && break
  sleep 0.1
done
grep -q "step       1 " "$work/out" || fail "training did not start: $(cat "$work/out")"
# The log is written line by line, not at exit.
grep -q "step       1 " "$work/run/train.log" || fail "train.log does not yet hold the first display line"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "exit status $rc after SIGTERM, expected 143: $(tail -3 "$work/out")"
grep -q "stopped by signal 15" "$work/out" || fail "no stop message: $(tail -3 "$work/out")"
[ -f "$work/run/model.ckpt" ] || fail "no checkpoint after SIGTERM"
stopped=$(sed -n 's/.*stopped by signal 15 at step \([0-9]*\).*/\1/p' "$work/out")
sed -i "s/\"numb_steps\": 100000/\"numb_steps\": $((stopped + 2))/" "$work/input.json"
"$deepkf" train "$work/input.json" -o "$work/run" --restart "$work/run/model.ckpt" --no-progress >"$work/out2" 2>&1 ||
  fail "--restart exited with $?: $(tail -3 "$work/out2")"
grep -q "finished after $((stopped + 2)) steps" "$work/out2" || fail "--restart did not finish: $(tail -3 "$work/out2")"
# An output path under a file is one clear error.
touch "$work/afile"
"$deepkf" train "$work/input.json" -o "$work/afile/out" --no-progress >"$work/out3" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "-o under a file: exit status $rc, expected 1: $(cat "$work/out3")"
grep -q "^deepkf: error: cannot create the output directory $work/afile/out" "$work/out3" ||
  fail "-o under a file: $(cat "$work/out3")"
echo "SIGTERM: checkpoint written, exit status 143; --restart finished from step $stopped"
