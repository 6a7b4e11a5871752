#include "optim/AtomSelector.hpp"

#include <torch/torch.h>

#include <cstring>
#include <sstream>
#include <string>

#include "src/core/Error.hpp"
#include "src/core/Random.hpp"

namespace deepkf {

namespace {
// Stream id of the atom selection in deepkf::make_stream (other streams: data order, ...).
constexpr std::uint64_t kAtomSelectionStream = 0x41544f4d53454c;  // "ATOMSEL"
}  // namespace

AtomSelector::AtomSelector(std::uint64_t seed, int nselect, int groupsize)
    : nselect_(nselect), groupsize_(groupsize), rng_(make_stream(seed, kAtomSelectionStream)) {
  if (nselect < 1)
    throw ConfigError("atom selector: kf_nselect is " + std::to_string(nselect) + ", must be >= 1");
  if (groupsize < 1) {
    throw ConfigError("atom selector: kf_groupsize is " + std::to_string(groupsize) + ", must be >= 1");
  }
}

std::vector<torch::Tensor> AtomSelector::select(std::int64_t nframes, std::int64_t natoms,
                                                torch::Device device) {
  return select(0, nframes, nframes, natoms, device);
}

std::vector<torch::Tensor> AtomSelector::select(std::int64_t first_frame, std::int64_t nframes,
                                                std::int64_t total_frames, std::int64_t natoms,
                                                torch::Device device) {
  if (natoms < 1) throw OptimError("atom selector: frames have " + std::to_string(natoms) + " atoms");
  if (first_frame < 0 || nframes < 0 || first_frame + nframes > total_frames) {
    throw OptimError("atom selector: frames [" + std::to_string(first_frame) + ", " +
                     std::to_string(first_frame + nframes) + ") are outside the batch of " +
                     std::to_string(total_frames));
  }
  // drawn[k][j]: atom j of frame k, for every frame of the batch.
  std::vector<std::int64_t> drawn(static_cast<std::size_t>(total_frames * nselect_));
  for (auto& x : drawn)
    x = static_cast<std::int64_t>(uniform_below(rng_, static_cast<std::uint64_t>(natoms)));
  const auto all =
      torch::tensor(drawn, torch::kInt64).view({total_frames, nselect_}).narrow(0, first_frame, nframes);
  std::vector<torch::Tensor> groups;
  for (int g0 = 0; g0 < nselect_; g0 += groupsize_) {
    const int g = std::min(groupsize_, nselect_ - g0);
    groups.push_back(all.narrow(1, g0, g).contiguous().to(device));
  }
  return groups;
}

void AtomSelector::save(torch::serialize::OutputArchive& archive) const {
  std::ostringstream text;
  text << rng_;
  const std::string s = text.str();
  auto bytes = torch::empty({static_cast<std::int64_t>(s.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), s.data(), s.size());
  torch::serialize::OutputArchive state;
  state.write("rng", bytes);
  state.write("nselect", torch::full({}, std::int64_t{nselect_}, torch::kInt64));
  state.write("groupsize", torch::full({}, std::int64_t{groupsize_}, torch::kInt64));
  archive.write("atom_selector", state);
}

void AtomSelector::load(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive state;
  if (!archive.try_read("atom_selector", state)) {
    throw OptimError("atom selector state: the archive has no 'atom_selector' entry");
  }
  torch::Tensor bytes;
  if (!state.try_read("rng", bytes)) throw OptimError("atom selector state: entry 'rng' is missing");
  bytes = bytes.to(torch::kCPU).contiguous();
  std::istringstream text(
      std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())));
  std::mt19937_64 rng;
  text >> rng;
  if (text.fail()) throw OptimError("atom selector state: entry 'rng' is not a std::mt19937_64 state");
  rng_ = rng;
}

}  // namespace deepkf
