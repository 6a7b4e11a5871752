#!/usr/bin/env bash
# Where a program's C++ standard library calls bind at run time, for a crash inside std::filesystem on a
# build against PyTorch's LibTorch (PyTorch's libraries export copies of parts of libstdc++; deepkf names
# libstdc++ first on every link line, cmake/DeepkfStdlibFirst.cmake). Prints the program's first needed
# libraries, its link command as the build wrote it, the libraries the std::filesystem calls of one run
# bound to, and how many std::filesystem symbols each LibTorch library exports.
#
#   bash scripts/gpu_link_report.sh BUILD_DIR PROGRAM [TEST_SPEC]    # PROGRAM relative to BUILD_DIR
set -uo pipefail
build="${1:?usage: gpu_link_report.sh BUILD_DIR PROGRAM [TEST_SPEC]}"
program="${2:?usage: gpu_link_report.sh BUILD_DIR PROGRAM [TEST_SPEC]}"
spec="${3:-}"
echo "-- $program: the first needed libraries, in the order the dynamic linker searches them"
readelf -d "$build/$program" | grep NEEDED | head -8
echo "-- $program: the position of libstdc++ among its needed libraries"
readelf -d "$build/$program" | grep NEEDED | grep -n "libstdc++" || echo "libstdc++ is not a needed library"
echo "-- $program: its link command"
if [ -f "$build/build.ninja" ]; then
  # Ninja's own account of the command (the build.ninja line names the output with implicit outputs beside).
  ninja -C "$build" -t commands "$program" | tail -1 | cut -c1-900
else
  cut -c1-700 "$build/$(dirname "$program")/CMakeFiles/$(basename "$program").dir/link.txt" 2>/dev/null
fi
echo "-- $program ${spec:+\"$spec\"}: where its std::filesystem calls bound (LD_DEBUG=bindings)"
# shellcheck disable=SC2086 # no spec: the whole program
LD_DEBUG=bindings timeout 120 "$build/$program" ${spec:+"$spec"} 2>&1 >/dev/null |
  grep "_ZNSt10filesystem" | sed -E 's/^ *[0-9]+: *//' | sort | uniq -c | sort -rn | head -12
echo "-- std::filesystem symbols each LibTorch library exports (defined)"
ldd "$build/$program" | awk '/libtorch|libc10/ {print $3}' | while read -r lib; do
  echo "$(nm -D --defined-only "$lib" 2>/dev/null | grep -c "_ZNSt10filesystem") $lib"
done
