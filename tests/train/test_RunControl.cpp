#include <csignal>

#include "src/train/ProgressBar.hpp"
#include "src/train/StopSignal.hpp"
#include "tests/support/Catch.hpp"

TEST_CASE("a real SIGTERM sets the stop request instead of killing the process", "[train][signal]") {
  deepkf::StopSignal guard;
  deepkf::StopSignal::reset();
  REQUIRE_FALSE(deepkf::StopSignal::requested());
  std::raise(SIGTERM);
  CHECK(deepkf::StopSignal::requested());
  CHECK(deepkf::StopSignal::signal_number() == SIGTERM);
  deepkf::StopSignal::reset();
}

TEST_CASE("durations print as minutes or hours", "[train][progress]") {
  CHECK(deepkf::ProgressBar::format_duration(0) == "00:00");
  CHECK(deepkf::ProgressBar::format_duration(65.4) == "01:05");
  CHECK(deepkf::ProgressBar::format_duration(3723) == "1:02:03");
  CHECK(deepkf::ProgressBar::format_duration(-1) == "--:--");
  deepkf::ProgressBar off(0, 10, 0);
  CHECK_FALSE(off.enabled());
}
