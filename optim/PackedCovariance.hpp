#pragma once
// The covariance blocks P_j one rank owns, each stored as its packed upper triangle (n_j (n_j + 1) / 2
// values, optim/PackedSweep.hpp), and the rank-1 update of the last Kalman step, kept pending until the next
// sweep applies it on the way (docs/rlekf.md, "One sweep per step"):
//   step t:   K_t = P_t h_t                    sweep(h_t): reads P once (and writes it once, see below)
//             P_{t+1} = (P_t - K_t K_t^T / a_t) / lambda_t   defer_update(K_t, a_t, lambda_t): nothing moves
//   step t+1: sweep(h_{t+1}) updates each element and uses it at once for K_{t+1} = P_{t+1} h_{t+1}
// Whatever reads P itself (dense(), packed(), checkpoints) calls flush() first; a flushed block equals one
// updated inside a sweep bit for bit, so float64 results do not depend on when flushes happen, and float32
// results only by float32 rounding (the CPU sweep multiplies with updated values before rounding them).
//
// CPU: the rows of all blocks are cut into chunks that depend only on n_j (PackedSweep.hpp, row_chunks),
// threads take chunks from a shared counter, and each chunk adds into its own partial vector; the partials
// are summed in chunk order, so the result does not depend on the thread count. CUDA: the same sweep as
// kernels over all blocks at once (PackedSweepCuda.cuh), compiled when LibTorch has CUDA and chosen by the
// blocks' device.
//
// A joint step (m measurements at once, optim/PackedJointSweep.hpp) takes sweep_joint and leaves a rank-m
// update P_j <- (P_j - U_j U_j^T) / lambda pending in the same way.
//
// A checkpoint can be written from the blocks while training goes on, with no second copy of P: between
// begin_journal() and end_journal() every change of P is kept (optim/CovarianceJournal.hpp) and each block
// counts the changes its stored values hold; copy_block() takes a block's values with that count, from
// another thread, under the lock every change of P holds. replay() brings a loaded block up to date.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "optim/CovarianceJournal.hpp"
#include "optim/PackedJointSweep.hpp"
#include "optim/PackedSweep.hpp"
#include "optim/PackedTiles.hpp"
#include "optim/TaskPool.hpp"

namespace deepkf {

class PackedCovariance {
 public:
  PackedCovariance() = default;  // no blocks
  // Blocks of sizes n_j, in the order of the flat weight range they cover, each p0 * I, of `dtype`
  // (float32 or float64) on `device`.
  PackedCovariance(std::vector<std::int64_t> sizes, double p0, torch::ScalarType dtype, torch::Device device);

  // K = P h for every block, in the sweep that applies the pending update. h: [sum n_j] float64 on the
  // blocks' device, block after block. Returns K [sum n_j] float64 on that device; terms[j] = h_j^T K_j.
  torch::Tensor sweep(const torch::Tensor& h, std::vector<double>& terms);
  // The quadratic forms of every block with m vectors at once: terms[j][k] = h_jk^T P_j h_jk
  // (optim/PackedQuadraticForm.hpp), the pending update applied first. H: [sum n_j, m] float64 on the
  // blocks' device, contiguous, row c holding parameter c's value in each of the m vectors. Returns terms
  // [num_blocks, m] float64 on the CPU. On the CPU each block is read once for all m vectors (threads take
  // the sweep's row chunks; partial sums added in chunk order); on a GPU each block is taken in dense row
  // panels, one matrix product each (optim/PackedPanelForms.hpp).
  torch::Tensor quadratic_forms(const torch::Tensor& H);
  // Leaves P_j <- (P_j - K_j K_j^T / a) / lambda pending for every block; K as sweep() returned it.
  void defer_update(torch::Tensor K, double a, double lambda);
  // The joint sweep (docs/rlekf.md, "Joint measurement update"): Y_j = P_j H_j for m vectors at once, in the
  // sweep that applies the pending update (a pending update of another rank than m is flushed first). H:
  // [m, sum n_j] float64 on the blocks' device, contiguous, row k the k-th vector (block after block).
  // Returns Y [m, sum n_j] float64 on that device; gram [num_blocks, m, m] float64 on the CPU is set to
  // H_j^T Y_j for every block (summed in index order). m from 1 to packed::kMaxJoint.
  torch::Tensor sweep_joint(const torch::Tensor& H, torch::Tensor& gram);
  // Every block's m x m product of two [m, sum n_j] float64 matrices on the blocks' device (BlockGrams.hpp):
  // grams[j][a][b] = sum over block j's columns c of X[a][c] Z[b][c]. Returns [num_blocks, m, m] float64 on
  // the CPU.
  torch::Tensor block_grams(const torch::Tensor& X, const torch::Tensor& Z) const;
  // Leaves P_j <- (P_j - U_j U_j^T) / lambda pending for every block: U [q, sum n_j] float64 on the blocks'
  // device, contiguous, row k the k-th column of U (block after block), 1 <= q <= packed::kMaxJoint.
  void defer_joint_update(torch::Tensor U, double lambda);
  // Applies the pending update now.
  void flush();
  // P_j <- factor P_j for every block (the pending update applied first).
  void scale(double factor);
  // sum_j tr(P_j), the pending update included, without applying it (n_j reads per block).
  double diagonal_sum() const;
  // Keeps every diagonal value at or below `cap` (docs/rlekf.md, "Bounded covariance"). A block whose
  // largest p_rr (the pending update included) exceeds cap is flushed and scaled P_j <- S P_j S with
  // s_r = sqrt(cap * release / p_rr) where p_rr > cap * release, s_r = 1 elsewhere: those values come down
  // to cap * release, the others and every correlation stay. `release` in (0, 1] leaves headroom, so that
  // values growing under lambda < 1 trigger a scaling pass only every ln(1 / release) / ln(1 / lambda) steps.
  // Blocks decide alone, so the result does not depend on which rank holds which block. Returns the number
  // of diagonal values scaled.
  std::int64_t cap_diagonal(double cap, double release);
  // P_j <- S P_j S, S = diag(s) (a congruence: P_j stays positive definite), the pending update applied
  // first. s: [n_j] float64 on the blocks' device.
  void congruence(std::size_t j, const torch::Tensor& s);
  bool has_pending() const { return pending_K_.defined() || pending_U_.defined(); }

