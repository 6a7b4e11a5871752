#pragma once
// RLEKF: the layer-wise extended Kalman filter with a block-diagonal covariance (docs/rlekf.md).
//
// One step, given the innovation e of a scalar measurement y and h = dy/dw split into blocks h_i:
//   a   = sum_i (lambda + h_i^T P_i h_i)
//   K_i = P_i h_i
//   w_i <- w_i + (e / a) K_i
//   P_i <- (P_i - K_i K_i^T / a) / lambda
//   lambda <- nu * lambda + 1 - nu
// Each P_i is stored as its packed upper triangle, so it is symmetric by construction and takes half the
// memory of a dense block. The update of P is deferred: step t leaves (K_t, a_t, lambda_t) pending and
// step t+1 applies it inside the sweep that computes K_{t+1} = P_{t+1} h_{t+1}, so a step reads and writes
// each stored value once (optim/PackedCovariance.hpp). Whatever reads P flushes the pending update first.
// With a single block (blocksize >= N) this is the global EKF (GEKF).
//
// Data parallel: blocks are owned by ranks in contiguous ranges balanced by their memory n_i (n_i + 1) / 2,
// and a rank allocates only its own P_i. The per-block terms of a are summed over ranks (a vector of one
// value per block, summed in block order, so a, and hence the weights, do not depend on the rank count);
// each rank updates its own w_i and P_i; an allgatherv of the owned weight ranges rebuilds w everywhere.
// The gradient allreduce is the caller's job: update() expects the global h on every rank.
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optim/BlockLayout.hpp"
#include "optim/PackedCovariance.hpp"
#include "src/core/Communicator.hpp"

namespace deepkf {

struct KalmanOptions {
  std::int64_t blocksize = 5120;  // kf_blocksize b
  double lambda0 = 0.98;          // initial forgetting factor
  double nu = 0.9987;             // lambda <- nu * lambda + 1 - nu
  double p0 = 1.0;                // P_i = p0 * I at the start
  // The diagonal of P is kept at or below p_cap * p0 (docs/rlekf.md, "Bounded covariance"); 0: unbounded.
  double p_cap = 0.0;
  // The joint update's weight change is kept within this length, |dw| <= trust_radius, by raising every
  // measurement's noise (optim/TrustRegion.hpp; docs/rlekf.md, "Trust radius"); 0: unbounded. With a
  // radius every update, m = 1 included, takes the joint path.
  double trust_radius = 0.0;
  torch::ScalarType p_dtype = torch::kFloat64;  // covariance precision; scalars (a, lambda) stay float64
};

// What the filter did between two calls of KalmanFilter::take_diagnostics, and its covariance now
// (docs/rlekf.md, "Watching the filter").
struct KalmanDiagnostics {
  std::int64_t updates = 0;  // Kalman updates in the interval
  double mean_nis = 0.0;     // mean of e^2 / a over them: the normalised innovation squared
  double rms_step = 0.0;     // root mean square of the weight change |dw| = |e / a| |K| over them
  double mean_p_diag = 0.0;  // tr(P) / N now: how much the filter still lets the weights move
  std::int64_t capped = 0;   // diagonal values brought down to the cap in the interval (all ranks)
  // Joint updates: for each measurement position k, the mean over the interval of its share
  // h_k^T P h_k / A_kk, A_kk = sum_i (lambda + h_ik^T P_i h_ik): the fraction of that measurement's error an
  // update of it alone would remove. Empty without joint updates.
  std::vector<double> mean_share;
  // With a trust radius: the updates whose step it shortened, and the root mean square of the steps'
  // undamped lengths |dw(0)| over the interval.
  std::int64_t damped = 0;
  double rms_free_step = 0.0;
};

class KalmanFilter {
 public:
  // `params`: the trainable parameters in registration order, all of one floating dtype on one device
  // (P lives on that device). They are updated in place. Throws OptimError for bad options or parameters.
  KalmanFilter(std::vector<torch::Tensor> params, const KalmanOptions& options,
               std::shared_ptr<Communicator> comm = make_serial_communicator());

  // One Kalman step. e: the innovation (global over ranks, in the measurement's units); grads: dy/dw per
  // parameter, shaped like the parameters (undefined = zero), identical on every rank. Collective.
  void update(double e, const std::vector<torch::Tensor>& grads);

