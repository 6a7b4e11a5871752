#include "src/train/ProgressBar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace deepkf {

ProgressBar::ProgressBar(std::int64_t first, std::int64_t total, int enabled)
    : first_(first),
      total_(total),
      enabled_(enabled < 0 ? ::isatty(2) != 0 : enabled != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

std::string ProgressBar::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<long long>(std::llround(seconds));
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(text, sizeof(text), "%02lld:%02lld", s / 60, s % 60);
  }
  return text;
}

void ProgressBar::update(std::int64_t done, const std::string& status) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done - first_) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : -1.0;
  const double fraction =
      total_ > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0) : 1.0;
  constexpr int kWidth = 28;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  char line[512];
  const int n = std::snprintf(line, sizeof(line), "\r%lld/%lld [%s] %3.0f%% %.2f steps/s ETA %s %s",
                              static_cast<long long>(done), static_cast<long long>(total_), bar.c_str(),
                              100.0 * fraction, rate, format_duration(eta).c_str(), status.c_str());
  const std::size_t width = static_cast<std::size_t>(std::max(0, n));
  std::fputs(line, stderr);
  if (width < last_width_) std::fprintf(stderr, "%*s", static_cast<int>(last_width_ - width), "");
  last_width_ = width;
  std::fflush(stderr);
}

void ProgressBar::clear() {
  if (!enabled_ || last_width_ == 0) return;
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(last_width_), "");
  std::fflush(stderr);
  last_width_ = 0;
}

void ProgressBar::finish() {
  if (!enabled_) return;
  std::fputc('\n', stderr);
  last_width_ = 0;
}

}  // namespace deepkf
