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
# OUT_DIR gets 7 files (a GPU machine returns at most 8): gpu_check.log (everything printed), build.log,
# tests.txt (the [cuda] tests, test_model, ctest), bench_kalman.txt, train.tar.gz (each optimizer's
# lcurve.out, train.log and output), bench_lammps.txt (GPU, then CPU rank counts), mpi_scaling.txt.
# `run` goes through its phases in order, each cut off so that all end within DEEPKF_GPU_SECONDS (520) of
# the start: configure; build (the program, test_optim, test_model, the benchmarks, pair_style deepkf);
# cuda (the tests tagged [cuda]: CUDA against CPU; then test_model whole, and after a crash where its
# library calls bound; the Python module's DeepPot on the GPU against the CPU);
# bench (bench_kalman, and its joint update of 5 measurements); train (scripts/gpu_train_water.sh: the
# water reference model, RLEKF joint with a trust radius in blocks of 1024, the forces of all 192 atoms in
# one measurement, then one group of 24, and Adam, DEEPKF_GPU_TRAIN_SECONDS (50) each); lammps
# (bench_lammps on the GPU); scaling (on the CPU cores, the GPU hidden: data-parallel training at 1 to 16 ranks, bench/train/mpi_scaling.sh, and
# LAMMPS at 1 to 16 ranks); suite (everything else built, ctest for the time left).
# DEEPKF_GPU_PHASES="bench train" runs only those (the build folder, /tmp/deepkf-gpu-build, is kept while
# the machine is); DEEPKF_GPU_TRAIN_RUNS="rlekf adam" trains only those of trust1024, all192, groups4,
# shares, shares1024, rlekf, lkf, default, default_f64 and adam.
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
  liblmdb-dev liblmdb0
  pybind11-dev   # the Python module (built for the machine's python3, the one with PyTorch)
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
  stage_lammps
  stage_closure
  # The DFT datasets the tests and benchmarks read (a few MB), when this checkout has them beside it.
  local datasets="${DEEPKF_SHARED_DATASETS:-$root/../shared/datasets}"
  if [ -d "$datasets" ]; then
    rm -rf "$root/.gpu/datasets"
    cp -r "$datasets" "$root/.gpu/datasets"
  fi
  du -sh "$root/.gpu"/*
}

# LAMMPS as scripts/build_lammps.sh built it here (lmp, liblammps, the headers pair_style deepkf is compiled
# against, LAMMPS's bundled fmt) into .gpu/lammps, laid out as a source tree with its build: the plugin is
# built there against the GPU's LibTorch, and bench_lammps measures MD on the GPU.
stage_lammps() {
  local lammps="${DEEPKF_GPU_LAMMPS:-$root/build/lammps}" to="$root/.gpu/lammps"
  rm -rf "$to"
  if [ ! -x "$lammps/build/lmp" ] || [ ! -f "$lammps/src/pair.h" ]; then
    echo "no LAMMPS build at $lammps (scripts/build_lammps.sh): the GPU check will skip MD"
    return 0
  fi
  mkdir -p "$to/src" "$to/build"
  cp "$lammps"/src/*.h "$to/src/"
  cp -r "$lammps/src/fmt" "$to/src/"
  cp -L "$lammps/build/lmp" "$lammps/build/liblammps.so.0" "$to/build/"
  ln -s liblammps.so.0 "$to/build/liblammps.so"
  du -sh "$to"
}

# The shared libraries the staged ones load (HDF5's libcurl and its TLS, Kerberos and LDAP libraries, Open
# MPI's helpers) as this machine resolves them, except the C/C++ runtime: copied into .gpu/libs, which the GPU
# machine searches last, so that a library it lacks is still found there.
stage_closure() {
  local tmp libs="$root/.gpu/libs"
  tmp="$(mktemp -d)"
  for f in "$stage_dir"/*.deb; do dpkg -x "$f" "$tmp"; done
  rm -rf "$libs"
  mkdir -p "$libs"
  local ld="$tmp/usr/lib/x86_64-linux-gnu:$tmp/usr/lib/x86_64-linux-gnu/openmpi/lib:$tmp"
  [ -d "$root/.gpu/lammps/build" ] && cp "$root"/.gpu/lammps/build/* "$tmp/" 2>/dev/null
  find "$tmp" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    xargs -0 -n 50 env LD_LIBRARY_PATH="$ld" ldd 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -v -E "^$tmp|/(libc|libm|libdl|librt|libpthread|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so" |
    while read -r lib; do cp -L "$lib" "$libs/"; done || true  # ldd fails on files that are not ELF
  rm -rf "$tmp"
  echo "closure: $(ls "$libs" | wc -l) libraries in .gpu/libs"
}

# A phase's heading, with the seconds since the script started (to plan the next lease's phases).
say() { echo "== [${SECONDS} s] $*"; }

run() {
  local out="${1:?usage: gpu_check.sh run OUT_DIR}"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  local dry="${DEEPKF_GPU_DRY_RUN:-0}"
  local prefix="${DEEPKF_GPU_PREFIX:-/tmp/deepkf-gpu-deps}"
  local build="${DEEPKF_GPU_BUILD:-/tmp/deepkf-gpu-build}"
  local phases=" ${DEEPKF_GPU_PHASES:-configure build cuda bench train lammps scaling suite} "
  local jobs
  jobs="$(nproc)"
  # Every phase ends by this many seconds after the start, so that the results come back within the lease.
  local deadline=$((SECONDS + ${DEEPKF_GPU_SECONDS:-520}))
  exec > >(tee -a "$out/gpu_check.log") 2>&1
  say "deepkf gpu_check $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), phases:$phases"

  say "device"
  if [ "$dry" = 1 ]; then
    echo "dry run: no GPU"
  else
    nvidia-smi
  fi
  nvcc --version 2>/dev/null | tail -2 || echo "no nvcc on PATH"
  # The C++ compiler's own libstdc++ (shared, static, or both): decides how std::filesystem calls bind.
  local cxx
  cxx="$(command -v "${CXX:-g++}" || true)"
  if [ -n "$cxx" ]; then
    echo "$cxx: $("$cxx" --version | head -1); libstdc++.so $("$cxx" -print-file-name=libstdc++.so)," \
      "libstdc++.a $("$cxx" -print-file-name=libstdc++.a)"
    "$cxx" -dumpspecs | grep -n -E "static-libstdc|lstdc" | head -3 || true
  fi
  grep -m1 "model name" /proc/cpuinfo || true
  echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"

  # The machine's own MPI when it has one that works (compiler wrapper and launcher), else the unpacked Open
  # MPI. Decided before any unpacked library is on the search path, since those would shadow the machine's.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  local mpi_args=() machine_mpi=0 mpi_debs='openmpi|pmix|hwloc|event|ucx|fabric|psm|ibverbs|rdmacm|nl-|numa|munge|pciaccess'
  if { mpicxx -showme >/dev/null 2>&1 || mpicxx -show >/dev/null 2>&1; } &&  # Open MPI's, MPICH's
    timeout 20 mpiexec -n 2 true >/dev/null 2>&1; then
    machine_mpi=1
  else
    mpi_args=(-DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi"
      -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpiexec.openmpi")
    export OPAL_PREFIX="$prefix/usr"
  fi
  say "libraries: $stage_dir -> $prefix (MPI: $([ $machine_mpi = 1 ] && echo "the machine's" || echo unpacked))"
  rm -rf "$prefix"  # nothing left from an earlier run (an unpacked MPI shadowed the machine's)
  mkdir -p "$prefix" "$prefix/fallback" "$prefix/first-include" "$build"
  local n=0
  for f in "$stage_dir"/*.deb; do
    [ -e "$f" ] || continue
    [ $machine_mpi = 1 ] && [[ "$(basename "$f")" =~ ^(lib)?($mpi_debs) ]] && continue
    dpkg -x "$f" "$prefix"
    n=$((n + 1))
  done
  echo "unpacked $n packages"
  # Debian reaches Open MPI's tools through alternatives links, which unpacking does not make.
  for t in mpicxx mpicc mpiexec mpirun; do
    [ -e "$prefix/usr/bin/$t.openmpi" ] && [ ! -e "$prefix/usr/bin/$t" ] && ln -s "$t.openmpi" "$prefix/usr/bin/$t"
  done
  # Of the staged closure, only what the machine lacks (a library on LD_LIBRARY_PATH shadows the machine's).
  local m=0
  for f in "$root"/.gpu/libs/*; do
    [ -e "$f" ] || continue
    ldconfig -p | grep -q "^[[:space:]]$(basename "$f") " && continue
    ln -sf "$f" "$prefix/fallback/"
    m=$((m + 1))
  done
  echo "$m libraries of .gpu/libs the machine lacks"
  local libdir="$prefix/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$libdir:$libdir/openmpi/lib:$prefix/fallback"
  # The staged LAMMPS (lmp finds liblammps here; it was linked where it was built).
  local lammps_args=()
  if [ -x "$root/.gpu/lammps/build/lmp" ]; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$root/.gpu/lammps/build"
    lammps_args=(-DDEEPKF_LAMMPS_DIR="$root/.gpu/lammps")
  fi
  export PATH="$PATH:$prefix/usr/bin"
  # The staged datasets, unless the machine has its own.
  if [ -z "${DEEPKF_SHARED_DATASETS:-}" ] && [ -d "$root/.gpu/datasets" ]; then
    export DEEPKF_SHARED_DATASETS="$root/.gpu/datasets"
  fi
  echo "datasets: ${DEEPKF_SHARED_DATASETS:-none (the tests that read them are skipped)}"
  echo "mpiexec: $(command -v mpiexec) ${OPAL_PREFIX:+(OPAL_PREFIX $OPAL_PREFIX)}"
  timeout 20 mpiexec -n 2 hostname || echo "mpiexec does not start: the MPI tests will fail"

  # Ninja when the machine has it; builds go on past a failure (make -k, ninja -k 0).
  local generator=() keep_going=(-k)
  if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
    keep_going=(-k 0)
  fi
  # Seconds to the deadline (at least 1), or CAP if fewer: left [CAP].
  left() {
    local l=$((deadline - SECONDS > 1 ? deadline - SECONDS : 1))
    echo $((${1:-$l} < l ? ${1:-$l} : l))
  }

  if [[ "$phases" == *" configure "* ]]; then
    say "configure ($(cmake --version | head -1))"
    local torch_prefix=""
    if [ "$dry" != 1 ]; then
      torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
      python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
    fi
    local cuda_args=()
    if [ "$dry" != 1 ]; then
      cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
    fi
    # spdlog and the fmt it was built with, ahead of the fmt headers in PyTorch's wheel.
    ln -sfn "$prefix/usr/include/fmt" "$prefix/first-include/fmt"
    ln -sfn "$prefix/usr/include/spdlog" "$prefix/first-include/spdlog"
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_SYSTEM_PREFIX_PATH="/usr;/usr/local;$prefix/usr" \
      -DHDF5_ROOT="$prefix/usr/lib/x86_64-linux-gnu/hdf5/serial" "${mpi_args[@]}" "${cuda_args[@]}" "${lammps_args[@]}" \
      -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DDEEPKF_FIRST_INCLUDE_DIRS="$prefix/first-include" \
      -DPython_EXECUTABLE="$(command -v python3)" \
      -Dspdlog_DIR="$prefix/usr/lib/x86_64-linux-gnu/cmake/spdlog" -Dfmt_DIR="$prefix/usr/lib/x86_64-linux-gnu/cmake/fmt" 2>&1 |
      tee "$build/configure.log"
    grep -E "^(HDF5|MPI|Torch|CMAKE_CUDA_COMPILER)[A-Za-z_]*:" "$build/CMakeCache.txt" || true
    grep -q "building the CUDA kernels" "$build/configure.log" && echo "CUDA kernels: built" ||
      echo "CUDA kernels: not built (LibTorch without CUDA)"
  fi

  if [[ "$phases" == *" build "* ]]; then
    say "build: the program, the optimizer and model tests, the benchmarks, pair_style deepkf"
    # One build of every target the phases before the suite run, so that all cores are busy at once.
    local targets=(deepkf test_optim test_model bench_kalman bench_train_mpi)
    [ ${#lammps_args[@]} -gt 0 ] && targets+=(deepkf_lammps bench_lammps)
    grep -q '^DEEPKF_PYTHON_PATH' "$build/CMakeCache.txt" && targets+=(deepkf_python)  # pybind11 found
    timeout "$(left)" cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- "${keep_going[@]}" 2>&1 |
      tee "$out/build.log" | grep -E "error|warning|FAILED|Linking" | head -60 || true
    # Where libstdc++ stands among each program's needed libraries (first, or PyTorch's exported copies of
    # its functions are the ones called: cmake/DeepkfStdlibFirst.cmake), and the link command of one.
    for p in src/cli/deepkf tests/model/test_model; do
      [ -f "$build/$p" ] || continue
      echo "$p: needed libraries $(readelf -d "$build/$p" | grep NEEDED | sed -E 's/.*\[(.*)\]/\1/' | head -6 | tr '\n' ' ')"
    done
    if [ -f "$build/build.ninja" ]; then
      echo "link command of tests/model/test_model: $(ninja -C "$build" -t commands tests/model/test_model | tail -1 | cut -c1-600)"
    fi
  fi

  local device=cuda
  [ "$dry" = 1 ] && device=cpu
  if [[ "$phases" == *" cuda "* ]] && [ "$dry" != 1 ]; then
    say "CUDA against CPU: the Kalman sweep and filter, the model"
    for t in optim model; do
      timeout "$(left)" "$build/tests/$t/test_$t" "[cuda]" 2>&1 | tee -a "$out/tests.txt" | tail -15 || true
    done
    # test_optim whole runs in the suite (ctest); test_model here, since its model-file cases crashed once.
    say "test_model whole; after a crash, where its C++ library calls bound (scripts/gpu_link_report.sh)"
    for t in model; do
      local rc=0
      timeout "$(left)" "$build/tests/$t/test_$t" >>"$out/tests.txt" 2>&1 || rc=$?
      echo "test_$t: exit status $rc"
      # A crash: where its C++ library calls bound (the crashes so far were std::filesystem calls reaching
      # PyTorch's copies, cuda-gdb's backtrace showed).
      if [ "$rc" -gt 128 ] && [ "$rc" -ne 137 ]; then
        bash "$root/scripts/gpu_link_report.sh" "$build" "tests/$t/test_$t" 2>&1 | tee -a "$out/tests.txt" || true
      fi
    done
  fi

  if [[ "$phases" == *" cuda "* ]] && [ "$dry" != 1 ] && [ -d "$build/python/deepkf" ]; then
    say "the Python module on the GPU against the CPU (tests/python, CudaTest)"
    (cd "$root/tests/python" && PYTHONPATH="$build/python" DEEPKF_BIN="$build/src/cli/deepkf" DEEPKF_SOURCE="$root" \
      timeout "$(left 90)" python3 -X faulthandler -m unittest -v test_deepkf.CudaTest 2>&1 | tee -a "$out/tests.txt" | tail -8) || true
  fi

  if [[ "$phases" == *" bench "* ]]; then
    say "Kalman step for kf_blocksize 1024 to 10240, float64 and float32, against a copy pass and the dense step"
    DEEPKF_BENCH_DEVICE=$device timeout "$(left 90)" "$build/bench/optim/bench_kalman" \
      "${DEEPKF_GPU_MIN_MIB:-4096}" 16 2>&1 | tee "$out/bench_kalman.txt" || true
    say "joint Kalman update of 5 measurements (one sweep) against the scalar step, b = 2048, 5120, 10240"
    DEEPKF_BENCH_DEVICE=$device DEEPKF_BENCH_JOINT=5 timeout "$(left 45)" "$build/bench/optim/bench_kalman" \
      "${DEEPKF_GPU_MIN_MIB:-4096}" 16 2048 5120 10240 2>&1 | tee -a "$out/bench_kalman.txt" || true
  fi

  if [[ "$phases" == *" train "* ]]; then
    say "training the water reference model (${DEEPKF_GPU_TRAIN_RUNS:-all192 trust1024 adam}), ${DEEPKF_GPU_TRAIN_SECONDS:-50} s each"
    bash "$root/scripts/gpu_train_water.sh" "$build/src/cli/deepkf" "$out" "$device" "$dry"
  fi

  if [[ "$phases" == *" lammps "* ]]; then
    say "MD throughput of pair_style deepkf (bench_lammps: 192 and 12,288 water atoms, ${DEEPKF_GPU_MD_RANKS:-1,2,4} ranks on the GPU)"
    if [ ${#lammps_args[@]} -eq 0 ]; then
      echo "no staged LAMMPS (.gpu/lammps): skipped"
    else
      timeout "$(left)" cmake --build "$build" -j "$jobs" --target deepkf_lammps bench_lammps -- "${keep_going[@]}" \
        2>&1 | tee -a "$out/build.log" | grep -E "error|FAILED" | head -20 || true
      echo "device: $device" >>"$out/bench_lammps.txt"
      timeout "$(left 120)" "$build/bench/lammps_plugin/bench_lammps" "${DEEPKF_GPU_MD_STEPS:-50}" 5 small,large \
        "${DEEPKF_GPU_MD_RANKS:-1,2,4}" 2>&1 |
        tee -a "$out/bench_lammps.txt" | tail -30 || true
    fi
  fi

  if [[ "$phases" == *" scaling "* ]]; then
    # The CPU cores alone (CUDA_VISIBLE_DEVICES empty: the program and the plugin fall back to the CPU).
    local ranks="${DEEPKF_GPU_RANKS:-2 4 8 16}"
    say "strong scaling on the CPU: mpiexec -n 1 $ranks of data-parallel RLEKF training (bench_train_mpi)"
    timeout "$(left)" cmake --build "$build" -j "$jobs" --target bench_train_mpi -- "${keep_going[@]}" 2>&1 |
      tee -a "$out/build.log" | grep -E "error|FAILED" | head -20 || true
    # shellcheck disable=SC2086 # the rank counts are words
    CUDA_VISIBLE_DEVICES="" timeout "$(left 150)" bash "$root/bench/train/mpi_scaling.sh" "$build" 6 16 1024 \
      $ranks 2>&1 | tee "$out/mpi_scaling.txt" | tail -9 || true
    if [ ${#lammps_args[@]} -gt 0 ]; then
      say "LAMMPS on the CPU: 12,288 water atoms, float64, 1 $ranks ranks (cores / ranks threads each)"
      echo "device: cpu (CUDA_VISIBLE_DEVICES empty)" >>"$out/bench_lammps.txt"
      CUDA_VISIBLE_DEVICES="" timeout "$(left 120)" "$build/bench/lammps_plugin/bench_lammps" 0 3 large \
        "1,${ranks// /,}" float64 2>&1 | tee -a "$out/bench_lammps.txt" | tail -12 || true
    fi
  fi

  if [[ "$phases" == *" suite "* ]]; then
    say "the whole test suite (for the time left: $(left) s)"
    timeout "$(left)" cmake --build "$build" -j "$jobs" -- "${keep_going[@]}" 2>&1 | tee -a "$out/build.log" |
      grep -E "error|FAILED" | head -30 || true
    (cd "$build" && timeout "$(left)" ctest -j 8 --timeout 300 --output-on-failure 2>&1 |
      tee -a "$out/tests.txt" | grep -E "tests passed|Failed|\*\*\*|Timeout" | head -60) || true
  fi
  say "done at $(date -u +%FT%TZ); results in $out"
}

case "${1:-}" in
  stage) stage ;;
  closure) stage_closure ;;
  run)
    shift
    run "$@"
    ;;
  *)
    echo "usage: bash scripts/gpu_check.sh stage | run OUT_DIR" >&2
    exit 2
    ;;
esac
