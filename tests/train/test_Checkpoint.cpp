// The checkpoint file: the record, model and optimizer state round-trip, the covariance blocks are streamed
// after the archive and read back block by block, a truncated or incomplete file is refused with its name,
// a DeePMD-kit checkpoint is named as such, an unfinished write leaves the previous checkpoint in place, and
// format 2 files (dense blocks after the archive) and format 1 files (dense blocks inside the archive) still
// restore.
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/Checkpoint.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::CheckpointWriter;
using deepkf::KalmanFilter;

namespace {

deepkf::DeepPot small_model() { return deepkf::DeepPot(deepkf::test::small_silicon_config(8)); }

// A filter over the model's parameters with blocks of at most 64 and a P changed by a few updates.
std::unique_ptr<KalmanFilter> updated_filter(deepkf::DeepPot& model) {
  deepkf::KalmanOptions o;
  o.blocksize = 64;
  o.p0 = 2.0;
  auto kf = std::make_unique<KalmanFilter>(model->parameters(), o);
  for (int k = 0; k < 3; ++k) {
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(torch::randn_like(p));
    kf->update(0.1 * (k + 1), grads);
  }
  return kf;
}

void write_streamed(const std::string& path, deepkf::DeepPot& model, KalmanFilter& kf, std::int64_t step) {
  torch::serialize::OutputArchive state;
  kf.save_state(state);
  std::vector<std::int64_t> sizes;
  for (const auto& b : kf.layout().blocks()) sizes.push_back(b.size());
  CheckpointWriter writer(path, model, deepkf::test::checkpoint_meta(model, step), state, sizes);
  kf.stream_covariance([&](std::int64_t i, const torch::Tensor& block) { writer.write_block(i, block); });
  writer.commit();
}

}  // namespace

TEST_CASE("a checkpoint streams the covariance after the archive and reads it back block by block",
          "[train][checkpoint]") {
  torch::manual_seed(1);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint");
  const std::string path = dir + "/model.ckpt";
  auto model = small_model();
  auto kf = updated_filter(model);
  REQUIRE(kf->layout().num_blocks() >= 3);
  write_streamed(path, model, *kf, 7);

  auto ckpt = deepkf::read_checkpoint(path, torch::kCPU);
  CHECK(ckpt.meta.at("step") == 7);
  CHECK(ckpt.meta.at("format_version") == deepkf::kCheckpointFormatVersion);
  const auto a = model->parameters(), b = ckpt.model->parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) CHECK(torch::equal(a[t], b[t]));
  REQUIRE(ckpt.covariance_block);
  for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i)
    CHECK(torch::equal(ckpt.covariance_block(i), kf->packed_covariance(i)));
  CHECK_THROWS_AS(ckpt.covariance_block(kf->layout().num_blocks()), deepkf::ModelError);

  // The blocks are in the file once, as packed triangles outside the archive: the file is at least P's
  // bytes and less than the dense blocks' bytes, and the filter restored from it continues like the original.
  CHECK(static_cast<std::int64_t>(fs::file_size(path)) > kf->total_covariance_bytes());
  std::int64_t dense_bytes = 0;
  for (const auto& blk : kf->layout().blocks()) dense_bytes += blk.size() * blk.size() * 8;
  CHECK(static_cast<std::int64_t>(fs::file_size(path)) < dense_bytes);
  auto restored_model = ckpt.model;
  deepkf::KalmanOptions o = kf->options();
  KalmanFilter restored(restored_model->parameters(), o);
  restored.load(ckpt.optimizer, ckpt.covariance_block);
  CHECK(restored.lambda() == kf->lambda());
  CHECK(restored.steps() == kf->steps());
  for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i)
    CHECK(torch::equal(restored.covariance(i), kf->covariance(i)));

  // A file cut short names the file and says so.
  const std::string cut = dir + "/cut.ckpt";
  fs::copy_file(path, cut);
  fs::resize_file(cut, fs::file_size(cut) - 8);
  CHECK_THROWS_WITH(deepkf::read_checkpoint(cut, torch::kCPU), Contains(cut) && Contains("truncated"));
  fs::remove_all(dir);
}

