// The covariance journal (optim/CovarianceJournal.hpp): blocks copied at any moment of a run of joint,
// rank-one, scaling and congruence changes, plus the changes kept meanwhile, give back the live covariance
// bit for bit, in float64 and float32, through a checkpoint archive, and with the copies taken by another
// thread while the changes are made.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"

using deepkf::CovarianceJournal;
using deepkf::PackedCovariance;

namespace {

// Block 1 has more than 2^18 packed values: two row chunks, as the large blocks of a real model.
const std::vector<std::int64_t> kSizes = {37, 800, 129, 64, 5};

std::int64_t total_size() {
  std::int64_t n = 0;
  for (const auto s : kSizes) n += s;
  return n;
}

std::vector<std::int64_t> row_begins() {
  std::vector<std::int64_t> begins{0};
  for (std::size_t j = 0; j + 1 < kSizes.size(); ++j) begins.push_back(begins.back() + kSizes[j]);
  return begins;
}

// Block j's stored values, as copy_block gives them.
struct Copy {
  std::vector<char> bytes;
  std::int64_t held = 0;
};

Copy copy_of(const PackedCovariance& cov, std::int64_t j) {
  Copy c;
  c.bytes.resize(static_cast<std::size_t>(deepkf::packed::triangle_size(cov.size(j)) *
                                          static_cast<std::int64_t>(c10::elementSize(cov.dtype()))));
  c.held = cov.copy_block(j, c.bytes.data());
  return c;
}

// A joint step of m measurements: the sweep, then a small rank-m update left pending.
void joint_step(PackedCovariance& cov, at::Generator& gen, std::int64_t m) {
  const auto H = 0.3 * at::randn({m, total_size()}, gen, torch::kFloat64);
  torch::Tensor gram;
  cov.sweep_joint(H, gram);
  cov.defer_joint_update((0.05 * at::randn({m, total_size()}, gen, torch::kFloat64)).contiguous(), 0.98);
}

// A scalar step: the rank-one sweep, then its update left pending.
void scalar_step(PackedCovariance& cov, at::Generator& gen) {
  std::vector<double> terms;
  const auto K = cov.sweep(0.3 * at::randn({total_size()}, gen, torch::kFloat64), terms);
  cov.defer_update(0.05 * K, 2.0, 0.99);
}

// Loaded blocks: a new covariance assigned the copies, then the journal replayed (through an archive when
// `archived`).
PackedCovariance restore(const std::vector<Copy>& copies, CovarianceJournal journal, torch::ScalarType dtype,
                         bool archived) {
  for (const auto& c : copies) journal.held.push_back(c.held);
  if (archived) {
    torch::serialize::OutputArchive out;
    journal.write(out);
    std::ostringstream bytes;
    out.save_to(bytes);
    std::istringstream in_bytes(bytes.str());
    torch::serialize::InputArchive in;
    in.load_from(in_bytes);
    journal = CovarianceJournal::read(in);
  }
  PackedCovariance loaded(kSizes, 9.0, dtype, torch::kCPU);
  for (std::size_t j = 0; j < kSizes.size(); ++j) {
    const auto count = deepkf::packed::triangle_size(kSizes[j]);
    auto block = torch::empty({count}, torch::TensorOptions().dtype(dtype));
    std::memcpy(block.data_ptr(), copies[j].bytes.data(), copies[j].bytes.size());
    loaded.assign(static_cast<std::int64_t>(j), block);
  }
  loaded.replay(journal, 0, row_begins());
  return loaded;
}

void check_equal(PackedCovariance& live, PackedCovariance& loaded) {
  for (std::int64_t j = 0; j < live.num_blocks(); ++j) {
    INFO("block " << j);
    CHECK(torch::equal(live.packed(j), loaded.packed(j)));
  }
}

}  // namespace

