// Datasets of many systems: the real DFT datasets, the global type map, round trips through the
// converters, unit plausibility and the seeded splits.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/DataFormat.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/SystemStatistics.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::DataError;
using deepkf::Dataset;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::require_shared_dataset;

namespace {

const System& by_source_suffix(const Dataset& d, const std::string& suffix) {
  for (const System& s : d.systems)
    if (s.source.size() >= suffix.size() &&
        s.source.compare(s.source.size() - suffix.size(), suffix.size(), suffix) == 0)
      return s;
  FAIL("no system whose source ends in " << suffix);
  return d.systems.front();
}

void require_same_system(const System& a, const System& b) {
  INFO(a.source << " vs " << b.source);
  // Element names per atom (the type indices depend on each load's global type map).
  std::vector<std::string> ea, eb;
  for (int t : a.atom_types) ea.push_back(a.type_map[static_cast<std::size_t>(t)]);
  for (int t : b.atom_types) eb.push_back(b.type_map[static_cast<std::size_t>(t)]);
  CHECK(ea == eb);
  CHECK(a.periodic == b.periodic);
  CHECK(a.nframes == b.nframes);
  CHECK(a.coord == b.coord);
  CHECK(a.box == b.box);
  CHECK(a.energy == b.energy);
  CHECK(a.force == b.force);
  CHECK(a.virial == b.virial);
}

// A copy of an npy dataset tree with every force divided by `factor` (as if stored in Hartree/Bohr).
std::vector<std::string> scaled_copy(const Dataset& d, const std::string& dir, double factor) {
  std::vector<std::string> paths;
  int k = 0;
  for (System s : d.systems) {
    for (double& f : s.force) f /= factor;
    const std::string p = dir + "/sys" + std::to_string(k++);
    deepkf::write_npy_system(p, s);
    paths.push_back(p);
  }
  return paths;
}

}  // namespace

// Expected values below were read independently with /usr/bin/python3 and numpy 1.24 from the .npy files
// (np.load(...)[index]; statistics with np.mean/np.std over energy/natoms and sqrt(mean(force**2))).
TEST_CASE("water: four systems, data_1 with two sets, values as numpy reads them", "[data][real]") {
  const std::string root = require_shared_dataset("water");
  const Dataset d = Dataset::load({root});
  REQUIRE(d.systems.size() == 4);
  CHECK(d.type_map == std::vector<std::string>{"O", "H"});
  CHECK(d.total_frames() == 400);
  const System& w0 = by_source_suffix(d, "water/data_0");
  CHECK(w0.nframes == 80);
  CHECK(w0.natoms == 192);
  CHECK(std::count(w0.atom_types.begin(), w0.atom_types.end(), 0) == 64);
  CHECK(w0.coord[0] == Approx(7.538786).epsilon(1e-7));  // coord.npy[0, 0] (float32)
  CHECK(w0.energy[0] == Approx(-29943.906).epsilon(1e-7));
  CHECK(w0.force.back() == Approx(0.15856938).epsilon(1e-7));  // force.npy[-1, -1]
  CHECK(w0.box[0] == Approx(12.444661).margin(1e-3));
  CHECK_FALSE(w0.has_virial());
  const System& w1 = by_source_suffix(d, "water/data_1");
  CHECK(w1.nframes == 160);
  CHECK(w1.coord[80 * 576] == Approx(7.3031473).epsilon(1e-7));  // set.001/coord.npy[0, 0]
  CHECK(w1.energy[80] == Approx(-29944.06).epsilon(1e-7));       // float32        // set.001/energy.npy[0]

  const auto st = deepkf::compute_statistics(w0);
  CHECK(st.energy_mean == Approx(-155.956195958).epsilon(1e-9));
  CHECK(st.energy_std == Approx(0.003597857).epsilon(1e-5));
  CHECK(st.energy_min == Approx(-155.966562907).epsilon(1e-9));
  CHECK(st.energy_max == Approx(-155.946248372).epsilon(1e-9));
  CHECK(st.force_rms() == Approx(0.815614674).epsilon(1e-6));
  CHECK(st.force_max == Approx(5.292107866).epsilon(1e-6));
  CHECK(st.species_count == std::vector<std::int64_t>{64, 128});
}

