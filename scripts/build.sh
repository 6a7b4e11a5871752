#!/usr/bin/env bash
# Configures and builds deepkf in ./build (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DEEPKF_BUILD_DIR:-$root/build}"
# LAMMPS with the PLUGIN package for pair_style deepkf (cached in the build tree: a second run does nothing).
lammps_dir="$(bash "$root/scripts/build_lammps.sh" "$build")"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEEPKF_LAMMPS_DIR="$lammps_dir" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
