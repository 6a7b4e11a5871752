#!/usr/bin/env bash
# Adam for 200 s (SIGTERM: the run stops at a checkpoint), then RLEKF at its defaults from Adam's weights
# for 600 s: bash run.sh DEEPKF. The inputs name the shared water data by absolute path.
set -euo pipefail
deepkf=$(realpath "$1"); cd "$(dirname "$0")"
timeout -s TERM 200 "$deepkf" train adam-input.json -o adam --no-progress >adam.stdout 2>&1 || true
timeout -s KILL 600 "$deepkf" train rlekf-input.json -o rlekf --init-model adam/model.ckpt --no-progress \
  >rlekf.stdout 2>&1 || true