TEST_CASE("si_mlearn: many systems of different sizes with virials", "[data][real]") {
  const Dataset train = Dataset::load({require_shared_dataset("si_mlearn/train")});
  CHECK(train.systems.size() == 10);
  CHECK(train.total_frames() == 214);
  const Dataset test = Dataset::load({require_shared_dataset("si_mlearn/test")});
  CHECK(test.systems.size() == 4);
  CHECK(test.total_frames() == 25);
  const System& si64 = by_source_suffix(train, "sys_Si64");
  CHECK(si64.nframes == 145);
  CHECK(si64.natoms == 64);
  CHECK(si64.has_virial());
  CHECK(si64.energy[0] == Approx(-340.54765774).epsilon(1e-12));
  CHECK(si64.virial[0] == Approx(0.9842963923572364).epsilon(1e-14));
  CHECK(si64.box[0] == Approx(10.937456).epsilon(1e-7));
  CHECK(train.type_map == std::vector<std::string>{"Si"});
  // Each single small system with near-zero forces is not judged on its own when loaded with the rest.
  CHECK(train.warnings.empty());
}

TEST_CASE("cho_nopbc: non-periodic, three species, global map C,H,O", "[data][real]") {
  const Dataset d = Dataset::load({require_shared_dataset("cho_nopbc")});
  REQUIRE(d.systems.size() == 3);
  CHECK(d.total_frames() == 2062);
  CHECK(d.type_map == std::vector<std::string>{"C", "H", "O"});
  const System& c1 = by_source_suffix(d, "C1H4O2");
  CHECK_FALSE(c1.periodic);
  CHECK(c1.box.empty());
  CHECK(c1.nframes == 1562);
  CHECK(c1.atom_types == std::vector<int>{1, 1, 1, 1, 0, 2, 2});  // type.raw
  CHECK(c1.energy[0] == Approx(-5184.9404).epsilon(1e-7));
  CHECK(c1.coord[0] == Approx(3.16876).epsilon(1e-6));
  CHECK(by_source_suffix(d, "C3H3O4").force[0] == Approx(1.8145744).epsilon(1e-7));
  CHECK(by_source_suffix(d, "C4H3O1").nframes == 15);

  // With a given map the types are remapped by name; a missing element is an error naming it.
  const Dataset r = Dataset::load({require_shared_dataset("cho_nopbc/C1H4O2")}, {"O", "H", "C"});
  CHECK(r.systems[0].atom_types == std::vector<int>{1, 1, 1, 1, 2, 0, 0});  // C -> 2, H -> 1, O -> 0
  CHECK(r.systems[0].type_map == std::vector<std::string>{"O", "H", "C"});
  CHECK_THROWS_WITH(Dataset::load({require_shared_dataset("cho_nopbc/C1H4O2")}, {"O", "H"}),
                    Contains("element 'C'") && Contains("C1H4O2") && Contains("O, H"));
}

TEST_CASE("cu_pwmat: two temperatures, and a mixed load under one map", "[data][real]") {
  const Dataset d =
      Dataset::load({require_shared_dataset("cu_pwmat/T300"), require_shared_dataset("cu_pwmat/T500")});
  REQUIRE(d.systems.size() == 2);
  CHECK(d.systems[0].nframes == 100);
  CHECK(d.systems[1].nframes == 100);
  CHECK(d.systems[0].natoms == 72);
  CHECK(d.systems[0].energy[0] == Approx(-357682.8045).epsilon(1e-12));
  CHECK(d.systems[1].box[0] == Approx(10.863786).epsilon(1e-7));

  const Dataset mixed =
      Dataset::load({require_shared_dataset("water/data_3"), require_shared_dataset("cu_pwmat/T300"),
                     require_shared_dataset("cho_nopbc/C4H3O1")});
  CHECK(mixed.type_map == std::vector<std::string>{"O", "H", "Cu", "C"});
  CHECK(mixed.systems[1].atom_types[0] == 2);
  CHECK(mixed.systems[2].atom_types[3] == 3);  // atom 3 of C4H3O1 is C (type.raw 1 1 1 0 ...)
  CHECK(mixed.systems[2].type_map == mixed.type_map);
}

