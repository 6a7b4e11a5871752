#include "src/uncertainty/KalmanUncertainty.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "optim/DifferenceGradients.hpp"
#include "src/core/Error.hpp"
#include "src/core/Random.hpp"
#include "src/eval/FrameErrors.hpp"
#include "src/model/Batch.hpp"

namespace deepkf {

namespace {

constexpr std::uint64_t kScoredAtomsStream = 0x53434f5245;   // "SCORE"
constexpr std::int64_t kRowBytes = std::int64_t{256} << 20;  // gathered gradient rows, all ranks together
constexpr std::int64_t kMaxRows = 128;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One frame on the model, giving the gradient of one scored quantity at a time: quantity 0 is E / N,
// quantity 1 + 3 s + a is F_ia for the s-th scored atom i. Through the graph, the graph of the energy and
// forces is kept for all of them; by difference, the energy's gradient G = dE/dw comes with the forces and
// each F_ia = -dE/dx_ia takes -(G(x + eps e_ia) - G(x)) / eps.
class FrameQuantities {
 public:
  FrameQuantities(DeepPot& model, const std::vector<torch::Tensor>& params, const FrameSubset& set,
                  std::int64_t system, std::int64_t position, std::vector<std::int64_t> atoms,
                  bool by_difference)
      : model_(model), params_(params), by_difference_(by_difference) {
    const System frames = set.read({position});
    const auto& config = model->config();
    batch_ = make_batch(frames, {0}, config, params.front().device(), config.precision);
    const Batch& b = batch_;
    out_ = model->evaluate(b.coord, b.atype, b.nlist, b.shift,
                           by_difference ? EvalOptions::with_energy_gradient() : EvalOptions::training());
    check_finite(set, position);
    score_.system = system;
    score_.frame = position;
    score_.natoms = b.natoms;
    score_.atoms = std::move(atoms);
    score_.var_f.assign(3 * score_.atoms.size(), FrameScore::kNone);
    energy_per_atom_ = out_.energy[0] / static_cast<double>(b.natoms);
    errors(frames);
  }

  std::int64_t count() const { return 1 + 3 * static_cast<std::int64_t>(score_.atoms.size()); }

  // dy/dw of quantity q, in the flat order of `layout`, written into row ([N] float64, CPU).
  void gradient(std::int64_t q, const BlockLayout& layout, torch::Tensor row) {
    if (by_difference_) return layout.gather_into(difference_gradient(q), row);
    const torch::Tensor y =
        q == 0 ? energy_per_atom_
               : out_.force[0][score_.atoms[static_cast<std::size_t>((q - 1) / 3)]][(q - 1) % 3];
    const auto grads = torch::autograd::grad({y}, params_, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                             /*allow_unused=*/true);
    layout.gather_into(grads, row);
  }

  // Stores h^T P h of quantity q.
  void set_variance(std::int64_t q, double value) {
    if (q == 0) {
      score_.var_e = value;
    } else {
      score_.var_f[static_cast<std::size_t>(q - 1)] = value;
    }
  }
  FrameScore& score() { return score_; }

 private:
  std::vector<torch::Tensor> difference_gradient(std::int64_t q) {
    std::vector<torch::Tensor> h;
    if (q == 0) {
      for (const auto& g : out_.energy_gradient) h.push_back(g / static_cast<double>(score_.natoms));
      return h;
    }
    // y = F_ia: the force measurement of atom i with weight 1 on component a.
    const auto opts = torch::TensorOptions().device(batch_.coord.device());
    const auto atom =
        torch::full({1, 1}, score_.atoms[static_cast<std::size_t>((q - 1) / 3)], opts.dtype(torch::kInt64));
    auto weights = torch::zeros({1, 1, 3}, opts.dtype(batch_.coord.scalar_type()));
    weights[0][0][(q - 1) % 3] = 1.0;
    return force_gradient_by_difference(model_, batch_, params_, out_.energy_gradient, atom, weights);
  }

  void check_finite(const FrameSubset& set, std::int64_t position) const {
    const bool ok = torch::isfinite(out_.energy.detach()).all().item<bool>() &&
                    torch::isfinite(out_.force.detach()).all().item<bool>();
    if (!ok)
      throw ModelError(fmt::format("the model predicts a non-finite energy or force for frame {} of {}",
                                   set.frames[static_cast<std::size_t>(position)], set.info().source));
  }

