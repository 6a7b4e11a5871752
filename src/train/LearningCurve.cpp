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
  if (resume) write_text_atomically(path, rows_up_to(path, restart_step));
  out_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!out_) throw Error("cannot write learning curve " + path);
  if (resume) return;
  out_ << "#  step      rmse_e_val  rmse_e_trn  rmse_f_val  rmse_f_trn";
  if (virial_) out_ << "  rmse_v_val  rmse_v_trn";
  out_ << fmt::format("  {:>10}", status_name) << "      wall_s\n";
  out_ << "#  (energy and virial per atom: eV/atom; force: eV/A)\n";
}

void LearningCurve::add(std::int64_t step, const ErrorMetrics& val, const ErrorMetrics& trn, double status,
                        double wall_seconds) {
  out_ << fmt::format("{:8d}  {:10.3e}  {:10.3e}  {:10.3e}  {:10.3e}", step, val.rmse_e(), trn.rmse_e(),
                      val.rmse_f(), trn.rmse_f());
  if (virial_) out_ << fmt::format("  {:10.3e}  {:10.3e}", val.rmse_v(), trn.rmse_v());
  out_ << fmt::format("  {:10.6f}  {:10.2f}\n", status, wall_seconds);
  out_.flush();
}

}  // namespace deepkf
