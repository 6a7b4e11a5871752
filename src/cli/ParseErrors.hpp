#pragma once
// The one-line message for a command-line mistake that CLI11 reports (main prints it as
// `deepkf: error: <message>` with status 1). CLI11 checks required options before it looks at words it did
// not recognise, so a misspelt option would otherwise be reported as its correct spelling missing; the
// words left over are looked at first here:
//   unknown command "trian"; did you mean "train"?
//   unknown option --modle for deepkf test; did you mean --model?
#include <CLI/CLI.hpp>
#include <string>

namespace deepkf::cli {

// `app`: the application after the failed parse (it still holds what was recognised and what was not).
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error);

}  // namespace deepkf::cli
