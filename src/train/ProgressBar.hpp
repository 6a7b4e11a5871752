#pragma once
// A one-line progress bar with rate and ETA on stderr, shown only when stderr is a terminal (a log file or
// a batch job gets the periodic log lines instead).
#include <chrono>
#include <cstdint>
#include <string>

namespace deepkf {

class ProgressBar {
 public:
  // enabled: -1 decides from isatty(stderr), 0 never, 1 always.
  ProgressBar(std::int64_t first, std::int64_t total, int enabled = -1);
  // Redraws at most ~10 times a second. `status` is appended (e.g. the last RMSEs).
  void update(std::int64_t done, const std::string& status = "");
  // Clears the line so that log output that follows starts clean.
  void clear();
  void finish();
  bool enabled() const { return enabled_; }

  // "1:02:03" or "04:05" for a number of seconds.
  static std::string format_duration(double seconds);

 private:
  std::int64_t first_;
  std::int64_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::size_t last_width_ = 0;
};

}  // namespace deepkf
