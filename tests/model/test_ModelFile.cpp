// Model files with a training range and compressed model files: round trips to the same bits, checksums over
// the tables, and files written before either existed.
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("compressed model files round-trip to the same bits, tables under the checksums",
          "[model][compress]") {
  const auto dir = make_temp_dir("compressed-file");
  auto model = small_model(false, true);
  TrainingRange range(2);
  range.add({0.9, 1.0, 1.05, 1.2}, 12);
  model->set_training_range(range);
  save_model(dir + "/plain.pt", model, {{"steps", 3}});
  TableSettings s;
  s.step = 0.02;
  model->compress(s);
  save_model(dir + "/small.pt", model, {{"steps", 3}});
  const auto c = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  const auto ref = run(model, c);

  const auto plain = load_model(dir + "/plain.pt");
  CHECK_FALSE(plain.model->compressed());
  CHECK(plain.model->training_range().to_json() == range.to_json());

  const auto loaded = load_model(dir + "/small.pt");
  auto m2 = loaded.model;
  REQUIRE(m2->compressed());
  CHECK(m2->training_range().to_json() == range.to_json());
  CHECK(m2->table().to_json() == model->table().to_json());
  for (std::size_t k = 0; k < m2->table().size(); ++k)
    CHECK(torch::equal(m2->table().coefficients(k), model->table().coefficients(k)));
  const auto out = run(m2, c);
  CHECK(torch::equal(out.energy, ref.energy));
  CHECK(torch::equal(out.force, ref.force));
  CHECK(torch::equal(out.virial, ref.virial));
  CHECK(loaded.checksum.find("verified") != std::string::npos);
  const auto meta = read_model_metadata(dir + "/small.pt");
  CHECK(meta["compression"]["step"] == 0.02);
  CHECK(meta["training_range"]["frames"] == 12);

  SECTION("a flipped byte in a table is named") {
    // the first coefficient of table 0 is G(x0) of channel 0: find its bytes in the file
    std::ifstream in(dir + "/small.pt", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto coef = model->table().coefficients(0).contiguous();
    const std::string first(static_cast<const char*>(coef.data_ptr()), 64);
    const auto at = bytes.find(first);
    REQUIRE(at != std::string::npos);
    bytes[at + 5] = static_cast<char>(bytes[at + 5] ^ 0x04);
    std::ofstream(dir + "/flipped.pt", std::ios::binary) << bytes;
    CHECK_THROWS_WITH(load_model(dir + "/flipped.pt"),
                      Catch::Contains("flipped.pt") && Catch::Contains("tensor 'table.coef_0'"));
  }
  SECTION("a file without a training range (older) loads with an empty one") {
    auto meta_old = read_model_metadata(dir + "/plain.pt");
    meta_old.erase("training_range");
    auto fresh = small_model(false, true);
    torch::serialize::OutputArchive weights;
    fresh->save(weights);
    torch::serialize::OutputArchive archive;
    meta_old["format_version"] = 1;  // no checksums to recompute
    archive.write("deepkf_metadata", c10::IValue(meta_old.dump()));
    archive.write("deepkf_model", weights);
    archive.save_to(dir + "/old.pt");
    CHECK(load_model(dir + "/old.pt").model->training_range().empty());
  }
  std::filesystem::remove_all(dir);
}
