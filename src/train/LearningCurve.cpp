#include "src/train/LearningCurve.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "src/core/Error.hpp"

namespace deepkf {

LearningCurve::LearningCurve(const std::string& path, bool append, bool virial,
                             const std::string& status_name)
    : virial_(virial) {
  const bool resume = append && std::filesystem::exists(path);
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
