#!/usr/bin/env bash
# BLAS threading A/B, interleaved: per round each variant runs N5 (40 RLEKF steps) and Adam (120 steps).
cd /tmp/prof
/usr/bin/python3 - <<'PY'
import json
for name, steps, disp in (("n5", 40, 40), ("adam", 120, 120)):
    d = json.load(open(f"{name}.json"))
    d["training"]["numb_steps"] = steps; d["training"]["disp_freq"] = disp
    d["training"]["validation_data"]["numb_btch"] = 1
    json.dump(d, open(f"ab_{name}.json", "w"), indent=1)
PY
for round in 1 2 3; do
  for v in pt2 new tmo; do
    unset OPENBLAS_NUM_THREADS LD_LIBRARY_PATH OPENBLAS_THREAD_TIMEOUT
    [ $v = pt2 ] && export OPENBLAS_NUM_THREADS=2
    [ $v = tmo ] && export OPENBLAS_NUM_THREADS=2 OPENBLAS_THREAD_TIMEOUT=4
    for j in n5 adam; do
      rm -rf ab_out
      /work/main/build/src/cli/deepkf train ab_$j.json -o ab_out --no-progress > /dev/null 2>&1
      # seconds per step between the first and last display (steps 1 and n)
      t=$(awk '!/^#/ { if (!s0) { s0 = $1; w0 = $NF } s = $1; w = $NF } END { printf "%.4f", (w - w0) / (s - s0) }' ab_out/lcurve.out)
      echo "$round $v $j $t"
    done
  done
done
