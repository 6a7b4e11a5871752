#pragma once
// The train stage of an online-learning iteration: every member of the ensemble is trained by `deepkf train`
// (a separate process, under mpirun when train.ranks > 1; train.jobs members at once) on the user's data plus
// every labelled frame so far. The first iteration starts from scratch (or train.init_models); each later one
// continues the member's own checkpoint (`deepkf train --continue`: weights, RLEKF covariance and lambda) for
// train.steps more steps, with the frames the last iteration labelled visited train.new_frame_repeat times
// per epoch (`training_data.repeat`), so that they weigh in although the filter has grown confident.
#include <spdlog/logger.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/learn/LearnConfig.hpp"

namespace deepkf {

struct TrainingRound {
  std::string dir;                        // the stage's folder; member k trains in dir/model_k
  std::vector<std::string> label_groups;  // labelled frames, oldest first ("labels.h5#/iter.000", ...)
  std::int64_t numb_steps = 0;            // total steps every member reaches
  std::vector<std::string> checkpoints;   // one per member to continue, or empty for the first round
  // Per member, "" or a model file to start from with a fresh covariance instead of continuing its
  // checkpoint (a member that diverged; it then trains all numb_steps steps).
  std::vector<std::string> restart_from;
};

struct TrainedMember {
  std::string model;       // model.pt
  std::string checkpoint;  // model.ckpt
  std::int64_t steps = 0;
  double wall_s = 0.0;
};

// The training input of member `member` for a round: the user's input `base` (read from base_file) with
// training_data.systems = the user's systems (absolute) + the round's label groups, training_data.repeat
// (new_frame_repeat for the newest group), numb_steps, the seeds of the member (the input's seeds + member)
// and, when the input leaves it at 0, num_threads = threads.
nlohmann::json member_input(const nlohmann::json& base, const std::string& base_file,
                            const TrainingRound& round, int member, int new_frame_repeat, int threads);

// Trains every member (a member whose folder holds a finished result is not trained again). Throws Error
// with the failing command and the tail of its output when a training fails.
std::vector<TrainedMember> train_ensemble(const LearnConfig& cfg, const TrainingRound& round,
                                          spdlog::logger& log);

}  // namespace deepkf
