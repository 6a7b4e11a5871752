#!/usr/bin/env bash
# Installs deepkf's build and run dependencies from Debian 12 packages. Safe to run again: when every
# package is already there it does nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache git
  libtorch-dev libopenblas0-pthread   # OpenBLAS: LibTorch's matrix products are 27x faster than reference BLAS
  libhdf5-dev zlib1g-dev   # zlib: CRC-32 checksums of model files and checkpoints
  libopenmpi-dev openmpi-bin
  libcli11-dev catch2 nlohmann-json3-dev libspdlog-dev libfmt-dev
  dpkg-dev xz-utils   # scripts/build_lammps.sh: unpack Debian's LAMMPS source (dpkg-source)
  python3-numpy python3-h5py   # tests/data_cp2k: layout checks of the shipped CP2K datasets
  python3-dev pybind11-dev python3-ase   # the Python module (python/): DeepPot and the ASE calculator
  liblmdb-dev python3-lmdb python3-msgpack   # DeePMD-kit's LMDB data layout; the tests write LMDB files
  cp2k cp2k-data   # deepkf learn labels frames with CP2K (tests/learn run it on silicon)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "deepkf: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
