// DeePMD-kit's `dp test -d` detail files as `deepkf test -d` writes them, read back and checked against the
// data files themselves (labels exactly: %.18e round-trips a double), the model test's predictions, the
// atom order DeePMD-kit uses (by type, data order within a type) and numpy's savetxt layout.
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/eval/DetailFiles.hpp"
#include "src/eval/LabelledErrors.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace {

struct Block {
  std::string header;
  std::vector<std::vector<double>> rows;
};

// The comment-headed blocks of a detail file.
std::vector<Block> read_blocks(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<Block> blocks;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      blocks.push_back({line.substr(2), {}});
      continue;
    }
    REQUIRE(!blocks.empty());
    std::istringstream fields(line);
    std::vector<double> row;
    for (std::string f; fields >> f;) row.push_back(std::stod(f));
    blocks.back().rows.push_back(row);
  }
  return blocks;
}

deepkf::LoadedModel water_model() {
  deepkf::LoadedModel m;
  auto& mc = m.config;
  mc.type_map = {"O", "H"};
  mc.rcut = 4.0;
  mc.rcut_smth = 1.0;
  mc.sel = {12, 24};
  mc.embedding_neuron = {4, 8};
  mc.axis_neuron = 2;
  mc.fitting_neuron = {8, 8};
  mc.seed = 5;
  mc.validate();
  m.model = deepkf::DeepPot(mc);
  return m;
}