  // The frame's actual errors where it has labels, and those of the scored force components.
  void errors(const System& labels) {
    const auto force = out_.force[0].detach().to(torch::kCPU, torch::kFloat64).contiguous();
    const FrameErrors e = frame_errors(labels, 0, out_.energy[0].item<double>(), force.data_ptr<double>());
    score_.err_e = e.energy;
    score_.err_f_rmse = e.force_rmse;
    score_.err_f_max = e.force_max;
    if (!e.force.defined()) return;
    const double* d = e.force.data_ptr<double>();
    for (const auto i : score_.atoms) score_.err_f.insert(score_.err_f.end(), d + 3 * i, d + 3 * i + 3);
  }

  DeepPot& model_;
  const std::vector<torch::Tensor>& params_;
  bool by_difference_ = false;
  Batch batch_;
  ModelOutput out_;
  torch::Tensor energy_per_atom_;
  FrameScore score_;
};

// FrameScores as doubles for a gather between ranks, and back.
void pack(const FrameScore& s, std::vector<double>& out) {
  const auto k = s.atoms.size();
  out.insert(out.end(), {static_cast<double>(s.system), static_cast<double>(s.frame),
                         static_cast<double>(s.natoms), s.var_e, s.err_e, s.err_f_rmse, s.err_f_max,
                         static_cast<double>(k), static_cast<double>(s.err_f.size())});
  for (const auto a : s.atoms) out.push_back(static_cast<double>(a));
  out.insert(out.end(), s.var_f.begin(), s.var_f.end());
  out.insert(out.end(), s.err_f.begin(), s.err_f.end());
}

std::vector<FrameScore> unpack(const std::vector<double>& in) {
  std::vector<FrameScore> out;
  std::size_t p = 0;
  const auto next = [&] { return in.at(p++); };
  const auto integer = [&] { return static_cast<std::int64_t>(std::llround(next())); };
  while (p < in.size()) {
    FrameScore s;
    s.system = integer();
    s.frame = integer();
    s.natoms = integer();
    s.var_e = next();
    s.err_e = next();
    s.err_f_rmse = next();
    s.err_f_max = next();
    const auto k = integer();
    const auto nerr = integer();
    for (std::int64_t i = 0; i < k; ++i) s.atoms.push_back(integer());
    for (std::int64_t i = 0; i < 3 * k; ++i) s.var_f.push_back(next());
    for (std::int64_t i = 0; i < nerr; ++i) s.err_f.push_back(next());
    out.push_back(std::move(s));
  }
  return out;
}

// Every rank's n values, concatenated in rank order, on every rank; `offset`: where this rank's start.
std::vector<double> gather_all(const double* mine, std::size_t n, Communicator& comm,
                               std::size_t* offset = nullptr) {
  std::vector<double> sizes(static_cast<std::size_t>(comm.size()), 0.0);
  sizes[static_cast<std::size_t>(comm.rank())] = static_cast<double>(n);
  comm.allreduce_sum(sizes.data(), sizes.size());
  std::vector<std::size_t> bytes;
  std::size_t total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank() && offset != nullptr) *offset = total;
    bytes.push_back(static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]) * sizeof(double));
    total += static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]);
  }
  std::vector<double> all(total);
  comm.allgatherv(mine, all.data(), bytes);
  return all;
}

}  // namespace

std::vector<std::int64_t> scored_atoms(std::int64_t natoms, std::int64_t count, std::uint64_t seed,
                                       std::uint64_t key) {
  std::vector<std::int64_t> atoms(static_cast<std::size_t>(natoms));
  std::iota(atoms.begin(), atoms.end(), std::int64_t{0});
  if (count <= 0 || count >= natoms) return atoms;
  // The first `count` places of a Fisher-Yates shuffle.
  auto rng = make_stream(seed, kScoredAtomsStream, key);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto j = i + static_cast<std::int64_t>(uniform_below(rng, static_cast<std::uint64_t>(natoms - i)));
    std::swap(atoms[static_cast<std::size_t>(i)], atoms[static_cast<std::size_t>(j)]);
  }
  atoms.resize(static_cast<std::size_t>(count));
  std::sort(atoms.begin(), atoms.end());
  return atoms;
}

