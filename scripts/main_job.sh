#!/usr/bin/env bash
# The main job: installs what is missing, builds, then on the CP2K silicon data in data/ summarises the
# data, trains a Deep Potential with RLEKF (configs/si_cp2k.json), tests it on the frames training held
# out, and runs NPT molecular dynamics with it in LAMMPS through pair_style deepkf. Outputs go to
# runs/main/ (replaced on every run). Takes a few minutes on 2 cores after the first build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DEEPKF_BUILD_DIR:-$root/build}"
out="${DEEPKF_RUN_DIR:-$root/runs/main}"

bash "$root/scripts/install_deps.sh"
bash "$root/scripts/build.sh"
lammps_dir="$(bash "$root/scripts/build_lammps.sh" "$build")"
deepkf="$build/src/cli/deepkf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

rm -rf "$out"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "data: the CP2K datasets in data/"
"$deepkf" data summary --rcut 5.0 "$root/data/si_cp2k.h5"
"$deepkf" data summary --rcut 6.0 "$root/data/water_cp2k.h5"

step "train: configs/si_cp2k.json with RLEKF (outputs in $out)"
"$deepkf" train "$root/configs/si_cp2k.json" -o "$out" --no-progress

step "test: errors of the trained model on the frames training held out (validation_fraction)"
"$deepkf" test -m "$out/model.pt" --valid-data "$root/configs/si_cp2k.json" -o "$out/test"

step "LAMMPS: 512-atom diamond silicon, NPT at 300 K with pair_style deepkf (2 MPI ranks)"
ranks=$(( $(nproc) >= 2 ? 2 : 1 ))
(cd "$out" && mpiexec --oversubscribe -np "$ranks" "$lammps_dir/build/lmp" \
  -in "$root/lammps_plugin/examples/silicon_npt.in" -var model "$out/model.pt" \
  -var plugin "$build/lammps_plugin/libdeepkf_lammps.so" -log "$out/lammps.log" -screen none)
sed -n '/^ *Step/,/^Loop time/p' "$out/lammps.log"

step "results in $out"
printf '  %-18s %s\n' "model (LAMMPS)" "$out/model.pt" "checkpoint" "$out/model.ckpt" \
  "learning curve" "$out/lcurve.out" "training log" "$out/train.log" \
  "test errors" "$out/test.frames.tsv" "parity plot" "$out/test.parity.svg" "MD log" "$out/lammps.log"