// The same atoms with the types interleaved (O H H O H H ... becomes O H O H ...), keeping the order within
// each type: DeePMD-kit's order of the atoms, by type and then as in the data, is the same for both.
deepkf::System interleave(const deepkf::System& s) {
  std::vector<std::int64_t> by_type[2];
  for (std::int64_t a = 0; a < s.natoms; ++a) by_type[s.atom_types[static_cast<std::size_t>(a)]].push_back(a);
  std::vector<std::int64_t> order;
  for (std::size_t k = 0; order.size() < static_cast<std::size_t>(s.natoms); ++k)
    for (const auto& t : by_type)
      if (k < t.size()) order.push_back(t[k]);
  deepkf::System out = s;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto a = static_cast<std::size_t>(order[i]);
    out.atom_types[i] = s.atom_types[a];
    for (std::int64_t f = 0; f < s.nframes; ++f) {
      for (std::size_t d = 0; d < 3; ++d) {
        const auto to = (static_cast<std::size_t>(f) * order.size() + i) * 3 + d;
        const auto from = (static_cast<std::size_t>(f) * order.size() + a) * 3 + d;
        out.coord[to] = s.coord[from];
        out.force[to] = s.force[from];
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the detail files hold the data's labels and the model's predictions as dp test writes them",
          "[eval]") {
  const auto model = water_model();
  auto data = deepkf::Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/water_cp2k.h5"}, {"O", "H"});
  REQUIRE(data.systems.size() == 1);
  const deepkf::System original = data.systems.front();
  REQUIRE(original.has_force());
  REQUIRE(original.has_virial());
  // The atoms in two orders: as the file has them, and interleaved.
  data.systems.push_back(interleave(original));
  data.systems.back().source = "interleaved";
  const std::int64_t tested = 3;  // -n 3
  const auto r = deepkf::labelled_errors(model, data, 2, tested);
  REQUIRE(r.systems.size() == 2);
  CHECK(r.systems[0].frames == tested);
  CHECK(r.total_frames == 2 * tested);

  const std::string dir = deepkf::test::make_temp_dir("detail-files");
  const auto written = deepkf::write_detail_files(r, dir + "/detail.txt");  // the extension is replaced
  const std::vector<std::string> expected = {dir + "/detail.e.out", dir + "/detail.e_peratom.out",
                                             dir + "/detail.f.out", dir + "/detail.v.out",
                                             dir + "/detail.v_peratom.out"};
  CHECK(written == expected);

  const auto n = static_cast<double>(original.natoms);
  const auto e = read_blocks(dir + "/detail.e.out");
  const auto ea = read_blocks(dir + "/detail.e_peratom.out");
  const auto f = read_blocks(dir + "/detail.f.out");
  const auto v = read_blocks(dir + "/detail.v.out");
  const auto va = read_blocks(dir + "/detail.v_peratom.out");
  REQUIRE(e.size() == 2);
  CHECK(e[0].header == original.source + ": data_e pred_e");
  CHECK(e[1].header == "interleaved: data_e pred_e");
  CHECK(f[0].header == original.source + ": data_fx data_fy data_fz pred_fx pred_fy pred_fz");
  CHECK(v[0].header.find(": data_vxx data_vxy data_vxz") != std::string::npos);
  CHECK(v[0].header.find("pred_vzz") != std::string::npos);

  // O first, then H, each in the data's order.
  std::vector<std::int64_t> sorted;
  for (int type = 0; type < 2; ++type)
    for (std::int64_t a = 0; a < original.natoms; ++a)
      if (original.atom_types[static_cast<std::size_t>(a)] == type) sorted.push_back(a);

  for (std::size_t s = 0; s < 2; ++s) {
    INFO("system " << r.systems[s].source);
    REQUIRE(e[s].rows.size() == static_cast<std::size_t>(tested));
    REQUIRE(f[s].rows.size() == static_cast<std::size_t>(tested * original.natoms));
    REQUIRE(v[s].rows.size() == static_cast<std::size_t>(tested));
    for (std::int64_t k = 0; k < tested; ++k) {
      const auto fk = static_cast<std::size_t>(k);
      const auto& frame = r.frames[s * static_cast<std::size_t>(tested) + fk];
      // Energies: the label exactly, the prediction as the model test has it; per atom divided by N.
      CHECK(e[s].rows[fk] == std::vector<double>{original.energy[fk], frame.e_pred});
      CHECK(ea[s].rows[fk][0] == Approx(original.energy[fk] / n).epsilon(1e-15));
      CHECK(ea[s].rows[fk][1] == Approx(frame.e_pred / n).epsilon(1e-15));
      // Forces: the labels of the original file, atom by atom in DeePMD-kit's order, for both systems.
      for (std::size_t i = 0; i < sorted.size(); ++i) {
        const auto& row = f[s].rows[fk * sorted.size() + i];
        REQUIRE(row.size() == 6);
        for (std::size_t d = 0; d < 3; ++d) {
          const auto at = (fk * sorted.size() + static_cast<std::size_t>(sorted[i])) * 3 + d;
          CHECK(row[d] == original.force[at]);
          // The predictions of the interleaved system equal those of the original, atom by atom.
          CHECK(row[3 + d] == Approx(f[0].rows[fk * sorted.size() + i][3 + d]).margin(1e-10));
        }
      }
      // Virials: 9 labels exactly, then 9 predictions; per atom divided by N.
      REQUIRE(v[s].rows[fk].size() == 18);
      for (std::size_t c = 0; c < 9; ++c) {
        CHECK(v[s].rows[fk][c] == original.virial[fk * 9 + c]);
        CHECK(v[s].rows[fk][9 + c] == frame.v_pred[c]);
        CHECK(va[s].rows[fk][c] == Approx(original.virial[fk * 9 + c] / n).epsilon(1e-15));
      }
    }
  }
  // The force RMSE from the file's columns is the model test's.
  double sum = 0.0, count = 0.0;
  for (const auto& block : f)
    for (const auto& row : block.rows)
      for (std::size_t d = 0; d < 3; ++d, count += 1.0) sum += (row[3 + d] - row[d]) * (row[3 + d] - row[d]);
  CHECK(std::sqrt(sum / count) == Approx(r.total.rmse_f()).epsilon(1e-12));

  // numpy's savetxt layout: %.18e, one space apart.
  std::ifstream in(dir + "/detail.e.out");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  CHECK(row.size() == 2 * 25 + 1);  // two negative energies: "-3.745143549956522747e+03" is 25 characters
}

TEST_CASE("detail files leave out what no system has labels for", "[eval]") {
  const auto model = water_model();
  auto data = deepkf::Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/water_cp2k.h5"}, {"O", "H"});
  data.systems.front().virial.clear();
  const auto r = deepkf::labelled_errors(model, data, 4, 2);
  const std::string dir = deepkf::test::make_temp_dir("detail-files-no-virial");
  const auto written = deepkf::write_detail_files(r, dir + "/d");
  CHECK(written == std::vector<std::string>{dir + "/d.e.out", dir + "/d.e_peratom.out", dir + "/d.f.out"});
}