  // The journal (CPU blocks only; OptimError on a device, or when one is kept already). begin_journal
  // starts keeping changes, the pending update first (a float32 P is flushed instead); copy_block may then
  // be called from any thread: it copies block j's stored values (packed, bytes of size(j)'s triangle) to
  // `into` and returns how many changes of the block's sequence they hold. end_journal returns the changes
  // (held left empty) and stops keeping them; a float32 covariance is flushed there, so that it stands as a
  // loaded copy will (float64 rounds alike either way).
  void begin_journal();
  std::int64_t copy_block(std::int64_t j, void* into) const;
  CovarianceJournal end_journal();
  bool journaling() const { return journal_ != nullptr; }
  // Bytes of the changes the journal keeps now (0 without one).
  std::int64_t journal_bytes() const;
  // Brings loaded blocks up to date with a journal written beside them: block j, block first_block + j of
  // the journal, applies the changes acting on it beyond the journal's held count, in order, by the kernels
  // that made them in training, reading the changes' vectors from row row_begin[j] on (where the block
  // starts among their rows). OptimError when the journal does not cover the blocks.
  void replay(const CovarianceJournal& journal, std::int64_t first_block,
              const std::vector<std::int64_t>& row_begin);

  std::int64_t num_blocks() const { return static_cast<std::int64_t>(sizes_.size()); }
  std::int64_t size(std::int64_t j) const { return sizes_[static_cast<std::size_t>(j)]; }
  torch::ScalarType dtype() const { return dtype_; }
  // Bytes of all blocks: sum_j n_j (n_j + 1) / 2 * sizeof(dtype).
  std::int64_t bytes() const;

  // Block j's packed values [n_j (n_j + 1) / 2] on the blocks' device (the storage itself), flushed.
  const torch::Tensor& packed(std::int64_t j);
  // Block j as a full symmetric [n_j, n_j] CPU tensor, flushed.
  torch::Tensor dense(std::int64_t j);
  // Sets block j from its packed values [n_j (n_j + 1) / 2] or a dense [n_j, n_j] matrix (whose upper
  // triangle is taken), of any floating dtype and device. Throws OptimError for another shape.
  void assign(std::int64_t j, const torch::Tensor& block);

