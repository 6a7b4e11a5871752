#!/usr/bin/env bash
# Time to accuracy on DeePMD-kit's water reference model (configs/water_se_e2_a.json: embedding [25, 50, 100],
# fitting [240, 240, 240], 1,014,182 weights, kf_blocksize 5120) on the shared water data, each run given the
# same wall time: RLEKF variants and Adam with DeePMD-kit's own learning rate and loss (its example input).
# Validation force and energy RMSE on 4 frames of data_3 every 10 RLEKF / 50 Adam steps (lcurve.out), then
# curves.svg (validation force RMSE against the time of training) and table.md (time to each force level).
# The time is lcurve.out's step_s, the seconds inside the training steps: the displays' validation, which
# the two optimizers take at different intervals, is not counted (wall_s for runs written before step_s).
#
#   bash bench/optim/reference_time_to_accuracy.sh DEEPKF DATASETS_DIR OUT_DIR [SECONDS] [RUN...]
#
# SECONDS (default 600) per run; 0 only writes the table and the plot of the runs already in OUT_DIR.
# RUN: adam, or name='{optimizer keys}' for an RLEKF run (the keys go on top of the config's optimizer
# section; '{}' runs the defaults); default: adam, the joint update with the automatic force noise, and the
# same with one force group of 24 atoms (two measurements per step).
#
# DEEPKF_TTA_CONFIG=FILE trains another input instead, on its own data (paths as the file gives them,
# relative to it) and for Adam with the water example's learning rate and loss, virial prefactors 0.02 to
# 1 added where the file's RLEKF trains virials (DATASETS_DIR still gives that example input).
# DEEPKF_TTA_LEVELS="0.5 0.3 ..." sets the force levels of the table (default 0.5 0.3 0.2 0.15 0.1 0.05).
set -euo pipefail
deepkf=$(realpath "$1"); datasets=$(realpath "$2"); out=$(mkdir -p "$3" && realpath "$3"); seconds=${4:-600}
shift $(($# < 4 ? $# : 4))
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(adam 'joint={"kf_update": "joint", "force_noise": "auto"}'
  'joint_one_group={"kf_update": "joint", "force_noise": "auto", "groupsize": 24}')
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
water="$datasets/water"
[ -d "$water/data_0" ] || { echo "no water data at $water" >&2; exit 77; }
config=$(realpath "${DEEPKF_TTA_CONFIG:-$root/configs/water_se_e2_a.json}")

for run in "${runs[@]}"; do
  [ "$seconds" -gt 0 ] || break  # SECONDS 0: the table and plot of the runs already in OUT_DIR
  name=${run%%=*}
  keys=${run#*=}
  [ "$name" = adam ] && keys=adam
  mkdir -p "$out/$name"
  python3 - "$config" "$root/configs/water_se_e2_a.json" "$water" "$keys" "$out/$name/input.json" <<'PY'
import json, os, sys
config, reference, water, keys, path = sys.argv[1:]
doc = json.load(open(config))
t = doc["training"]
if config == os.path.realpath(reference):
    t["training_data"]["systems"] = [f"{water}/data_{k}" for k in range(3)]
    t["validation_data"]["systems"] = [f"{water}/data_3"]
else:  # the file's own data, its paths made absolute
    for part in ("training_data", "validation_data"):
        if part in t:
            t[part]["systems"] = [os.path.join(os.path.dirname(config), p) for p in t[part]["systems"]]
t.update({"numb_steps": 1000000, "disp_freq": 10, "save_freq": 1000000000})
if keys == "adam":
    ref = json.load(open(f"{water}/input_se_e2_a.reference.json"))
    kalman = doc.get("optimizer", {})
    virials = kalman.get("kf_start_pref_v", 0) > 0 or kalman.get("kf_limit_pref_v", 0) > 0
    doc["optimizer"] = {"type": "Adam"}
    doc["learning_rate"], doc["loss"] = ref["learning_rate"], dict(ref["loss"])
    if virials:
        doc["loss"].update({"start_pref_v": 0.02, "limit_pref_v": 1})
    t["disp_freq"] = 50
else:
    doc["optimizer"].update(json.loads(keys))
json.dump(doc, open(path, "w"), indent=1)
PY
  # Killed at the time limit: lcurve.out is written line by line, and no checkpoint is wanted.
  echo "$name: $seconds s"
  timeout -s KILL "$seconds" "$deepkf" train "$out/$name/input.json" -o "$out/$name" --no-progress \
    >"$out/$name/stdout" 2>&1 || true
  rm -f "$out/$name"/model.ckpt "$out/$name"/.model.ckpt.tmp-*
done

python3 - "$out" "${runs[@]%%=*}" <<'PY'
import os, sys
out, names = sys.argv[1], sys.argv[2:]
curves = {}
clock = "step_s"
for name in names:
    rows = []
    path = os.path.join(out, name, "lcurve.out")
    at = None
    for line in open(path) if os.path.exists(path) else []:
        f = line.split()
        if line.startswith("#  step"):
            # step, rmse_e val/trn, rmse_f val/trn, (rmse_v ...), lambda or lr, wall_s, step_s. The time is the
            # time inside the training steps (step_s: the displays' validation not counted, which the two
            # optimizers take at different intervals); wall_s for curves written before that column.
            columns = f[1:]
            at = columns.index("step_s") if "step_s" in columns else columns.index("wall_s")
            if "step_s" not in columns:
                clock = "wall_s"
            continue
        if line.startswith("#") or len(f) < 7 or f[3] == "nan":
            continue
        rows.append((float(f[at]), float(f[3]), float(f[1]), int(f[0])))  # time, val rmse_f, val rmse_e, step
    curves[name] = rows
levels = [float(v) for v in os.environ.get("DEEPKF_TTA_LEVELS", "0.5 0.3 0.2 0.15 0.1 0.05").split()]
with open(os.path.join(out, "table.md"), "w") as t:
    t.write("| run | steps | s per step | last val rmse_f (eV/A) | " + " | ".join(f"time to {l}" for l in levels) + " |\n")
    t.write("|---|---:|---:|---:|" + "---:|" * len(levels) + "\n")
    for name, rows in curves.items():
        if not rows:
            t.write(f"| {name} | 0 | | | " + " | ".join("" for _ in levels) + " |\n")
            continue
        per_step = (rows[-1][0] - rows[0][0]) / max(1, rows[-1][3] - rows[0][3])
        cells = []
        for l in levels:
            hit = next((r for r in rows if r[1] <= l), None)
            cells.append(f"{hit[0]:.0f} s (step {hit[3]})" if hit else "-")
        t.write(f"| {name} | {rows[-1][3]} | {per_step:.3f} | {rows[-1][1]:.3f} | " + " | ".join(cells) + " |\n")
# The plot: validation force RMSE (log scale) against wall time.
W, H, L, B = 640, 400, 60, 40
tmax = max((r[0] for rows in curves.values() for r in rows), default=1.0)
ys = [r[1] for rows in curves.values() for r in rows] or [1.0]
import math
lo, hi = math.log10(min(ys)) - 0.05, math.log10(max(ys)) + 0.05
x = lambda s: L + (W - L - 20) * s / tmax
y = lambda v: 20 + (H - B - 20) * (hi - math.log10(v)) / (hi - lo)
colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">'
       + ("time in training steps, validation not counted (s)" if clock == "step_s" else "wall time of training (s)")
       + '</text>',
       f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">validation force RMSE (eV/A)</text>']
for k in range(6):
    s = tmax * k / 5
    svg.append(f'<text x="{x(s):.1f}" y="{H - B + 15}" text-anchor="middle">{s:.0f}</text>')
for v in [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]:
    if lo <= math.log10(v) <= hi:
        svg.append(f'<text x="{L - 5}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
        svg.append(f'<line x1="{L}" y1="{y(v):.1f}" x2="{W - 20}" y2="{y(v):.1f}" stroke="#ddd"/>')
for i, (name, rows) in enumerate(curves.items()):
    c = colors[i % len(colors)]
    pts = " ".join(f"{x(r[0]):.1f},{y(r[1]):.1f}" for r in rows)
    svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
    svg.append(f'<text x="{W - 170}" y="{30 + 16 * i}" fill="{c}">{name}</text>')
svg.append("</svg>")
open(os.path.join(out, "curves.svg"), "w").write("\n".join(svg))
print(open(os.path.join(out, "table.md")).read())
PY
