#!/usr/bin/env bash
# Fetches the LAMMPS source that matches Debian 12's lammps package, builds it with the PLUGIN package
# (shared library, MPI) and ML-SNAP (compute snap, for the linear SNAP baseline of
# bench/accuracy/bench_snap_baseline.cpp) and caches it under BUILD_DIR/lammps:
#   BUILD_DIR/lammps/src      source tree (headers the plugin is compiled against)
#   BUILD_DIR/lammps/build    CMake build tree (lmp, liblammps.so)
# Usage: scripts/build_lammps.sh [BUILD_DIR]   (default ./build). Prints the LAMMPS directory to pass as
# -DDEEPKF_LAMMPS_DIR. A second run finds the stamp file, which holds the CMake options, and does nothing
# unless the options changed (then the existing build tree is reconfigured and rebuilt incrementally).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${DEEPKF_BUILD_DIR:-$root/build}}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
dir="$build/lammps"
stamp="$dir/.built"
options=(-DCMAKE_BUILD_TYPE=Release -D BUILD_SHARED_LIBS=on -D PKG_PLUGIN=on -D PKG_ML-SNAP=on -D BUILD_MPI=on
  -D LAMMPS_EXCEPTIONS=on)

if [ -f "$stamp" ] && [ -x "$dir/build/lmp" ] && [ "$(cat "$stamp")" = "${options[*]}" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
cd "$dir"
if [ ! -f src/pair.h ]; then
  # A private apt configuration: only deb-src for bookworm, no change to /etc.
  apt_dir="$dir/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dir/fetch"
  echo "deb-src http://deb.debian.org/debian bookworm main" >"$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
  apt-get "${apt_opts[@]}" update >&2
  (cd "$dir/fetch" && apt-get "${apt_opts[@]}" source --download-only lammps >&2)
  dsc="$(ls "$dir"/fetch/lammps_*.dsc | head -n 1)"
  rm -rf "$dir/source"
  dpkg-source --no-check -x "$dsc" "$dir/source" >&2
  # Keep a stable path for the headers whatever the upstream version string is.
  ln -sfn source/src "$dir/src"
  ln -sfn source/cmake "$dir/cmake"
  rm -rf "$dir/fetch/"*.orig.tar.xz
fi

cmake -S "$dir/source/cmake" -B "$dir/build" "${options[@]}" >&2
nice -n 10 cmake --build "$dir/build" -j "${DEEPKF_LAMMPS_JOBS:-$(nproc)}" >&2
echo "${options[*]}" >"$stamp"
echo "$dir"
