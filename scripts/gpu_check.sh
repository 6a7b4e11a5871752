#!/usr/bin/env bash
# Builds deepkf with CUDA against PyTorch's bundled LibTorch on a machine with an NVIDIA GPU, runs the test
# suite and the GPU benchmarks, and writes every result to one folder.
#
#   bash scripts/gpu_check.sh stage          # on a Debian 12 machine with the package registry: downloads
#                                            # the libraries deepkf builds against (.deb) into .gpu/debs and
#                                            # copies ../shared/datasets (if there) into .gpu/datasets
#   bash scripts/gpu_check.sh run OUT_DIR    # on the GPU machine (CUDA, nvcc, CMake and a CUDA PyTorch in
#                                            # python3; no network): unpacks .gpu/debs, configures, builds,
#                                            # tests, benchmarks; logs and tables go to OUT_DIR
#
# The GPU machine's own libraries are preferred; the unpacked .debs are found only where the machine has
# none (they go to CMake's system prefix path, after the machine's own). With DEEPKF_GPU_DRY_RUN=1, `run`
# uses whatever LibTorch CMake finds (Debian's CPU one here) and skips what needs a GPU, to check the staging,
# configure and benchmark commands on a CPU machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage_dir="$root/.gpu/debs"

# The libraries from Debian 12 (headers, and the runtime libraries they link), without the C/C++ runtime.
packages=(
  libcli11-dev catch2 nlohmann-json3-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libhdf5-dev libhdf5-103-1 libhdf5-hl-100 libhdf5-cpp-103-1 libhdf5-hl-cpp-100 libsz2 libaec0 libcurl4
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
  libpsm-infinipath1 libpsm2-2 libnuma1 libmunge2 libpciaccess0
)

stage() {
  mkdir -p "$stage_dir"
  # Not part of the checkout: .gpu/ is ignored, and carried to the GPU machine explicitly.
  local exclude
  exclude="$(git -C "$root" rev-parse --git-path info/exclude)"
  [[ "$exclude" = /* ]] || exclude="$root/$exclude"
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  (cd "$stage_dir" && apt-get download "${packages[@]}")
  # The DFT datasets the tests and benchmarks read (a few MB), when this checkout has them beside it.
  local datasets="${DEEPKF_SHARED_DATASETS:-$root/../shared/datasets}"
  if [ -d "$datasets" ]; then
    rm -rf "$root/.gpu/datasets"
    cp -r "$datasets" "$root/.gpu/datasets"
  fi
  du -sh "$root/.gpu"/*
}

run() {
  local out="${1:?usage: gpu_check.sh run OUT_DIR}"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  local dry="${DEEPKF_GPU_DRY_RUN:-0}"
  local prefix="${DEEPKF_GPU_PREFIX:-/tmp/deepkf-gpu-deps}"
  local build="${DEEPKF_GPU_BUILD:-$root/build-gpu}"
  local jobs
  jobs="$(nproc)"
  exec > >(tee "$out/gpu_check.log") 2>&1
  echo "== deepkf gpu_check $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

  echo "== device"
  if [ "$dry" = 1 ]; then
    echo "dry run: no GPU"
  else
    nvidia-smi | tee "$out/nvidia-smi.txt"
  fi
  nvcc --version 2>/dev/null | tail -2 || echo "no nvcc on PATH"

  echo "== libraries: $stage_dir -> $prefix"
  mkdir -p "$prefix"
  local n=0
  for f in "$stage_dir"/*.deb; do
    [ -e "$f" ] || continue
    dpkg -x "$f" "$prefix"
    n=$((n + 1))
  done
  echo "unpacked $n packages"
  # Debian reaches Open MPI's tools through alternatives links, which unpacking does not make.
  for t in mpicxx mpicc mpiexec mpirun; do
    [ -e "$prefix/usr/bin/$t.openmpi" ] && [ ! -e "$prefix/usr/bin/$t" ] && ln -s "$t.openmpi" "$prefix/usr/bin/$t"
  done
  local libdir="$prefix/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$libdir:$libdir/openmpi/lib"
  export PATH="$PATH:$prefix/usr/bin"
  # Open MPI relocated from /usr to the prefix, when it is the unpacked one.
  if ! command -v mpiexec >/dev/null 2>&1 || [ "$(command -v mpiexec)" = "$prefix/usr/bin/mpiexec" ]; then
    export OPAL_PREFIX="$prefix/usr"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  # The staged datasets, unless the machine has its own.
  if [ -z "${DEEPKF_SHARED_DATASETS:-}" ] && [ -d "$root/.gpu/datasets" ]; then
    export DEEPKF_SHARED_DATASETS="$root/.gpu/datasets"
  fi
  echo "datasets: ${DEEPKF_SHARED_DATASETS:-none (the tests that read them are skipped)}"
  echo "mpiexec: $(command -v mpiexec) ${OPAL_PREFIX:+(OPAL_PREFIX $OPAL_PREFIX)}"
  mpiexec -n 2 hostname || echo "mpiexec does not start: the MPI tests will fail"

  echo "== configure"
  local torch_prefix=""
  if [ "$dry" != 1 ]; then
    torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
  fi
  local cuda_args=()
  if [ "$dry" != 1 ]; then
    cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
  fi
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_SYSTEM_PREFIX_PATH="/usr;/usr/local;$prefix/usr" \
    -DHDF5_ROOT="$prefix/usr/lib/x86_64-linux-gnu/hdf5/serial" "${cuda_args[@]}" 2>&1 | tee "$out/configure.log"
  grep -E "^(HDF5|MPI|Torch|CMAKE_CUDA_COMPILER)[A-Za-z_]*:" "$build/CMakeCache.txt" >"$out/found.txt" || true
  grep -q "DEEPKF_WITH_CUDA\|building the CUDA kernels" "$out/configure.log" && echo "CUDA kernels: built" ||
    echo "CUDA kernels: not built (LibTorch without CUDA)"

  echo "== build"
  cmake --build "$build" -j "$jobs" 2>&1 | tail -30

  echo "== tests"
  (cd "$build" && ctest --output-on-failure -j 4 2>&1 | tee "$out/ctest.log" | tail -40) || true

  echo "== benchmarks"
  local device=cuda
  [ "$dry" = 1 ] && device=cpu
  # Kalman step for kf_blocksize 1024 to 10240, float64 and float32, against a copy pass and the dense step.
  DEEPKF_BENCH_DEVICE=$device "$build/bench/optim/bench_kalman" "${DEEPKF_GPU_MIN_MIB:-4096}" 16 \
    2>&1 | tee "$out/bench_kalman.txt" || true
  echo "results in $out"
}

case "${1:-}" in
  stage) stage ;;
  run)
    shift
    run "$@"
    ;;
  *)
    echo "usage: bash scripts/gpu_check.sh stage | run OUT_DIR" >&2
    exit 2
    ;;
esac
