#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install_deps.sh"
bash "$root/scripts/build.sh"
cd "${DEEPKF_BUILD_DIR:-$root/build}"
# Open MPI refuses to start as root without these (tests run as root in containers and CI).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --output-on-failure -j "$(nproc)" "$@"