TEST_CASE("a DeePMD-kit checkpoint given as deepkf's is named as such", "[train][checkpoint]") {
  // dp train's model.ckpt-N.pt: a torch.save file of the model's state dict (deepkf train --restart it).
  const std::string dir = deepkf::test::make_temp_dir("ckpt-deepmd-kit");
  const std::string path = dir + "/model.ckpt-100.pt";
  c10::Dict<std::string, at::Tensor> state;
  state.insert("model.Default.atomic_model.out_bias", torch::zeros({1, 2, 1}));
  const auto bytes = torch::pickle_save(state);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  // Formerly: "checkpoint '...' is corrupt or truncated: ..." with LibTorch's words.
  CHECK_THROWS_WITH(deepkf::read_checkpoint(path, torch::kCPU),
                    Contains("'" + path + "' is a DeePMD-kit model file") &&
                        Contains("docs/from-deepmd-kit.md") && !Contains("corrupt"));
  fs::remove_all(dir);
}

TEST_CASE("flipped bytes in a checkpoint are refused, naming the part", "[train][checkpoint]") {
  torch::manual_seed(5);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-flipped");
  const std::string path = dir + "/model.ckpt";
  auto model = small_model();
  auto kf = updated_filter(model);
  write_streamed(path, model, *kf, 3);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t length = 0;
  for (int k = 0; k < 8; ++k)
    length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
  const auto header = nlohmann::json::parse(bytes.substr(16, length));
  const auto base = 16 + length + header.at("archive_bytes").get<std::uint64_t>();
  const auto flipped_at = [&](std::uint64_t at, const std::string& name) {
    auto copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ 0x01);
    std::ofstream(dir + "/" + name, std::ios::binary) << copy;
    return dir + "/" + name;
  };
  // One bit of covariance block 1: the file opens, block 0 reads, block 1 is named.
  const auto block1 = header.at("covariance").at("blocks").at(1).at(1).get<std::uint64_t>();
  const auto bad_block = flipped_at(base + block1 + 20, "block.ckpt");
  auto ckpt = deepkf::read_checkpoint(bad_block, torch::kCPU);
  CHECK(torch::equal(ckpt.covariance_block(0), kf->packed_covariance(0)));
  CHECK_THROWS_WITH(ckpt.covariance_block(1),
                    Contains(bad_block) && Contains("covariance block 1") && Contains("checksum"));
  // One bit of the archive (weights, optimizer state, run record).
  const auto bad_archive = flipped_at(16 + length + (base - 16 - length) / 2, "archive.ckpt");
  CHECK_THROWS_WITH(deepkf::read_checkpoint(bad_archive, torch::kCPU),
                    Contains(bad_archive) && Contains("checksum"));
  fs::remove_all(dir);
}

