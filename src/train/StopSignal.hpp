#pragma once
// SIGINT / SIGTERM handling for long runs: the first signal asks the trainer to stop after the current
// step (it then writes a checkpoint and exits cleanly); a second one ends the process at once.
namespace deepkf {

class StopSignal {
 public:
  // Installs the handlers; the previous ones come back when the object is destroyed.
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // True once SIGINT or SIGTERM arrived; also the signal number.
  static bool requested();
  static int signal_number();
  // For tests: behave as if `signum` had arrived.
  static void raise_for_test(int signum);
  static void reset();
};

}  // namespace deepkf