  // One joint step over m measurements taken at the same weights (docs/rlekf.md, "Joint measurement
  // update"), with H the m gradients as columns and H_i its rows in block i:
  //   Y_i = P_i H_i                                   (one sweep for all m columns)
  //   A   = sum_i (lambda I_m + H_i^T Y_i) = C C^T   (m x m, summed in block order; Cholesky on the host)
  //   w_i <- w_i + Y_i A^-1 e
  //   P_i <- (P_i - U_i U_i^T) / (lambda_0 ... lambda_{m-1}),  U_i = Y_i C^-T   (pending for the next sweep)
  // and lambda advances m times, as m scalar steps would move it. m = 1 is update() itself, bit for bit.
  // e: the m innovations; grads[k]: dy_k/dw per parameter (as update() takes them), identical on every rank.
  // 1 <= m <= packed::kMaxJoint. Collective. OptimError when A is not positive definite.
  //
  // shares (optional, one per measurement; docs/rlekf.md, "Noise by share"): where shares[k] is in (0, 1),
  // measurement k's noise is chosen anew each update as q_k (1 / s_k - 1), q_k = h_k^T P h_k, in place of
  // L lambda: A_kk = q_k / s_k, so that an update of it alone removes the fraction s_k of its error
  // whatever P has become. 0 keeps the noise L lambda. With shares the m = 1 case takes the joint path.
  // share_cap: each share is the most its measurement may remove instead (docs/rlekf.md, "Share cap"): the
  // noise is the larger of L lambda and q_k (1 / s_k - 1).
  void update_joint(const std::vector<double>& e, const std::vector<std::vector<torch::Tensor>>& grads,
                    const std::vector<double>& shares = {}, bool share_cap = false);

  // The predicted variances of m scalar quantities y_k with gradients h_k = dy_k/dw (docs/uncertainty.md):
  //   q_k = h_k^T P h_k = sum_i h_ik^T P_i h_ik
  // H: [m, N] (any floating dtype and device), row k the gradient h_k in the flat order of layout() (as
  // layout().gather_into writes it), identical on every rank. Collective: each rank applies its own blocks
  // (the pending update first, which changes no result); the per-block terms are summed over ranks and then
  // in block order, so q does not depend on the rank count. Returns the m values q_k.
  std::vector<double> quadratic_forms(const torch::Tensor& H);

  double lambda() const { return lambda_; }
  // Sets P = p0 I before the first step (an automatic p0 is chosen from the first measurements' gradients,
  // optim/AutoP0.hpp). OptimError after a step, or for p0 not positive and finite.
  void set_p0(double p0);
  // Sets P = p0 diag(d) before the first step (docs/rlekf.md, "Shape of the initial covariance"). d: [N]
  // positive and finite, in the flat order of layout(), identical on every rank; each rank takes its own
  // blocks' part. OptimError after a step or for bad values.
  void set_p0(double p0, const torch::Tensor& d);
  // The diagnostics since the last call (or the start), and resets the interval. Collective.
  KalmanDiagnostics take_diagnostics();
  std::int64_t steps() const { return steps_; }
  const KalmanOptions& options() const { return options_; }
  const BlockLayout& layout() const { return layout_; }
  // Bytes of the covariance blocks this rank holds (sum over owned n_i (n_i + 1) / 2 * sizeof(p_dtype)).
  std::int64_t covariance_bytes() const;
  // Bytes of all blocks over all ranks.
  std::int64_t total_covariance_bytes() const;
  // This rank's blocks: [first_block(), end_block()) of layout().blocks().
  std::int64_t first_block() const { return first_block_; }
  std::int64_t end_block() const { return end_block_; }
  bool owns(std::int64_t block) const { return block >= first_block_ && block < end_block_; }
  // The rank owning each block.
  const std::vector<int>& block_owners() const { return owners_; }
  // Owned block i's P_i as a full [n_i, n_i] CPU tensor (a copy, for tests and diagnostics), and as a CPU
  // copy of its packed upper triangle [n_i (n_i + 1) / 2]; both apply the pending update first. OptimError
  // if the block is not owned here.
  torch::Tensor covariance(std::int64_t block);
  torch::Tensor packed_covariance(std::int64_t block);
  // Applies the pending update of the last step to P now (never needed for correctness: every reader of P
  // does it; results do not depend on when it happens).
  void flush() { cov_.flush(); }

