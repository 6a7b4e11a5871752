#pragma once
// Where an online-learning run stands, in learn.state.json of its folder, rewritten atomically after every
// stage: the iteration, the last stage it completed, the level a relative trust window multiplies, and why it
// stopped. A loop started again on the same folder goes on after the last completed stage; the stages keep
// their finished parts (trained members, MD runs, CP2K results) on disk, so a stage cut short redoes only
// what was not finished.
#include <string>

namespace deepkf {

// The stages of an iteration, in order.
enum class Stage { kNone, kTrain, kExplore, kSelect, kLabel, kRecord };

const char* stage_name(Stage s);  // "none", "train", ...

struct LoopState {
  int format_version = 1;
  int iteration = 0;
  Stage done = Stage::kNone;     // the last stage of `iteration` that completed
  double reference_level = 0.0;  // median score of the first exploration (relative trust window); 0: not set
  std::string stopped;           // "" while running; else why the loop ended

  // The state in `path`, or a new one when the file does not exist. Throws DataError naming the file when it
  // exists but cannot be read.
  static LoopState read(const std::string& path);
  // Atomically (a kill -9 leaves the previous state or this one).
  void write(const std::string& path) const;
};

}  // namespace deepkf
