#include "src/train/LearningCurve.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// The lines of an existing learning curve up to and including step `last` (comments kept, rows after
// `last` and torn last lines dropped).
std::string rows_up_to(const std::string& path, std::int64_t last) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read learning curve " + path);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a last line without its newline was cut short
    if (!line.empty() && line[0] == '#') {
      kept += line + "\n";
      continue;
    }
    std::istringstream words(line);
    std::int64_t step = 0;
    if (words >> step && step <= last) kept += line + "\n";
  }
  return kept;
}

}  // namespace

LearningCurve::LearningCurve(const std::string& path, std::int64_t restart_step, bool virial,
                             const std::string& status_name)
    : virial_(virial) {
  const bool resume = restart_step >= 0 && std::filesystem::exists(path);
  if (resume) {
    const std::string kept = rows_up_to(path, restart_step);
    // The column header is the first line; a file written before step_s existed goes on without it.
    const std::string header = kept.substr(0, kept.find('\n'));
    step_column_ = header.find(" wall_s") == std::string::npos || header.find(" step_s") != std::string::npos;
    write_text_atomically(path, kept);
  }
  out_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!out_) throw Error("cannot write learning curve " + path);
  if (resume) return;
  out_ << "#  step      rmse_e_val  rmse_e_trn  rmse_f_val  rmse_f_trn";
  if (virial_) out_ << "  rmse_v_val  rmse_v_trn";
  out_ << fmt::format("  {:>10}", status_name) << "      wall_s      step_s\n";
  out_ << "#  (energy and virial per atom: eV/atom; force: eV/A)\n";
}

void LearningCurve::add(std::int64_t step, const ErrorMetrics& val, const ErrorMetrics& trn, double status,
                        double wall_seconds, double step_seconds) {
  out_ << fmt::format("{:8d}  {:10.3e}  {:10.3e}  {:10.3e}  {:10.3e}", step, val.rmse_e(), trn.rmse_e(),
                      val.rmse_f(), trn.rmse_f());
  if (virial_) out_ << fmt::format("  {:10.3e}  {:10.3e}", val.rmse_v(), trn.rmse_v());
  out_ << fmt::format("  {:10.6f}  {:10.2f}", status, wall_seconds);
  if (step_column_) out_ << fmt::format("  {:10.2f}", step_seconds);
  out_ << "\n";
  out_.flush();
}

}  // namespace deepkf
