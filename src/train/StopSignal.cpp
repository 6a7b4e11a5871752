#include "src/train/StopSignal.hpp"

#include <unistd.h>

#include <csignal>

namespace deepkf {
namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int signum) {
  if (g_signal != 0) {
    // Second signal: the user insists.
    const char msg[] = "\ndeepkf: second signal, exiting without a checkpoint\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    ::_exit(128 + signum);
  }
  g_signal = signum;
}

}  // namespace

StopSignal::StopSignal() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

StopSignal::~StopSignal() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool StopSignal::requested() { return g_signal != 0; }
int StopSignal::signal_number() { return static_cast<int>(g_signal); }
void StopSignal::raise_for_test(int signum) { g_signal = signum; }
void StopSignal::reset() { g_signal = 0; }

}  // namespace deepkf
