#include "optim/StepTiming.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <chrono>

namespace deepkf {

double StepTiming::now() const {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.has_index() ? device_.index() : -1);
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void StepTiming::charge(double start, double Totals::*seconds, std::int64_t Totals::*count) {
  const double s = now() - start;
  for (Totals* t : {&total_, &recent_}) {
    t->*seconds += s;
    ++(t->*count);
  }
}

void StepTiming::begin_step() { step_start_ = now(); }

void StepTiming::end_step() { charge(step_start_, &Totals::step_seconds, &Totals::steps); }

void StepTiming::begin_filter() { filter_start_ = now(); }

void StepTiming::end_filter() { charge(filter_start_, &Totals::filter_seconds, &Totals::updates); }

StepTiming::Totals StepTiming::take_recent() {
  const Totals out = recent_;
  recent_ = Totals{};
  return out;
}

std::string describe_step_time(const StepTiming::Totals& t) {
  if (t.steps == 0) return {};
  const double n = static_cast<double>(t.steps);
  const double step = t.step_seconds / n, filter = t.filter_seconds / n;
  return fmt::format("{:.3g} s per step: Kalman filter {:.3g} s ({:.0f}%, {:.3g} updates), model {:.3g} s",
                     step, filter, step > 0.0 ? 100.0 * filter / step : 0.0,
                     static_cast<double>(t.updates) / n, step - filter);
}

}  // namespace deepkf