TEST_CASE("an unfinished checkpoint write leaves the previous checkpoint in place", "[train][checkpoint]") {
  torch::manual_seed(2);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-unfinished");
  const std::string path = dir + "/model.ckpt";
  auto model = small_model();
  auto kf = updated_filter(model);
  write_streamed(path, model, *kf, 1);
  const auto before = fs::file_size(path);

  torch::serialize::OutputArchive state;
  kf->save_state(state);
  std::vector<std::int64_t> sizes;
  for (const auto& b : kf->layout().blocks()) sizes.push_back(b.size());
  {
    CheckpointWriter writer(path, model, deepkf::test::checkpoint_meta(model, 2), state, sizes);
    CHECK_THROWS_WITH(writer.write_block(1, kf->packed_covariance(1)), Contains("block 0 expected"));
    CHECK_THROWS_WITH(writer.write_block(0, kf->covariance(0)), Contains("packed triangle"));
    writer.write_block(0, kf->packed_covariance(0));
    CHECK_THROWS_WITH(writer.commit(), Contains("1 of " + std::to_string(sizes.size())));
  }  // dropped without a successful commit
  CHECK(fs::file_size(path) == before);
  CHECK(deepkf::read_checkpoint(path, torch::kCPU).meta.at("step") == 1);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST_CASE("a format 1 checkpoint (covariance inside the archive) still restores", "[train][checkpoint]") {
  torch::manual_seed(3);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-v1");
  const std::string path = dir + "/old.ckpt";
  auto model = small_model();
  auto kf = updated_filter(model);
  {
    // The layout format 1 had: one LibTorch archive, blocks as "P_<i>" in the optimizer state.
    auto meta = deepkf::test::checkpoint_meta(model, 5);
    meta["format_version"] = 1;
    torch::serialize::OutputArchive weights, state, archive;
    model->save(weights);
    deepkf::test::save_format1_state(*kf, state);
    archive.write("deepkf_checkpoint", c10::IValue(meta.dump()));
    archive.write("model", weights);
    archive.write("optimizer", state);
    archive.save_to(path);
  }
  auto ckpt = deepkf::read_checkpoint(path, torch::kCPU);
  CHECK(ckpt.meta.at("step") == 5);
  CHECK_FALSE(ckpt.covariance_block);
  KalmanFilter restored(ckpt.model->parameters(), kf->options());
  restored.load(ckpt.optimizer, ckpt.covariance_block);
  for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i)
    CHECK(torch::equal(restored.covariance(i), kf->covariance(i)));
  fs::remove_all(dir);
}

TEST_CASE("a format 2 checkpoint (dense blocks after the archive) still restores", "[train][checkpoint]") {
  torch::manual_seed(4);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-v2");
  auto model = small_model();
  auto kf = updated_filter(model);
  // Format 2's layout: the same magic, header and archive, with "format_version": 2, no "layout" key, and
  // block i as n_i x n_i values row-major. Made from a checkpoint without blocks by rewriting its header
  // and appending the dense blocks.
  const std::string bare = dir + "/bare.ckpt";
  {
    torch::serialize::OutputArchive state;
    kf->save_state(state);
    CheckpointWriter writer(bare, model, deepkf::test::checkpoint_meta(model, 9), state);
    writer.commit();
  }
  std::ifstream in(bare, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t length = 0;
  for (int k = 0; k < 8; ++k)
    length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
  auto header = nlohmann::json::parse(bytes.substr(16, length));
  const std::string archive = bytes.substr(16 + length);
  REQUIRE(archive.size() == header.at("archive_bytes").get<std::size_t>());
  header["format_version"] = 2;
  header["covariance"] = {{"dtype", "float64"}, {"blocks", nlohmann::json::array()}};
  std::string blocks;
  for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i) {
    const auto P = kf->covariance(i).contiguous();
    header["covariance"]["blocks"].push_back({P.size(0), blocks.size()});
    blocks.append(static_cast<const char*>(P.data_ptr()), static_cast<std::size_t>(P.numel()) * 8);
  }
  const std::string text = header.dump();
  std::string file = bytes.substr(0, 8);
  for (int k = 0; k < 8; ++k) file.push_back(static_cast<char>((text.size() >> (8 * k)) & 0xff));
  file += text + archive + blocks;
  const std::string path = dir + "/v2.ckpt";
  std::ofstream(path, std::ios::binary) << file;

  auto ckpt = deepkf::read_checkpoint(path, torch::kCPU);
  CHECK(ckpt.meta.at("step") == 9);
  REQUIRE(ckpt.covariance_block);
  CHECK(ckpt.covariance_block(0).dim() == 2);
  KalmanFilter restored(ckpt.model->parameters(), kf->options());
  restored.load(ckpt.optimizer, ckpt.covariance_block);
  for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i)
    CHECK(torch::equal(restored.packed_covariance(i), kf->packed_covariance(i)));
  fs::remove_all(dir);
}