TEST_CASE("round trips: npy -> h5 -> read, h5 -> npy -> h5, npy -> npy", "[data][roundtrip]") {
  const std::string dir = make_temp_dir("roundtrip");
  const Dataset d = Dataset::load({require_shared_dataset("water/data_1"),
                                   require_shared_dataset("si_mlearn/train/sys_Si63"),
                                   require_shared_dataset("cho_nopbc/C4H3O1")});
  std::vector<std::string> groups = {"water/data_1", "si/Si63", "C4H3O1"};
  const std::string h5 = dir + "/all.h5";
  deepkf::write_hdf5_systems(h5, d.systems, groups, 100);  // data_1 becomes set.000 + set.001 of 100 + 60
  const Dataset back = Dataset::load({h5});
  REQUIRE(back.systems.size() == 3);
  // Groups come back in name order: C4H3O1, si/Si63, water/data_1.
  require_same_system(back.systems[0], d.systems[2]);
  require_same_system(back.systems[1], d.systems[1]);
  require_same_system(back.systems[2], d.systems[0]);
  CHECK(Dataset::load({h5 + "#si"}).systems.size() == 1);

  for (std::size_t i = 0; i < back.systems.size(); ++i)
    deepkf::write_npy_system(dir + "/npy/" + std::to_string(i), back.systems[i], 50);
  const Dataset npy = Dataset::load({dir + "/npy"});
  REQUIRE(npy.systems.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) require_same_system(npy.systems[i], back.systems[i]);
  CHECK(fs::exists(dir + "/npy/0/nopbc"));
  CHECK(fs::exists(dir + "/npy/2/set.003"));

  deepkf::write_hdf5_systems(dir + "/again.h5", npy.systems, {"C4H3O1", "si/Si63", "water/data_1"});
  const Dataset again = Dataset::load({dir + "/again.h5"});
  for (std::size_t i = 0; i < 3; ++i) require_same_system(again.systems[i], back.systems[i]);
  fs::remove_all(dir);
}

TEST_CASE("units: every real dataset passes, the same data with forces / 51.42 is flagged", "[data][units]") {
  const std::string dir = make_temp_dir("units");
  for (const char* name : {"water", "si_mlearn/train", "si_mlearn/test", "cho_nopbc", "cu_pwmat"}) {
    INFO(name);
    const Dataset real = Dataset::load({require_shared_dataset(name)});
    CHECK(real.warnings.empty());
    std::string sub = dir + "/" + name;
    std::replace(sub.begin() + static_cast<std::ptrdiff_t>(dir.size()) + 1, sub.end(), '/', '_');
    const auto paths = scaled_copy(real, sub, 51.42);
    CHECK_THROWS_AS(Dataset::load(paths), DataError);
    CHECK_THROWS_WITH(Dataset::load(paths), Contains(paths[0]) && Contains("51.422") && Contains("eV/A"));
    deepkf::LoadOptions allow;
    allow.allow_suspicious_units = true;
    const Dataset loaded = Dataset::load(paths, {}, allow);
    CHECK(loaded.systems.size() == real.systems.size());
    CHECK(loaded.warnings.size() == 1);
  }
  // kcal/mol/A-like: forces 23 times larger than eV/A on cho (rms 16 -> 366 eV/A in C4H3O1).
  {
    const Dataset real = Dataset::load({require_shared_dataset("cho_nopbc/C4H3O1")});
    const auto paths = scaled_copy(real, dir + "/kcal", 1.0 / 23.06);
    CHECK_THROWS_WITH(Dataset::load(paths), Contains("sys0") && Contains("kcal/mol/A"));
  }
  fs::remove_all(dir);
}

