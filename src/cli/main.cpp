// deepkf: fit Deep Potentials with a Kalman-filter optimizer.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "src/cli/Commands.hpp"
#include "src/core/Error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"deepkf: train Deep Potentials (DeepPot-SE) with a layer-wise Kalman filter"};
  app.set_version_flag("--version", "deepkf 0.1.0");
  app.require_subcommand(1);
  deepkf::cli::add_data_command(app);
  deepkf::cli::add_convert_command(app);
  deepkf::cli::add_info_command(app);
  deepkf::cli::add_train_command(app);
  deepkf::cli::add_test_command(app);
  deepkf::cli::add_export_command(app);
  deepkf::cli::add_plan_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const deepkf::Error& e) {
    std::fprintf(stderr, "deepkf: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepkf: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