  std::string name() const { return "RLEKF"; }
  std::string status() const;
  std::int64_t state_bytes() const { return covariance_bytes(); }
  // Collective: every block is sent to rank 0, whose archive holds P_i's packed upper triangle under "P_<i>"
  // for every global block i, with lambda, the step count and the block sizes; other ranks' archives get
  // the scalars only. Rank 0 holds a copy of every block until the archive is written (see
  // stream_covariance for large P).
  void save(torch::serialize::OutputArchive& archive);
  // The scalars and block sizes of save(), without the blocks. Not collective.
  void save_state(torch::serialize::OutputArchive& archive) const;
  // Collective: sends the blocks, in block order, to rank 0 (point to point from each owner; device blocks
  // staged through the host) and calls sink(i, P_i) there with P_i's packed upper triangle, a CPU tensor
  // [n_i (n_i + 1) / 2] valid during the call. Rank 0 holds at most one other rank's block at a time.
  // Other ranks' sinks are not called.
  void stream_covariance(const std::function<void(std::int64_t, const torch::Tensor&)>& sink);
  // Each rank reads its own blocks by global index, so a state saved with any rank count restores under
  // any other. Reads the packed blocks of format 2 and the dense [n_i, n_i] blocks of format 1. Throws
  // OptimError when the archive's block layout differs from this one.
  void load(torch::serialize::InputArchive& archive);
  // The same for a state written by save_state: blocks missing from the archive come from read_block(i)
  // (a CPU or device tensor, packed [n_i (n_i + 1) / 2] or dense [n_i, n_i]).
  void load(torch::serialize::InputArchive& archive,
            const std::function<torch::Tensor(std::int64_t)>& read_block);
  // The covariance's journal (optim/CovarianceJournal.hpp), for a checkpoint written from the live blocks
  // while training goes on. begin_journal: false (nothing started) with several ranks or blocks on a device.
  // load() replays a journal it finds in the archive (CovarianceJournal::write) on the blocks it reads.
  bool begin_journal();
  std::int64_t copy_block(std::int64_t block, void* into) const {
    return cov_.copy_block(local(block), into);
  }
  CovarianceJournal end_journal() { return cov_.end_journal(); }
  std::int64_t journal_bytes() const { return cov_.journal_bytes(); }

 private:
  void write_scalars(torch::serialize::OutputArchive& state) const;
  // Brings the blocks load() has read up to date with the journal written beside them (none: nothing).
  void replay(const CovarianceJournal& journal);
  // Rebuilds w everywhere from the owned range that this rank updated in flat (param dtype, [N]).
  void allgather_weights(torch::Tensor& flat);
  // Position of an owned block among this rank's blocks; OptimError naming the owner otherwise.
  std::int64_t local(std::int64_t block) const;
  // update_joint's parts (KalmanFilterJoint.cpp). A = sum_i (lambda I + H_i^T Y_i) from the blocks' grams
  // (one reduction over ranks), with the noise by `shares` (empty: none) and raised for the trust radius;
  // each measurement's share recorded for the diagnostics. Collective.
  std::vector<double> joint_innovation(const std::vector<double>& e, const torch::Tensor& Yt,
                                       const torch::Tensor& gram, const std::vector<double>& shares,
                                       bool share_cap);
  // own_w += Y A^-1 e (this rank's weights); lambda advanced once per measurement; P_i <- (P_i - U_i U_i^T)
  // / lambda_eff left pending for the next sweep; the diagonal cap. OptimError when A is not positive
  // definite.
  void apply_joint(const std::vector<double>& A, const std::vector<double>& e, const torch::Tensor& Yt,
                   torch::Tensor own_w);

  std::vector<torch::Tensor> params_;
  KalmanOptions options_;
  std::shared_ptr<Communicator> comm_;
  BlockLayout layout_;
  torch::Device device_ = torch::kCPU;
  torch::ScalarType param_dtype_ = torch::kFloat64;
  std::vector<int> owners_;
  // OptimError after a step, or for p0 not positive and finite.
  void check_p0(double p0) const;
  std::int64_t first_block_ = 0;
  std::int64_t end_block_ = 0;
  std::vector<std::int64_t> rank_begin_;  // owned flat range of each rank: [rank_begin_[r], rank_begin_[r+1])
  PackedCovariance cov_;                  // this rank's blocks [first_block_, end_block_)
  double lambda_ = 0.98;
  std::int64_t steps_ = 0;
  double p0_ = 1.0;  // the P_i = p0 I the filter started from (restored with the state): the cap's unit
  // Sums for take_diagnostics over the updates since its last call: of e^2 / a, and (on P's device, so
  // that no update waits for it) of this rank's |dw|^2.
  std::int64_t interval_updates_ = 0;
  std::int64_t interval_capped_ = 0;
  double interval_nis_ = 0.0;
  torch::Tensor interval_step2_;
  std::vector<double> interval_share_;              // per joint measurement position: sum of the shares
  std::vector<std::int64_t> interval_share_count_;  // and how many joint updates had that position
  std::int64_t interval_damped_ = 0;                // updates the trust radius shortened
  double interval_free2_ = 0.0;                     // sum of every bounded update's undamped |dw(0)|^2
};

}  // namespace deepkf