TEST_CASE("splits by system and by frame: reproducible, disjoint, covering", "[data][split]") {
  const Dataset d = Dataset::load({require_shared_dataset("si_mlearn/train")});
  using deepkf::SplitMode;

  SECTION("by system") {
    const auto a = deepkf::split_systems(d.systems, 0.3, SplitMode::kSystem, 42);
    const auto b = deepkf::split_systems(d.systems, 0.3, SplitMode::kSystem, 42);
    const auto c = deepkf::split_systems(d.systems, 0.3, SplitMode::kSystem, 43);
    CHECK(a.validation.size() == 3);  // round(0.3 x 10)
    CHECK(a.train.size() == 7);
    std::multiset<std::string> all;
    std::vector<std::string> va, vb, vc;
    for (const auto& s : a.train) all.insert(s.source);
    for (const auto& s : a.validation) all.insert(s.source), va.push_back(s.source);
    for (const auto& s : b.validation) vb.push_back(s.source);
    for (const auto& s : c.validation) vc.push_back(s.source);
    std::multiset<std::string> expected;
    for (const auto& s : d.systems) expected.insert(s.source);
    CHECK(all == expected);  // disjoint and covering: every source exactly once
    CHECK(va == vb);
    // Another seed gives another choice for at least one of a few seeds (10 choose 3 = 120 choices).
    bool differs = va != vc;
    for (std::uint64_t seed = 44; seed < 48 && !differs; ++seed) {
      std::vector<std::string> v;
      for (const auto& s : deepkf::split_systems(d.systems, 0.3, SplitMode::kSystem, seed).validation)
        v.push_back(s.source);
      differs = v != va;
    }
    CHECK(differs);
  }
  SECTION("by frame") {
    const auto a = deepkf::split_systems(d.systems, 0.2, SplitMode::kFrame, 7);
    const auto b = deepkf::split_systems(d.systems, 0.2, SplitMode::kFrame, 7);
    REQUIRE(a.train.size() == d.systems.size());
    std::int64_t nval = 0;
    for (const auto& v : a.validation) nval += v.nframes;
    CHECK(nval > 0);
    CHECK(a.validation.size() == b.validation.size());
    for (std::size_t i = 0; i < a.validation.size(); ++i)
      CHECK(a.validation[i].energy == b.validation[i].energy);
    for (std::size_t i = 0; i < d.systems.size(); ++i) {
      const System& s = d.systems[i];
      const System& t = a.train[i];
      const System* v = nullptr;
      for (const auto& cand : a.validation)
        if (cand.source == s.source) v = &cand;
      const std::int64_t held = v ? v->nframes : 0;
      INFO(s.source << " frames " << s.nframes);
      CHECK(t.nframes + held == s.nframes);
      if (s.nframes >= 2)
        CHECK(held == std::clamp<std::int64_t>(std::llround(0.2 * s.nframes), 1, s.nframes - 1));
      // Disjoint and covering: the energies of both parts together are the system's, each frame once
      // (si_mlearn energies within a system are distinct).
      std::multiset<double> parts(t.energy.begin(), t.energy.end()), whole(s.energy.begin(), s.energy.end());
      if (v) parts.insert(v->energy.begin(), v->energy.end());
      CHECK(parts == whole);
      if (v) {
        // Held-out frames carry their own coordinates and forces along.
        bool found = false;
        for (std::int64_t f = 0; f < s.nframes && !found; ++f) {
          const auto off = 3 * s.natoms * f;
          found = s.energy[static_cast<std::size_t>(f)] == v->energy[0] &&
                  std::equal(v->coord.begin(), v->coord.begin() + 3 * s.natoms, s.coord.begin() + off) &&
                  std::equal(v->force.begin(), v->force.begin() + 3 * s.natoms, s.force.begin() + off);
        }
        CHECK(found);
      }
    }
  }
  SECTION("bad fraction") {
    CHECK_THROWS_AS(deepkf::split_systems(d.systems, 1.0, SplitMode::kFrame, 1), deepkf::ConfigError);
    CHECK_THROWS_AS(deepkf::split_systems(d.systems, -0.1, SplitMode::kSystem, 1), deepkf::ConfigError);
  }
}

TEST_CASE("a system without type_map.raw: its types index the model's type map, as DeePMD-kit reads it",
          "[data][npy]") {
  const std::string dir = make_temp_dir("unnamed-types");
  deepkf::test::write_synthetic_system(dir + "/sys", deepkf::test::SyntheticArrays(3));
  fs::remove(dir + "/sys/type_map.raw");  // type.raw is "0 1 1 0"
  // Named by the model's map: 0 -> Be, 1 -> C (names that the data does not know).
  const Dataset d = Dataset::load({dir + "/sys"}, {"Be", "C"});
  REQUIRE(d.systems.size() == 1);
  CHECK(d.systems[0].type_map == std::vector<std::string>{"Be", "C"});
  CHECK(d.systems[0].atom_types == std::vector<int>{0, 1, 1, 0});
  // A type the map does not reach.
  CHECK_THROWS_WITH(Dataset::load({dir + "/sys"}, {"Be"}),
                    Contains(dir + "/sys has atom type 1 and no type_map.raw") && Contains("(Be)"));
  // Without a model's map the types keep dpdata's names.
  CHECK(Dataset::load({dir + "/sys"}).type_map == std::vector<std::string>{"Type_0", "Type_1"});
  fs::remove_all(dir);
}

TEST_CASE("dataset paths: missing paths and folders without systems", "[data][errors]") {
  const std::string dir = make_temp_dir("paths");
  CHECK_THROWS_WITH(Dataset::load({dir + "/absent"}),
                    Contains(dir + "/absent") && Contains("does not exist"));
  fs::create_directories(dir + "/empty/sub");
  CHECK_THROWS_WITH(Dataset::load({dir + "/empty"}), Contains(dir + "/empty") && Contains("no system"));
  fs::remove_all(dir);
}