 private:
  // One chunk of rows of one block, with its partial vector at `partial` in workspace_ (n_j - r0 values).
  struct Task {
    std::int64_t block, r0, r1, partial;
  };
  // Block j's diagonal [n_j] float64 on the blocks' device, the pending update included.
  torch::Tensor diagonal(std::size_t j) const;
  void sweep_cpu(const torch::Tensor& h, torch::Tensor& K);
  void flush_cpu();
  void sweep_joint_cpu(const torch::Tensor& H, torch::Tensor& Y);
  // The pending joint update over all blocks, or none (the CPU and CUDA kernels take the same form).
  packed::RankUpdate pending_joint() const;
#ifdef DEEPKF_WITH_CUDA
  // The device's side (PackedCovarianceCuda.cpp): the tile plan and the blocks' addresses on the device
  // (returns the workspace's length), and the sweep, flush, largest diagonals and scaling of block j by
  // diag(s) P_j diag(s) as kernels on the current stream.
  std::int64_t plan_device_tiles();
  void sweep_cuda(const torch::Tensor& h, torch::Tensor& K, std::vector<double>& terms);
  void flush_cuda();
  // The joint sweep's Y and, per block, H_j^T Y_j (gram: [num_blocks, m, m] float64 on the device), and the
  // flush of a pending joint update, as kernels (PackedSweepCuda.cuh).
  void sweep_joint_cuda(const torch::Tensor& H, torch::Tensor& Y, torch::Tensor& gram);
  void flush_joint_cuda();
  // [2, num_blocks] float64 on the CPU: each block's largest diagonal value, then its diagonal's sum, the
  // pending update included (one kernel for all blocks).
  torch::Tensor diagonal_stats_cuda() const;
  void scale_cuda(std::size_t j, const torch::Tensor& s);
  // The pending update over all blocks (K indexed like h), or none.
  packed::RankOneUpdate pending_update() const;
#endif
  // Calls f(T{}) with T the C++ type of a float32 or float64 block.
  template <typename F>
  static void with_dtype(torch::ScalarType dtype, const F& f) {
    if (dtype == torch::kFloat64) {
      f(double{});
    } else {
      f(float{});
    }
  }
  // CPU: calls job(P, task, t) for every chunk of rows of every block (task t), on LibTorch's threads, with
  // P the values of the chunk's block as the blocks' C++ type.
  template <typename F>
  void for_each_chunk(const F& job) {
    with_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      for_each_task(static_cast<std::int64_t>(tasks_.size()), [&](std::int64_t t) {
        const Task& task = tasks_[static_cast<std::size_t>(t)];
        job(blocks_[static_cast<std::size_t>(task.block)].template data_ptr<T>(), task, t);
      });
    });
  }

  // CPU: the same for the chunks of block j only.
  template <typename F>
  void for_each_chunk_of(std::size_t j, const F& job) {
    with_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const auto first = first_task_[j];
      for_each_task(first_task_[j + 1] - first, [&](std::int64_t t) {
        job(blocks_[j].template data_ptr<T>(), tasks_[static_cast<std::size_t>(first + t)], first + t);
      });
    });
  }

  std::vector<std::int64_t> sizes_;
  std::vector<std::int64_t> offsets_{0};  // block j covers [offsets_[j], offsets_[j + 1]) of h and K
  torch::ScalarType dtype_ = torch::kFloat64;
  torch::Device device_ = torch::kCPU;
  std::vector<torch::Tensor> blocks_;  // packed, one tensor per block (each its own aligned allocation)
  // The largest diagonal value of each block, pending update included (CPU: one loop, no tensors).
  std::vector<double> largest_diagonals() const;
  std::vector<torch::Tensor> diagonal_at_;  // positions of p_rr in each block (int64 on the blocks' device)
  std::vector<Task> tasks_;                 // ordered by block, then row
  std::vector<std::int64_t> first_task_;    // tasks of block j: [first_task_[j], first_task_[j + 1])
  torch::Tensor workspace_;                 // float64 partial vectors: of all tasks (CPU), of all tiles (GPU)
  // GPU: the tile plan (optim/PackedTiles.hpp) and the blocks' addresses in device memory, for one launch
  // over all blocks, and the raw view of them and of workspace_ that the kernels take (set once: the
  // blocks are never reallocated, assign() copies into them).
  torch::Tensor tile_blocks_, tiles_, block_ptrs_;
  packed::DeviceTiles device_tiles_;
  // At most one pending update: rank one (pending_K_, 1 / a, 1 / lambda) from a scalar step, or of rank q
  // (pending_U_ [q, sum n_j], 1 / lambda) from a joint step; undefined tensors: none.
  torch::Tensor pending_K_;
  double pending_inv_a_ = 0.0;
  double pending_inv_lambda_ = 1.0;
  torch::Tensor pending_U_;
  // CPU: blocks whose share of pending_U_ has been applied already (flush_block, for a congruence on one
  // block), which the next sweep or flush must not apply again; empty when none.
  std::vector<char> applied_;
  bool applied(std::size_t j) const { return !applied_.empty() && applied_[j] != 0; }
  // Applies the pending update to block j alone (CPU, joint update; otherwise all blocks are flushed).
  void flush_block(std::size_t j);
  torch::Tensor joint_workspace_;  // the joint sweep's partial sums, m times workspace_ (grown as needed)
  // CPU: each block's diagonal as the last joint sweep stored it (swept_diagonal_[offsets_[j] + r] = p_rr),
  // for the blocks marked in diagonal_swept_ until anything else changes their stored values. The cap reads
  // the diagonal at every step; from P that is one scattered read per row, from here a contiguous one.
  std::vector<double> swept_diagonal_;
  std::vector<char> diagonal_swept_;
  bool diagonal_swept(std::size_t j) const { return !diagonal_swept_.empty() && diagonal_swept_[j] != 0; }
  void forget_swept_diagonal(std::size_t j) {
    if (!diagonal_swept_.empty()) diagonal_swept_[j] = 0;
  }

  // Held by every change of the stored values and by copy_block (recursive: public changes call each other).
  using Lock = std::unique_lock<std::recursive_mutex>;
  Lock lock() const { return Lock(*mutex_); }
  std::unique_ptr<std::recursive_mutex> mutex_ = std::make_unique<std::recursive_mutex>();
  // While a journal is kept: the changes so far, and per block how many of them its stored values hold.
  struct Journal {
    std::vector<CovarianceChange> changes;
    std::vector<std::int64_t> held;
  };
  std::unique_ptr<Journal> journal_;
  void record(CovarianceChange change);
  void apply_change(std::size_t j, const CovarianceChange& change, std::int64_t offset);
  // The pending update has just been applied to the blocks not applied() before (the sweeps, flush_cpu).
  void count_pending_applied();
};

}  // namespace deepkf
