#!/usr/bin/env bash
# Trains the same short runs with two deepkf executables and checks that their model files predict the
# same numbers to the last bit: how a change that must not alter results (a refactoring) is checked against
# the commit before it. configs/si_cp2k.json for 60 steps with RLEKF at its defaults, RLEKF with the joint
# update and a trust radius, and Adam, each on 1 and 2 MPI ranks.
#
#   bash scripts/compare_builds.sh OLD/build/src/cli/deepkf build/src/cli/deepkf /tmp/compare
#
# The predictions are read with the Python module of the second build (build/python), on three random
# 16-atom silicon cells, and compared with numpy.array_equal. Exits 1 when any pair differs.
#
# DEEPKF_COMPARE_NEW_KEYS='{...}' adds optimizer keys to the RLEKF runs of the second build only: keys the
# first build does not know, set to what it did (e.g. '{"force_gradient": "graph"}').
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") out=$3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python_dir="$(dirname "$new")/../../python"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
variants=(
  'rlekf={}'
  'joint_trust={"kf_update": "joint", "force_noise": "auto", "trust_radius": 0.3}'
  'adam=adam'
)
for v in "${variants[@]}"; do
  name=${v%%=*} keys=${v#*=}
  /usr/bin/python3 - "$root" "$out/$name" "$keys" "${DEEPKF_COMPARE_NEW_KEYS:-{\}}" <<'PY'
import json, sys
root, path, keys, new_keys = sys.argv[1:5]
c = json.load(open(f"{root}/configs/si_cp2k.json"))
c["optimizer"] = {"type": "Adam"} if keys == "adam" else {**c["optimizer"], **json.loads(keys)}
c["training"].update(numb_steps=60, disp_freq=20, save_freq=30)
c["training"]["training_data"]["systems"] = [f"{root}/data/si_cp2k.h5"]
json.dump(c, open(f"{path}-old.json", "w"), indent=1)
if keys != "adam":
    c["optimizer"].update(json.loads(new_keys))
json.dump(c, open(f"{path}-new.json", "w"), indent=1)
PY
  for np in 1 2; do
    for which in old new; do
      exe=$old
      [ "$which" = new ] && exe=$new
      dir=$out/$name-np$np-$which
      rm -rf "$dir"
      launch=()
      [ "$np" -gt 1 ] && launch=(mpirun -np "$np")
      "${launch[@]}" "$exe" train "$out/$name-$which.json" -o "$dir" > "$dir.log" 2>&1 || {
        echo "$dir: deepkf train failed (log: $dir.log)"
        exit 1
      }
    done
  done
done
PYTHONPATH="$python_dir" /usr/bin/python3 - "$out" <<'PY'
import glob, os, sys
import numpy as np
import deepkf
out = sys.argv[1]
rng = np.random.default_rng(1)
coord = rng.uniform(0.0, 10.86, (3, 16 * 3))
cell = np.tile(np.diag([10.86] * 3).ravel(), (3, 1))
atype = [0] * 16
differ = 0
for old in sorted(glob.glob(f"{out}/*-old")):
    new = old[:-3] + "new"
    a = deepkf.DeepPot(f"{old}/model.pt").eval(coord, cell, atype)
    b = deepkf.DeepPot(f"{new}/model.pt").eval(coord, cell, atype)
    same = all(np.array_equal(x, y) for x, y in zip(a, b))
    differ += not same
    print(f"{os.path.basename(old)[:-4]:18s} {'bit-identical' if same else 'DIFFERENT'}  "
          f"E {a[0].ravel()[0]:.17g} / {b[0].ravel()[0]:.17g}")
sys.exit(1 if differ else 0)
PY
