// PackedCovariance's journal (optim/CovarianceJournal.hpp): the changes of P kept while a checkpoint is
// written from the live blocks, the copy of one block with the count of changes it holds, and the replay of
// the rest on a loaded block. Also the journal's entries in a checkpoint's optimizer state.
#include <torch/torch.h>

#include <cstring>
#include <string>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedJointSweep.hpp"
#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

void PackedCovariance::begin_journal() {
  if (!device_.is_cpu())
    throw OptimError("packed covariance: a journal is kept for blocks in host memory only, not on " +
                     device_.str());
  const Lock held = lock();
  if (journal_) throw OptimError("packed covariance: a journal is kept already");
  // float32: flushed, as a checkpoint written at once flushes it, so that float32 results do not depend on
  // how checkpoints are written. float64 rounds alike either way, and a pass over P is saved: the pending
  // update becomes the journal's first change, held by the blocks a congruence has flushed alone.
  if (dtype_ == torch::kFloat32) flush();
  journal_ = std::make_unique<Journal>();
  journal_->held.assign(sizes_.size(), 0);
  if (!has_pending()) return;
  CovarianceChange change;
  change.inv_lambda = pending_inv_lambda_;
  if (pending_U_.defined()) {
    change.kind = CovarianceChange::Kind::kJoint;
    change.values = pending_U_.to(torch::kCPU, torch::kFloat64, false, /*copy=*/true);
  } else {
    change.kind = CovarianceChange::Kind::kRankOne;
    change.values = pending_K_.to(torch::kCPU, torch::kFloat64, false, /*copy=*/true);
    change.inv_a = pending_inv_a_;
  }
  record(std::move(change));
  for (std::size_t j = 0; j < sizes_.size(); ++j) journal_->held[j] = applied(j) ? 1 : 0;
}

std::int64_t PackedCovariance::copy_block(std::int64_t j, void* into) const {
  const Lock held = lock();
  if (!journal_) throw OptimError("packed covariance: copy_block without a journal");
  const auto& block = blocks_.at(static_cast<std::size_t>(j));
  std::memcpy(into, block.data_ptr(), static_cast<std::size_t>(block.nbytes()));
  return journal_->held[static_cast<std::size_t>(j)];
}

CovarianceJournal PackedCovariance::end_journal() {
  const Lock held = lock();
  if (!journal_) throw OptimError("packed covariance: end_journal without a journal");
  CovarianceJournal out;
  out.changes = std::move(journal_->changes);
  journal_.reset();
  // A float32 block multiplies with an updated value before rounding it (PackedSweep.hpp): a loaded copy,
  // which has every change applied and rounded, goes on as the live blocks do once they are flushed too.
  if (dtype_ == torch::kFloat32) flush();
  return out;
}

std::int64_t PackedCovariance::journal_bytes() const {
  const Lock held = lock();
  std::int64_t bytes = 0;
  if (journal_) {
    for (const auto& c : journal_->changes)
      bytes += c.values.defined() ? static_cast<std::int64_t>(c.values.nbytes()) : 0;
  }
  return bytes;
}

void PackedCovariance::record(CovarianceChange change) { journal_->changes.push_back(std::move(change)); }

void PackedCovariance::count_pending_applied() {
  if (!journal_) return;
  for (std::size_t j = 0; j < sizes_.size(); ++j) {
    if (!applied(j)) ++journal_->held[j];
  }
}

void PackedCovariance::replay(const CovarianceJournal& journal, std::int64_t first_block,
                              const std::vector<std::int64_t>& row_begin) {
  if (journal.empty()) return;
  const Lock held = lock();
  flush();
  diagonal_swept_.clear();
  const auto blocks = static_cast<std::int64_t>(sizes_.size());
  if (first_block < 0 || first_block + blocks > static_cast<std::int64_t>(journal.held.size()) ||
      row_begin.size() != sizes_.size())
    throw OptimError("covariance journal: it covers " + std::to_string(journal.held.size()) +
                     " blocks, not blocks " + std::to_string(first_block) + " to " +
                     std::to_string(first_block + blocks - 1));
  for (std::int64_t j = 0; j < blocks; ++j) {
    const std::int64_t global = first_block + j;
    std::int64_t seen = 0;
    for (const auto& change : journal.changes) {
      if (!change.acts_on(global) || seen++ < journal.held[static_cast<std::size_t>(global)]) continue;
      apply_change(static_cast<std::size_t>(j), change,
                   change.block >= 0 ? 0 : row_begin[static_cast<std::size_t>(j)]);
    }
  }
}

