#pragma once
// The memory plan of a training run without training (`deepkf plan`, docs/input.md "Memory plan").
#include <string>

namespace deepkf {

// Reads the input at `input_path`, opens its data, resolves sel and builds the model, then plans the
// optimizer's memory for `nranks` ranks of which `ranks_per_node` share this machine (0: all of them).
// Returns "INPUT: N parameters, OPTIMIZER on R ranks (M per node)" and the plan's lines. Throws
// ResourceError with the settings that would fit when nothing does, ConfigError or DataError for bad input.
std::string plan_training_run(const std::string& input_path, int nranks, int ranks_per_node);

}  // namespace deepkf
