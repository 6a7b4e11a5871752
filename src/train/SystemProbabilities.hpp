#pragma once
// How often each training system is drawn, in DeePMD-kit's terms (training_data.sys_probs and
// training_data.auto_prob; docs/input.md, "How often each system is drawn"). Without either key every
// frame is visited once per epoch (BatchSampler), which is DeePMD-kit's default "prob_sys_size": a
// system's share of the batches is its share of all batches. With them, an epoch keeps its number of
// batches and system s gets a share p_s of it.
#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

// auto_prob parsed: "prob_uniform", "prob_sys_size", or "prob_sys_size;a:b:w;c:d:v;..." where systems
// [a, b) together get the weight w (normalised over the blocks) and share it by their batches; systems in no
// block are never drawn.
struct AutoProb {
  struct Block {
    std::int64_t begin = 0, end = 0;
    double weight = 0.0;
  };
  bool uniform = false;
  std::vector<Block> blocks;  // empty with uniform false: "prob_sys_size" over all systems
};

// Throws ConfigError naming `key` in `file` and the text when it is not one of the forms above (a block
// with a > b, a negative or non-finite weight, or no positive weight).
AutoProb parse_auto_prob(const std::string& text, const std::string& key, const std::string& file);

// The probabilities p_s (summing to 1) of drawing each system, from `batches` (each system's batches per
// epoch without weights). sys_probs, when given, wins over auto_prob (as in DeePMD-kit): one entry per
// system (after paths are expanded into systems); entries >= 0 are the probabilities of their systems, the
// negative entries share what is left, by their batches; the given ones must not sum to more than 1 and,
// without a negative entry, must sum to 1. Returns an empty vector when neither key is given or when the
// result is the plain "prob_sys_size" (the unweighted order). Throws ConfigError naming `path`.sys_probs or
// `path`.auto_prob in `file` with the values and the number of systems.
std::vector<double> system_probabilities(const std::vector<double>& sys_probs, const std::string& auto_prob,
                                         const std::vector<std::int64_t>& batches, const std::string& path,
                                         const std::string& file);

}  // namespace deepkf
