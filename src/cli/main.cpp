// deepkf: fit Deep Potentials with a Kalman-filter optimizer.
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "src/cli/Commands.hpp"
#include "src/cli/DpOptions.hpp"
#include "src/cli/ParseErrors.hpp"
#include "src/core/Error.hpp"
#include "src/core/OpenMpWait.hpp"
#include "src/model/CpuMemoryCache.hpp"

namespace {

constexpr const char* kOutOfMemory =
    "out of memory: the run needs more than this machine has free; `deepkf plan INPUT` shows what a "
    "training run needs per rank and the settings that fit";

}  // namespace

int main(int argc, char** argv) {
  deepkf::bound_openmp_spinning(argv);
  deepkf::single_threaded_blas();
  deepkf::use_cpu_memory_cache();
  CLI::App app{"deepkf: train Deep Potentials (DeepPot-SE) with a layer-wise Kalman filter"};
  app.set_version_flag("--version", "deepkf 0.1.0");
  app.require_subcommand(1);
  deepkf::cli::add_dp_options(app);
  deepkf::cli::add_data_command(app);
  deepkf::cli::add_convert_command(app);
  deepkf::cli::add_info_command(app);
  deepkf::cli::add_train_command(app);
  deepkf::cli::add_test_command(app);
  deepkf::cli::add_export_command(app);
  deepkf::cli::add_freeze_command(app);
  deepkf::cli::add_compress_command(app);
  deepkf::cli::add_change_bias_command(app);
  deepkf::cli::add_neighbor_stat_command(app);
  deepkf::cli::add_plan_command(app);
  deepkf::cli::add_uncertainty_command(app);
  deepkf::cli::add_model_devi_command(app);
  deepkf::cli::add_learn_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    // A mistake on the command line (an unknown command or option, a file that is not there): one line,
    // status 1, as every other error.
    std::fprintf(stderr, "deepkf: error: %s\n", deepkf::cli::parse_error_message(app, e).c_str());
    return 1;
  } catch (const deepkf::Error& e) {
    std::fprintf(stderr, "deepkf: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "deepkf: error: %s\n", kOutOfMemory);
    return 1;
  } catch (const c10::Error& e) {
    // LibTorch's messages carry its C++ stack; the user sees the first line only.
    const std::string what = deepkf::first_line(e.what_without_backtrace());
    if (what.find("alloc") != std::string::npos && what.find("memory") != std::string::npos) {
      std::fprintf(stderr, "deepkf: error: %s (%s)\n", kOutOfMemory, what.c_str());
      return 1;
    }
    std::fprintf(stderr, "deepkf: internal error: %s\n", what.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepkf: internal error: %s\n", deepkf::first_line(e.what()).c_str());
    return 2;
  }
  return 0;
}