ScoringResult score_frames(DeepPot model, KalmanFilter& filter, const std::vector<FrameSubset>& sets,
                           const UncertaintyOptions& options, Communicator& comm) {
  const auto params = model->trainable_parameters();
  const BlockLayout& layout = filter.layout();
  const auto nparams = layout.num_parameters();
  const bool by_difference =
      options.force_gradients == ForceGradients::kDifference ||
      (options.force_gradients == ForceGradients::kAuto && model->config().precision == torch::kFloat64);
  // Frames are dealt to the ranks in turn: (set, position) of this rank's frames.
  std::vector<std::pair<std::int64_t, std::int64_t>> mine;
  std::int64_t item = 0;
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::int64_t f = 0; f < sets[s].nframes(); ++f, ++item)
      if (item % comm.size() == comm.rank()) mine.emplace_back(static_cast<std::int64_t>(s), f);
  }
  const std::int64_t rows_per_rank =
      options.columns > 0
          ? options.columns
          : std::max<std::int64_t>(1, std::min(kMaxRows, kRowBytes / (8 * nparams)) / comm.size());

  ScoringResult result;
  ScoringCost& cost = result.cost;
  // With a time budget a rank stops taking frames once it has spent it and scored its share of min_frames;
  // the rounds go on until every rank is done.
  const auto scoring_start = std::chrono::steady_clock::now();
  const std::int64_t min_here = (options.min_frames + comm.size() - 1) / comm.size();
  const auto budget_spent = [&] {
    return options.time_budget > 0.0 && cost.frames >= min_here &&
           seconds_since(scoring_start) > options.time_budget;
  };
  std::vector<FrameScore> done;
  std::unique_ptr<FrameQuantities> current;  // the frame whose quantities are being taken
  std::int64_t next_quantity = 0;
  std::size_t next_frame = 0;
  // Each round: this rank's next rows of H, one application of P over all ranks' rows, the variances back
  // to the frames they belong to.
  while (true) {
    auto start = std::chrono::steady_clock::now();
    auto rows = torch::zeros({rows_per_rank, nparams}, torch::kFloat64);
    std::vector<std::pair<FrameQuantities*, std::int64_t>> owners;  // (frame, quantity) of each row
    std::vector<std::unique_ptr<FrameQuantities>> finished;         // frames all of whose rows are taken
    while (static_cast<std::int64_t>(owners.size()) < rows_per_rank) {
      if (!current) {
        if (next_frame == mine.size() || budget_spent()) break;
        const auto [s, f] = mine[next_frame++];
        const std::uint64_t key = (static_cast<std::uint64_t>(s) << 40) + static_cast<std::uint64_t>(f);
        const auto natoms = sets[static_cast<std::size_t>(s)].info().natoms;
        current = std::make_unique<FrameQuantities>(
            model, params, sets[static_cast<std::size_t>(s)], s, f,
            scored_atoms(natoms, options.force_atoms, options.seed, key), by_difference);
        next_quantity = 0;
        ++cost.frames;
      }
      current->gradient(next_quantity, layout, rows[static_cast<std::int64_t>(owners.size())]);
      owners.emplace_back(current.get(), next_quantity++);
      ++cost.backward_passes;
      if (next_quantity == current->count()) finished.push_back(std::move(current));
    }
    cost.gradient_seconds += seconds_since(start);

    start = std::chrono::steady_clock::now();
    const auto count = static_cast<std::int64_t>(owners.size());
    std::size_t offset = 0;
    const auto all =
        gather_all(rows.data_ptr<double>(), static_cast<std::size_t>(count * nparams), comm, &offset);
    const auto total = static_cast<std::int64_t>(all.size()) / nparams;
    if (total == 0) break;                                           // every rank is done
    const auto first = static_cast<std::int64_t>(offset) / nparams;  // this rank's first row in H
    const auto H = torch::from_blob(const_cast<double*>(all.data()), {total, nparams}, torch::kFloat64);
    const auto q = filter.quadratic_forms(H);
    ++cost.covariance_passes;
    for (std::int64_t r = 0; r < count; ++r)
      owners[static_cast<std::size_t>(r)].first->set_variance(owners[static_cast<std::size_t>(r)].second,
                                                              q[static_cast<std::size_t>(first + r)]);
    for (auto& f : finished) done.push_back(std::move(f->score()));
    cost.covariance_seconds += seconds_since(start);
  }

  // Every rank's scores on every rank, in the order of the sets and their frames.
  std::vector<double> packed;
  for (const auto& s : done) pack(s, packed);
  result.frames = unpack(gather_all(packed.data(), packed.size(), comm));
  std::sort(result.frames.begin(), result.frames.end(), [](const FrameScore& a, const FrameScore& b) {
    return std::make_pair(a.system, a.frame) < std::make_pair(b.system, b.frame);
  });
  return result;
}

}  // namespace deepkf