TEST_CASE("every data path's format is told from its name and contents in one place", "[data][errors]") {
  using deepkf::data_format;
  using deepkf::DataFormat;
  using deepkf::test::write_text;
  const std::string dir = make_temp_dir("formats");
  fs::create_directories(dir + "/sys/set.000");
  write_text(dir + "/sys/type.raw", "0\n");
  fs::create_directories(dir + "/db");
  write_text(dir + "/db/data.mdb", "");
  write_text(dir + "/a.xyz", "1\n\nH 0 0 0\n");
  write_text(dir + "/md.dump", "\nITEM: TIMESTEP\n0\n");
  write_text(dir + "/notes.txt", "ITEM: NOT A DUMP\n");
  CHECK(data_format(dir + "/train.h5#/sys") == DataFormat::kHdf5);  // by name: the reader checks the file
  CHECK(data_format(dir + "/absent") == DataFormat::kMissing);
  CHECK(data_format(dir + "/absent.xyz") == DataFormat::kMissing);
  CHECK(data_format(dir + "/a.xyz") == DataFormat::kExtXyz);
  CHECK(data_format(dir + "/db") == DataFormat::kLmdb);
  CHECK(data_format(dir + "/sys") == DataFormat::kNpySystem);
  CHECK(data_format(dir + "/md.dump") == DataFormat::kLammpsDump);
  CHECK(data_format(dir + "/notes.txt") == DataFormat::kOther);
  CHECK(data_format(dir) == DataFormat::kFolder);
  // Training data cannot be a dump (no labels) nor an unknown file; both are named with what they are.
  CHECK_THROWS_WITH(Dataset::load({dir + "/md.dump"}),
                    Contains(dir + "/md.dump is a LAMMPS dump") && Contains("holds no labels"));
  CHECK_THROWS_WITH(Dataset::load({dir + "/notes.txt"}),
                    Contains(dir + "/notes.txt is a file of no known data format"));
  fs::remove_all(dir);
}

TEST_CASE("neighbour census equals a brute-force minimum-image count on water", "[data][neighbors]") {
  const Dataset d = Dataset::load({require_shared_dataset("water/data_3")});
  const System& s = d.systems[0];
  const double rcut = 6.0;
  // Brute force over every pair with the minimum image (the cubic 12.44 A box exceeds 2 rcut), on the
  // frames every 8th frame visits.
  std::vector<std::int64_t> expected(2, 0);
  for (std::int64_t f = 0; f < s.nframes; f += 8) {
    const double* x = s.coord.data() + 3 * s.natoms * f;
    const double* box = s.box.data() + 9 * f;
    REQUIRE(box[1] == 0.0);
    REQUIRE(box[3] == 0.0);
    REQUIRE(box[0] > 2 * rcut);
    for (std::int64_t i = 0; i < s.natoms; ++i) {
      std::int64_t count[2] = {0, 0};
      for (std::int64_t j = 0; j < s.natoms; ++j) {
        if (j == i) continue;
        double r2 = 0.0;
        for (int k = 0; k < 3; ++k) {
          const double L = box[4 * k];
          double dx = x[3 * j + k] - x[3 * i + k];
          dx -= L * std::round(dx / L);
          r2 += dx * dx;
        }
        if (r2 < rcut * rcut) ++count[s.atom_types[static_cast<std::size_t>(j)]];
      }
      for (int t = 0; t < 2; ++t)
        expected[static_cast<std::size_t>(t)] = std::max(expected[static_cast<std::size_t>(t)], count[t]);
    }
  }
  const auto census = deepkf::neighbor_census(s, 2, rcut, 10);  // 80 frames, at most 10: stride 8
  CHECK(census.stride == 8);
  CHECK(census.frames_used == 10);
  CHECK(census.max_count == expected);
  // Water at 1 g/cm^3 has about 30 O and 60 H within 6 A: a sanity bound on the brute force itself.
  CHECK(expected[0] > 25);
  CHECK(expected[1] > 2 * 25);
}

TEST_CASE("units: a few near-equilibrium frames in eV/A are not taken for Hartree/Bohr", "[data][units]") {
  // si_mlearn train/sys_Si16: 2 frames with a force rms of 0.009 eV/A, below the pooled-rms limit.
  const Dataset small = Dataset::load({require_shared_dataset("si_mlearn/train/sys_Si16")});
  CHECK(small.systems.size() == 1);
  CHECK(small.warnings.empty());
}
