#!/usr/bin/env bash
# How long checkpoints keep training waiting, written in the foreground, in the background from a copy, or
# from the live covariance with a journal (training.save_in_background false, true, "journal"): DeePMD-kit's
# water reference model (configs/water_se_e2_a.json) on the shared water data, STEPS joint RLEKF steps with a
# save every SAVE_FREQ steps, one run per mode in one invocation. The background copy needs a second P in
# memory (default kf_blocksize 2048, float64: 8.1 GiB, fits this machine twice); the journal does not
# (kf_blocksize 5120, float64: the memory plan's 19.2 GiB).
#
#   bash bench/train/checkpoint_stall.sh DEEPKF DATASETS_DIR OUT_DIR [STEPS] [SAVE_FREQ] [BLOCKSIZE] \
#     [P_PRECISION] [MODES]          MODES: default "foreground background"; any of those, "journal", "auto"
#
# Writes OUT_DIR/MODE/train.log and OUT_DIR/table.md: training loop time, the time each save kept training
# waiting, and the background writes' own times from the log.
set -euo pipefail
deepkf=$(realpath "$1"); datasets=$(realpath "$2"); out=$(mkdir -p "$3" && realpath "$3")
steps=${4:-41}; save_freq=${5:-10}; blocksize=${6:-2048}; precision=${7:-float64}
modes=${8:-foreground background}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
water="$datasets/water"
[ -d "$water/data_0" ] || { echo "no water data at $water" >&2; exit 77; }
for mode in $modes; do
  mkdir -p "$out/$mode"
  python3 - "$root/configs/water_se_e2_a.json" "$water" "$out/$mode/input.json" "$mode" "$steps" "$save_freq" \
    "$blocksize" "$precision" <<'PY'
import json, sys
config, water, path, mode, steps, save_freq, blocksize, precision = sys.argv[1:]
doc = json.load(open(config))
t = doc["training"]
t["training_data"]["systems"] = [f"{water}/data_{k}" for k in range(3)]
t["validation_data"]["systems"] = [f"{water}/data_3"]
t.update({"numb_steps": int(steps), "disp_freq": 1000000, "save_freq": int(save_freq),
          "save_in_background": {"foreground": False, "background": True, "journal": "journal",
                                 "auto": "auto"}[mode],
          "change_bias_after_training": False,
          "calibration_frames": 0})
doc["optimizer"].update({"kf_update": "joint", "kf_blocksize": int(blocksize), "p_precision": precision})
json.dump(doc, open(path, "w"), indent=1)
PY
  echo "$mode: $steps steps, a save every $save_freq"
  /usr/bin/time -f "%e s wall, %M KiB max resident" "$deepkf" train "$out/$mode/input.json" -o "$out/$mode" \
    --no-progress >"$out/$mode/stdout" 2>"$out/$mode/time" || { cat "$out/$mode/stdout"; exit 1; }
  cat "$out/$mode/time"
done
python3 - "$out" $modes <<'PY'
import os, re, sys
from datetime import datetime
out = sys.argv[1]
def stamp(line):
    return datetime.strptime(line[1:20], "%Y-%m-%d %H:%M:%S")
with open(os.path.join(out, "table.md"), "w") as t:
    t.write("| saves | training loop (s) | waited per save before the last (s) | last save (s) | background writes (s) | max resident |\n")
    t.write("|---|---:|---|---:|---|---:|\n")
    for mode in sys.argv[2:]:
        lines = open(os.path.join(out, mode, "train.log")).read().splitlines()
        start = next(stamp(l) for l in lines if "training from step" in l)
        end = next(stamp(l) for l in lines if "steps on rank 0" in l)
        waited, written, last = [], [], None
        for l in lines:
            m = re.search(r"written at step (\d+) \(([^,]+), ([\d.]+) s( in the background)?\)", l)
            c = re.search(r"covariance copied in ([\d.]+) s", l)
            b = re.search(r"written from the live blocks while training goes on \(([\d.]+) s", l)
            j = re.search(r"written at step (\d+) \(([^,]+), ([\d.]+) s; begun at step \d+, .* in ([\d.]+) s", l)
            if c: waited.append(float(c.group(1)))
            if b: began = float(b.group(1))
            if j: waited.append(began + float(j.group(3))); written.append(float(j.group(4)))
            elif m and m.group(4): written.append(float(m.group(3)))
            elif m: last = float(m.group(3)); waited.append(last)
        if waited and waited[-1] == last: waited = waited[:-1]  # the last save: its own column
        rss = open(os.path.join(out, mode, "time")).read().split(",")[-1].strip()
        t.write(f"| {mode} | {(end - start).total_seconds():.0f} | {', '.join(f'{w:.1f}' for w in waited)} | "
                f"{last} | {', '.join(f'{w:.1f}' for w in written) or '-'} | {rss} |\n")
print(open(os.path.join(out, "table.md")).read())
PY