void PackedCovariance::apply_change(std::size_t j, const CovarianceChange& change, std::int64_t offset) {
  const auto j_in = static_cast<std::int64_t>(j);
  const auto n = sizes_.at(j);
  const auto values =
      change.values.defined() ? change.values.to(device_, torch::kFloat64).contiguous() : torch::Tensor();
  // The vectors (one row of U per column of a joint update) must cover the block's rows.
  const auto rows = [&](std::int64_t dim) {
    if (!values.defined() || values.dim() != dim || values.size(-1) < offset + n ||
        (dim == 2 && (values.size(0) < 1 || values.size(0) > packed::kMaxJoint)))
      throw OptimError("covariance journal: a change's vectors do not cover block " + std::to_string(j_in));
  };
  switch (change.kind) {
    case CovarianceChange::Kind::kJoint: {
      rows(2);
      // As flush_cpu: the joint update alone, through the sweep's instructions.
      const packed::RankUpdate update{values.data_ptr<double>() + offset, values.size(1),
                                      static_cast<int>(values.size(0)), change.inv_lambda};
      for_each_chunk_of(j, [&](auto* P, const Task& task, std::int64_t) {
        packed::joint_update_rows(P, n, task.r0, task.r1, update);
      });
      break;
    }
    case CovarianceChange::Kind::kRankOne: {
      rows(1);
      const packed::RankOneUpdate update{values.data_ptr<double>() + offset, change.inv_a, change.inv_lambda};
      for_each_chunk_of(j, [&](auto* P, const Task& task, std::int64_t) {
        packed::update_rows(P, n, task.r0, task.r1, update);
      });
      break;
    }
    case CovarianceChange::Kind::kScale:
      blocks_[j].mul_(change.factor);  // as scale()
      break;
    case CovarianceChange::Kind::kCongruence:
      if (!values.defined() || values.numel() != n)
        throw OptimError("covariance journal: a congruence of " + std::to_string(values.numel()) +
                         " values for block " + std::to_string(j_in) + " of size " + std::to_string(n));
      for_each_chunk_of(j, [&](auto* P, const Task& task, std::int64_t) {
        packed::scale_rows(P, n, task.r0, task.r1, values.data_ptr<double>());
      });
      break;
  }
}

void CovarianceJournal::write(torch::serialize::OutputArchive& archive) const {
  // Per change: [kind, block] as int64 and [inv_a, inv_lambda, factor] as float64, and its vectors.
  const auto count = static_cast<std::int64_t>(changes.size());
  archive.write("journal_changes", torch::full({}, count, torch::kInt64));
  archive.write("journal_held", torch::tensor(held, torch::kInt64));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto& c = changes[static_cast<std::size_t>(i)];
    const auto key = "journal_" + std::to_string(i);
    archive.write(
        key + "_kind",
        torch::tensor(std::vector<std::int64_t>{static_cast<std::int64_t>(c.kind), c.block}, torch::kInt64));
    archive.write(key + "_scalars",
                  torch::tensor(std::vector<double>{c.inv_a, c.inv_lambda, c.factor}, torch::kFloat64));
    archive.write(key + "_values", c.values.defined() ? c.values : torch::zeros({0}, torch::kFloat64));
  }
}

CovarianceJournal CovarianceJournal::read(torch::serialize::InputArchive& archive) {
  CovarianceJournal out;
  torch::Tensor count;
  if (!archive.try_read("journal_changes", count)) return out;
  const auto read = [&](const std::string& key) {
    torch::Tensor t;
    if (!archive.try_read(key, t)) throw OptimError("covariance journal: entry '" + key + "' is missing");
    return t.to(torch::kCPU).contiguous();
  };
  const auto held = read("journal_held").to(torch::kInt64);
  out.held.assign(held.data_ptr<std::int64_t>(), held.data_ptr<std::int64_t>() + held.numel());
  for (std::int64_t i = 0; i < count.item<std::int64_t>(); ++i) {
    const auto key = "journal_" + std::to_string(i);
    const auto kind = read(key + "_kind").to(torch::kInt64);
    const auto scalars = read(key + "_scalars").to(torch::kFloat64);
    if (kind.numel() != 2 || scalars.numel() != 3 || kind[0].item<std::int64_t>() < 0 ||
        kind[0].item<std::int64_t>() > 3)
      throw OptimError("covariance journal: change " + std::to_string(i) + " is malformed");
    CovarianceChange c;
    c.kind = static_cast<CovarianceChange::Kind>(kind[0].item<std::int64_t>());
    c.block = kind[1].item<std::int64_t>();
    c.inv_a = scalars[0].item<double>();
    c.inv_lambda = scalars[1].item<double>();
    c.factor = scalars[2].item<double>();
    c.values = read(key + "_values").to(torch::kFloat64);
    if (c.values.numel() == 0) c.values = torch::Tensor();
    out.changes.push_back(std::move(c));
  }
  return out;
}

}  // namespace deepkf
