#pragma once
// Each subcommand lives in its own <Name>Command.cpp and adds itself to the application here.
// A subcommand's callback throws deepkf::Error (or a subclass) for bad input; main() prints it and
// exits non-zero.
#include <CLI/CLI.hpp>

namespace deepkf::cli {

void add_data_command(CLI::App& app);         // deepkf data summary PATH...
void add_convert_command(CLI::App& app);      // deepkf convert INPUT... -o OUT.h5
void add_info_command(CLI::App& app);         // deepkf info MODEL
void add_train_command(CLI::App& app);        // deepkf train INPUT.json [--restart CKPT] [--init-model MODEL]
void add_test_command(CLI::App& app);         // deepkf test -m MODEL -s SYSTEM...
void add_export_command(CLI::App& app);       // deepkf export CKPT -o MODEL
void add_freeze_command(CLI::App& app);       // deepkf freeze [-c DIR] [-o MODEL] (dp freeze's spelling)
void add_compress_command(CLI::App& app);     // deepkf compress MODEL -o OUT [--step H] [--extrapolate X]
void add_change_bias_command(CLI::App& app);  // deepkf change-bias MODEL -s DATA... [-m change|set] [-o OUT]
void add_neighbor_stat_command(CLI::App& app);  // deepkf neighbor-stat -s DATA... -r RCUT [-t TYPES...]
void add_plan_command(CLI::App& app);           // deepkf plan INPUT.json [--np N]
void add_uncertainty_command(CLI::App& app);    // deepkf uncertainty [-c CKPT] [-m MODEL...] -s DATA...
void add_model_devi_command(CLI::App& app);     // deepkf model-devi -m A B ... -s DATA... [-o model_devi.out]
void add_learn_command(CLI::App& app);          // deepkf learn LOOP.json [-o DIR]

}  // namespace deepkf::cli
