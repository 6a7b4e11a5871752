// Frames of a stored system through Potential and Ensemble: the system's elements are matched to each
// model's type map by name (whatever order either lists them in), each member keeps its own precision, and a
// non-finite prediction names the member, the frame's number in its file and the system.
#include <torch/torch.h>  // before Catch2: glog's CHECK must not replace Catch2's

#include <cmath>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/eval/Ensemble.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

const std::vector<double> kCell = {7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1};

// Three frames of one jittered cell of types A and B, stored with the elements listed as B, A.
System stored_frames() {
  System s;
  s.source = "frames.h5#/AB";
  s.type_map = {"B", "A"};
  s.nframes = 3;
  for (unsigned f = 0; f < 3; ++f) {
    const auto cell = jittered_cell(kCell, 3, 2, 11 + f);
    s.coord.insert(s.coord.end(), cell.coord.begin(), cell.coord.end());
    s.box.insert(s.box.end(), kCell.begin(), kCell.end());
    if (f == 0)
      for (int t : cell.types) s.atom_types.push_back(1 - t);  // model type 0 (A) is the system's 1
  }
  s.natoms = static_cast<std::int64_t>(s.atom_types.size());
  return s;
}

// The same frames in the model's own type indices, as the Python module gives them.
PotentialFrames given_frames(const System& s, const std::vector<std::string>& model_types) {
  PotentialFrames p;
  p.nframes = s.nframes;
  p.natoms = s.natoms;
  p.coord = s.coord;
  p.box = s.box;
  for (int t : s.atom_types) {
    const auto& name = s.type_map[static_cast<std::size_t>(t)];
    p.atom_types.push_back(name == model_types[0] ? 0 : 1);
  }
  return p;
}

// A model of small_config's nets with `types` as its type map and `precision`.
std::string write_model(const std::string& dir, const std::string& name, std::vector<std::string> types,
                        torch::Dtype precision) {
  auto mc = small_config(false, true);
  mc.type_map = std::move(types);
  mc.precision = precision;
  for (auto& p : mc.parts) p.precision = precision;
  const auto path = dir + "/" + name;
  save_model(path, small_model_of(mc), {});
  return path;
}

}  // namespace

TEST_CASE("an ensemble's members read a stored system's elements by name in their own precision",
          "[eval][potential][ensemble]") {
  const auto dir = make_temp_dir("ensemble");
  const auto a = write_model(dir, "a.pt", {"A", "B"}, torch::kFloat64);
  const auto b = write_model(dir, "b.pt", {"B", "A"}, torch::kFloat32);
  const auto ensemble = Ensemble::load({a, b});
  REQUIRE(ensemble.size() == 2);
  const System stored = stored_frames();
  const std::vector<std::int64_t> frames = {2, 0};
  const auto out = ensemble.evaluate(stored, frames);
  REQUIRE(out.size() == 2);
  for (std::size_t m = 0; m < 2; ++m) {
    INFO("member " << m + 1 << ", type map " << ensemble[m].config().type_map[0] << " "
                   << ensemble[m].config().type_map[1]);
    // Frames 0 to 2 given in the member's own type indices; the stored frames 2 and 0 must be those.
    const auto all = ensemble[m].evaluate(given_frames(stored, ensemble[m].config().type_map));
    const auto n3 = static_cast<std::size_t>(3 * stored.natoms);
    const std::vector<double> energy = {all.energy[2], all.energy[0]};
    std::vector<double> force(all.force.begin() + 2 * n3, all.force.begin() + 3 * n3);
    force.insert(force.end(), all.force.begin(), all.force.begin() + n3);
    std::vector<double> virial(all.virial.begin() + 18, all.virial.begin() + 27);
    virial.insert(virial.end(), all.virial.begin(), all.virial.begin() + 9);
    // float32 members: the same float32 arithmetic, grouped differently
    const double tol = m == 0 ? 1e-10 : 1e-4;
    CHECK(max_abs_difference(out[m].energy, energy) <= tol * std::abs(energy[0]));
    CHECK(max_abs_difference(out[m].force, force) <= tol);
    CHECK(max_abs_difference(out[m].virial, virial) <= tol * 10);
  }
  // The two members are different models: their forces differ.
  CHECK(max_abs_difference(out[0].force, out[1].force) > 1e-3);
}

TEST_CASE("a non-finite prediction names the ensemble's member, the frame's number and the system",
          "[eval][ensemble][errors]") {
  const auto dir = make_temp_dir("ensemble-nan");
  const auto a = write_model(dir, "a.pt", {"A", "B"}, torch::kFloat64);
  auto mc = small_config(false, true);
  DeepPot broken = small_model_of(mc);
  {
    torch::NoGradGuard no_grad;
    broken->parameters().back().view({-1})[0] = std::nan("");
  }
  save_model(dir + "/nan.pt", broken, {});
  const auto ensemble = Ensemble::load({a, dir + "/nan.pt"});
  const System stored = stored_frames();
  CHECK_THROWS_WITH(
      ensemble.evaluate(stored, {1}, {}, {41}),
      "model 2 of the ensemble (" + dir +
          "/nan.pt): the model predicts non-finite energy for frame 41 of frames.h5#/AB; the "
          "model file holds non-finite weights or the frame is far outside what it was trained on");
  // Without numbers, the frame's index in the system.
  CHECK_THROWS_WITH(
      ensemble[1].evaluate(stored, {1}),
      Catch::Matchers::StartsWith("the model predicts non-finite energy for frame 1 of frames.h5"));
  // An element no member knows is the data's error, naming the system.
  System other = stored;
  other.type_map = {"B", "C"};
  CHECK_THROWS_AS(ensemble.evaluate(other, {0}), DataError);
  CHECK_THROWS_WITH(ensemble.evaluate(other, {0}), Catch::Matchers::Contains("frames.h5#/AB"));
}
