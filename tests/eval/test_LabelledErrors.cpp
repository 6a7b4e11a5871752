// The model test behind `deepkf test`, on the project's CP2K silicon data with a small random model: the
// per-frame rows, the per-system metrics and the parity points must tell the same story, recomputed here
// from the rows alone.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include "src/core/Error.hpp"
#include "src/eval/LabelledErrors.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"

namespace {

deepkf::LoadedModel small_model() {
  deepkf::LoadedModel m;
  m.config = deepkf::test::small_silicon_config(24);
  m.model = deepkf::DeepPot(m.config);
  return m;
}

}  // namespace

TEST_CASE("model test rows, metrics and parity points agree", "[eval]") {
  const auto model = small_model();
  const auto data = deepkf::Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"}, {"Si"});
  const auto r = deepkf::labelled_errors(model, data, 4);  // batches of 4 leave partial last batches

  std::int64_t frames = 0, components = 0;
  for (const auto& s : data.systems) {
    frames += s.nframes;
    components += s.nframes * s.natoms * 3;
  }
  REQUIRE(r.systems.size() == data.systems.size());
  CHECK(r.total_frames == frames);
  REQUIRE(static_cast<std::int64_t>(r.frames.size()) == frames);
  CHECK(static_cast<std::int64_t>(r.e_ref.size()) == frames);
  CHECK(static_cast<std::int64_t>(r.f_ref.size()) == components);

  // The overall energy RMSE per atom and force RMSE, from the per-frame rows.
  double se = 0.0, sf = 0.0, n_f = 0.0;
  for (const auto& f : r.frames) {
    const double de = (f.e_pred - f.e_ref) / static_cast<double>(f.natoms);
    se += de * de;
    const double c = 3.0 * static_cast<double>(f.natoms);
    sf += f.f_rmse * f.f_rmse * c;
    n_f += c;
    CHECK(std::isfinite(f.v_rmse_per_atom));  // the data has virials
  }
  CHECK(r.total.rmse_e() == Approx(std::sqrt(se / static_cast<double>(frames))).epsilon(1e-10));
  CHECK(r.total.rmse_f() == Approx(std::sqrt(sf / n_f)).epsilon(1e-10));
  // The same from the parity points.
  double sp = 0.0;
  for (std::size_t i = 0; i < r.f_ref.size(); ++i)
    sp += (r.f_pred[i] - r.f_ref[i]) * (r.f_pred[i] - r.f_ref[i]);
  CHECK(r.total.rmse_f() == Approx(std::sqrt(sp / static_cast<double>(components))).epsilon(1e-10));

  // One table row per frame after the header; the SVG has both panels.
  std::istringstream table(deepkf::frames_table(r));
  std::string line;
  std::int64_t rows = 0;
  while (std::getline(table, line)) rows += line.rfind('#', 0) == 0 ? 0 : 1;
  CHECK(rows == frames);
  const auto svg = deepkf::parity_svg(r);
  CHECK(svg.find("energy per atom") != std::string::npos);
  CHECK(svg.find("force components") != std::string::npos);
  // A few systems: each its own colour (a marker group per system and panel) and its RMSE in the legend.
  if (r.systems.size() >= 2 && r.systems.size() <= deepkf::kParitySystemColours) {
    std::size_t groups = 0;
    for (auto pos = svg.find("<g fill='"); pos != std::string::npos; pos = svg.find("<g fill='", pos + 1))
      ++groups;
    CHECK(groups == 2 * r.systems.size());
    for (const auto& sys : r.systems) {
      const std::string name = std::filesystem::path(sys.source).filename().string();
      INFO("system " << sys.source);
      CHECK(svg.find(fmt::format("{}: {:.2e} eV/atom", name, sys.metrics.rmse_e())) != std::string::npos);
      CHECK(svg.find(fmt::format("{}: {:.2e} eV/A", name, sys.metrics.rmse_f())) != std::string::npos);
    }
  }
}

TEST_CASE("a non-finite prediction stops the model test, naming the frame and the system", "[eval][errors]") {
  auto model = small_model();
  {
    torch::NoGradGuard no_grad;
    model.model->parameters().front().view({-1})[0] = std::nan("");
  }
  const std::string file = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";
  const auto data = deepkf::Dataset::load({file}, {"Si"});
  // Formerly: every error printed as -nan, exit status 0.
  CHECK_THROWS_AS(deepkf::labelled_errors(model, data, 4), deepkf::ModelError);
  CHECK_THROWS_WITH(deepkf::labelled_errors(model, data, 4),
                    Catch::Matchers::StartsWith("the model predicts non-finite energy for frame 0 of " +
                                                data.systems.front().source));
}

TEST_CASE("a float32 model is compared with the labels as stored, not rounded to its precision", "[eval]") {
  auto model = small_model();
  model.config.precision = torch::kFloat32;
  for (auto& p : model.config.parts) p.precision = torch::kFloat32;
  model.model = deepkf::DeepPot(model.config);
  const auto data = deepkf::Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"}, {"Si"});
  const auto r = deepkf::labelled_errors(model, data, 3, 2);
  REQUIRE(r.frames.size() >= 2);
  const auto& sys = data.systems.front();
  const auto& first = r.frames.front();
  REQUIRE(first.system == sys.source);
  // DeePMD-kit's dp test writes the data's own values beside a float32 model's predictions.
  CHECK(first.e_ref == sys.energy[0]);
  CHECK(static_cast<double>(static_cast<float>(sys.energy[0])) != sys.energy[0]);  // the test can fail
  REQUIRE(first.force_begin == 0);
  for (std::size_t c = 0; c < 6; ++c) CHECK(r.f_ref[c] == sys.force[c]);
  REQUIRE(first.v_ref.size() == 9);
  CHECK(first.v_ref[0] == sys.virial[0]);
}
