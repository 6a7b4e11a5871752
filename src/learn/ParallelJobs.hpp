#pragma once
// Independent jobs (LAMMPS runs, CP2K single points, ensemble members' training) run a few at a time.
#include <cstddef>
#include <functional>

namespace deepkf {

// Calls job(i) for i = 0 .. count-1 on at most `workers` threads at once, taking the indices in order, and
// returns when every job has finished. When jobs throw, the others still run to the end; then the exception
// of the lowest index is rethrown.
void run_parallel(std::size_t count, int workers, const std::function<void(std::size_t)>& job);

}  // namespace deepkf
