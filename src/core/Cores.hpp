#pragma once
// How many CPU cores a process may use, and its share of them among the ranks on its node.
//
// An MPI launcher may bind each rank to some cores (Open MPI binds each of 1 or 2 ranks to a single core by
// default, and more ranks to a socket); the kernel then runs the process only there, and threads beyond
// those cores queue behind each other. std::thread::hardware_concurrency() counts the whole machine.
namespace deepkf {

// The cores in this process's CPU affinity mask (sched_getaffinity), or the machine's when that cannot be
// read. At least 1.
int usable_cores();

// Threads for one of `ranks_on_node` processes sharing the node: its share of the machine's cores, and no
// more than it may run on, min(usable_cores(), machine cores / ranks_on_node). At least 1.
int threads_per_rank(int ranks_on_node);

}  // namespace deepkf