TEST_CASE("blocks copied during a run of changes and the journal give back the covariance bit for bit",
          "[optim][packed][journal]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const bool archived : {false, true}) {
      INFO("dtype " << c10::toString(dtype) << (archived ? ", through an archive" : ""));
      auto gen = at::make_generator<at::CPUGeneratorImpl>(41);
      PackedCovariance live(kSizes, 1.5, dtype, torch::kCPU);
      joint_step(live, gen, 3);  // its update is pending: the journal's first change in float64 (float32
      live.begin_journal();      // flushes it instead, as every save does)
      const int first = dtype == torch::kFloat64 ? 1 : 0;
      CHECK(live.journaling());
      std::vector<Copy> copies(kSizes.size());
      copies[0] = copy_of(live, 0);  // before any change
      joint_step(live, gen, 3);
      joint_step(live, gen, 3);  // the first joint change is applied, the second pending
      copies[1] = copy_of(live, 1);
      live.congruence(2, 0.5 + at::rand({kSizes[2]}, gen, torch::kFloat64));  // the pending change, then S
      copies[2] = copy_of(live, 2);
      joint_step(live, gen, 2);  // another rank: the pending one is flushed first
      live.scale(1.1);
      copies[3] = copy_of(live, 3);
      scalar_step(live, gen);
      scalar_step(live, gen);
      joint_step(live, gen, 1);
      copies[4] = copy_of(live, 4);
      joint_step(live, gen, 2);
      CHECK(copies[0].held == 0);
      CHECK(copies[1].held == first + 1);
      CHECK(copies[2].held == first + 3);  // the second joint change applied to block 2 alone, the congruence
      CHECK(copies[3].held == first + 4);
      // U of 3, 3, 3, 2, 1 and 2 columns, two K and a congruence's s, in float64 (U0's 3 in float64 only).
      const std::int64_t n = total_size();
      CHECK(live.journal_bytes() == 8 * ((3 * first + 3 + 3 + 2 + 1 + 2 + 2) * n + kSizes[2]));
      CovarianceJournal journal = live.end_journal();
      CHECK_FALSE(live.journaling());
      CHECK(live.journal_bytes() == 0);
      CHECK(journal.changes.size() == static_cast<std::size_t>(first + 9));
      auto loaded = restore(copies, std::move(journal), dtype, archived);
      check_equal(live, loaded);
      // And they go on alike.
      auto gen_a = at::make_generator<at::CPUGeneratorImpl>(7),
           gen_b = at::make_generator<at::CPUGeneratorImpl>(7);
      joint_step(live, gen_a, 2);
      joint_step(loaded, gen_b, 2);
      check_equal(live, loaded);
    }
  }
}

TEST_CASE("blocks copied by another thread while the covariance changes give it back bit for bit",
          "[optim][packed][journal]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
    PackedCovariance live(kSizes, 1.5, dtype, torch::kCPU);
    live.begin_journal();
    std::vector<Copy> copies(kSizes.size());
    std::atomic<bool> copied{false};
    std::thread writer([&] {
      for (std::size_t j = 0; j < kSizes.size(); ++j) {
        copies[j] = copy_of(live, static_cast<std::int64_t>(j));
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
      copied = true;
    });
    int steps = 0;
    while (!copied || steps < 4) {
      joint_step(live, gen, 2);
      if (++steps % 5 == 0) live.congruence(0, torch::full({kSizes[0]}, 0.9));
    }
    writer.join();
    auto journal = live.end_journal();
    INFO(steps << " steps, blocks holding " << copies[0].held << " to " << copies.back().held << " changes");
    auto loaded = restore(copies, std::move(journal), dtype, false);
    check_equal(live, loaded);
  }
}

TEST_CASE("a journal begun with an update pending and applied to one block alone replays it to the others",
          "[optim][packed][journal]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
    PackedCovariance live(kSizes, 1.5, dtype, torch::kCPU);
    joint_step(live, gen, 2);
    live.congruence(1, 0.5 + at::rand({kSizes[1]}, gen, torch::kFloat64));  // the update in block 1 alone
    live.begin_journal();
    std::vector<Copy> copies(kSizes.size());
    for (std::size_t j = 0; j < kSizes.size(); ++j) copies[j] = copy_of(live, static_cast<std::int64_t>(j));
    if (dtype == torch::kFloat64) {
      CHECK(copies[0].held == 0);
      CHECK(copies[1].held == 1);
    }
    joint_step(live, gen, 2);
    auto loaded = restore(copies, live.end_journal(), dtype, false);
    check_equal(live, loaded);
  }
}

TEST_CASE("a journal is refused where it cannot be kept or replayed", "[optim][packed][journal]") {
  PackedCovariance cov(kSizes, 1.0, torch::kFloat64, torch::kCPU);
  std::vector<char> buffer(64);
  CHECK_THROWS_AS(cov.copy_block(4, buffer.data()), deepkf::OptimError);  // no journal
  cov.begin_journal();
  CHECK_THROWS_AS(cov.begin_journal(), deepkf::OptimError);
  CHECK_THROWS_AS(cov.assign(0, torch::zeros({deepkf::packed::triangle_size(kSizes[0])})),
                  deepkf::OptimError);
  auto journal = cov.end_journal();
  journal.held = {0, 0};  // two blocks, not five
  deepkf::CovarianceChange scale;
  scale.kind = deepkf::CovarianceChange::Kind::kScale;
  journal.changes.push_back(scale);
  CHECK_THROWS_AS(cov.replay(journal, 0, row_begins()), deepkf::OptimError);
}
