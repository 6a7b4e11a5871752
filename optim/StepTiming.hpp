#pragma once
// Where the time of RLEKF's steps goes, for the log: the Kalman filter's updates against the rest of the
// step (the model's measurements, their gradients and the sums over ranks). On a GPU each clock reading
// waits for the device to finish what was queued, so that kernels are charged to the phase that queued them
// rather than to the next host read.
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace deepkf {

class StepTiming {
 public:
  explicit StepTiming(torch::Device device) : device_(device) {}

  void begin_step();
  void end_step();
  // Around one filter update inside a step.
  void begin_filter();
  void end_filter();

  struct Totals {
    std::int64_t steps = 0;
    std::int64_t updates = 0;
    double step_seconds = 0.0;
    double filter_seconds = 0.0;
  };
  // Since construction, and since the last call of take_recent().
  const Totals& total() const { return total_; }
  Totals take_recent();

 private:
  double now() const;  // seconds, after the device has finished its queued work
  // Adds now() - start to both totals' `seconds` and counts one more in their `count`.
  void charge(double start, double Totals::*seconds, std::int64_t Totals::*count);

  torch::Device device_;
  Totals total_, recent_;
  double step_start_ = 0.0, filter_start_ = 0.0;
};

// "0.304 s per step: Kalman filter 0.121 s (40%, 5 updates), model 0.183 s"; "" for no steps.
std::string describe_step_time(const StepTiming::Totals& t);

}  // namespace deepkf
