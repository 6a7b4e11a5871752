#pragma once
// The options DeePMD-kit's `dp` takes besides each command's own, so that a dp user's command lines run:
// -l/--log-path FILE and -v/--log-level LEVEL (dp takes them after the command; deepkf before or after it)
// and the backend choice --tf/--pt/--pd/--jax and -b/--backend NAME (before the command in dp), which
// deepkf accepts with a note: it has one backend.
#include <CLI/CLI.hpp>

namespace deepkf::cli {

// Adds them to the application; call it before the commands are added, since the commands take over the
// setting that lets them pass options they do not know to the application. They are applied once the
// command line has been read without error, before the command runs.
void add_dp_options(CLI::App& app);

}  // namespace deepkf::cli
