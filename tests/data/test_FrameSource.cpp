// Frames read on demand (what a rank of a data-parallel job does): any frames, in any order, across set
// boundaries, from npy folders and hdf5 groups, equal the same frames of a whole read; bad values are found
// when their frame is read and named by set and frame; statistics of parts merge to those of the whole.
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/SystemStatistics.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::FrameSource;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::synthetic_system;

namespace {

void require_same_frames(const System& a, const System& b) {
  CHECK(a.nframes == b.nframes);
  CHECK(a.atom_types == b.atom_types);
  CHECK(a.coord == b.coord);
  CHECK(a.box == b.box);
  CHECK(a.energy == b.energy);
  CHECK(a.force == b.force);
  CHECK(a.virial == b.virial);
}

}  // namespace

TEST_CASE("frames read on demand equal the same frames of a whole read, across sets", "[data][frames]") {
  const std::string dir = make_temp_dir("frame-source");
  const System s = synthetic_system(7);
  // Sets of 3 frames: set.000 = 0-2, set.001 = 3-5, set.002 = 6.
  deepkf::write_npy_system(dir + "/npy", s, 3);
  deepkf::write_hdf5_systems(dir + "/data.h5", {s}, {"sys"}, 3);
  const std::vector<std::int64_t> frames = {5, 0, 3, 3, 6, 2, 1};  // any order, a repeat, every set

  for (const std::string& path : {dir + "/npy", dir + "/data.h5"}) {
    INFO(path);
    const auto sources = deepkf::open_systems(path);
    REQUIRE(sources.size() == 1);
    const FrameSource& source = *sources[0];
    CHECK(source.frames_read() == 0);  // opening reads no frame
    CHECK(source.nframes() == 7);
    CHECK(source.info().natoms == 4);
    CHECK(source.info().has_force);
    CHECK(source.info().has_virial);
    CHECK(source.info().periodic);

    const System picked = source.read(frames);
    require_same_frames(picked, deepkf::select_frames(s, frames));
    CHECK(source.frames_read() == 7);
    require_same_frames(source.read_range(2, 5), deepkf::select_frames(s, {2, 3, 4}));
    CHECK(source.read({}).nframes == 0);
    CHECK(source.frames_read() == 10);
    CHECK_THROWS_WITH(source.read({7}), Contains("frame 7 out of range") && Contains("7 frames"));

    // A part of the system (as after a validation split) reads by position.
    const deepkf::FrameSubset part{sources[0], {1, 4, 6}};
    require_same_frames(part.read({2, 0}), deepkf::select_frames(s, {6, 1}));
    CHECK_THROWS_WITH(part.read({3}), Contains("frame 3 out of range for a part"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a bad value is found when its frame is read, named by set and frame", "[data][frames][errors]") {
  const std::string dir = make_temp_dir("frame-source-errors");
  System s = synthetic_system(6);
  s.force[12 * 4 + 3 * 1 + 2] = std::numeric_limits<double>::quiet_NaN();  // frame 4 = set.001 frame 1
  s.box[9 * 2 + 8] = -10.0;                                                // frame 2 = set.000 frame 2
  deepkf::write_npy_system(dir + "/npy", s, 3);
  deepkf::write_hdf5_systems(dir + "/data.h5", {s}, {"sys"}, 3);
  for (const auto& [path, set] : {std::pair<std::string, std::string>{dir + "/npy", dir + "/npy/set.001"},
                                  {dir + "/data.h5", dir + "/data.h5#/sys/set.001"}}) {
    INFO(path);
    const auto sources = deepkf::open_systems(path);  // the layout is fine: opening succeeds
    REQUIRE(sources.size() == 1);
    CHECK(sources[0]->read({0, 1, 3, 5}).nframes == 4);
    CHECK_THROWS_WITH(sources[0]->read({5, 4}), Contains("force.npy in " + set) && Contains("nan") &&
                                                    Contains("frame 1 atom 1 component z"));
    CHECK_THROWS_WITH(sources[0]->read({2}), Contains("frame 2") && Contains("left-handed"));
    CHECK_THROWS_AS(sources[0]->read_all(), deepkf::DataError);
  }
  fs::remove_all(dir);
}

TEST_CASE("a truncated npy file fails when its system is opened", "[data][frames][errors]") {
  const std::string dir = make_temp_dir("frame-source-short");
  deepkf::write_npy_system(dir + "/sys", synthetic_system(4));
  const std::string force = dir + "/sys/set.000/force.npy";
  fs::resize_file(force, fs::file_size(force) - 8);
  CHECK_THROWS_WITH(deepkf::open_npy_system(dir + "/sys"), Contains(force) && Contains("truncated"));
  fs::remove_all(dir);
}

TEST_CASE("statistics of parts of a system merge to the statistics of the whole", "[data][frames]") {
  System s = synthetic_system(9);
  for (std::int64_t f = 0; f < s.nframes; ++f) s.energy[static_cast<std::size_t>(f)] += 0.37 * f * f;
  const auto whole = deepkf::compute_statistics(s);
  deepkf::SystemStatistics merged;
  for (const auto& range : {std::vector<std::int64_t>{0, 1, 2, 3}, {4}, {}, {5, 6, 7, 8}})
    merged = deepkf::merge(merged, deepkf::compute_statistics(deepkf::select_frames(s, range)));
  CHECK(merged.nframes == whole.nframes);
  CHECK(merged.energy_mean == Approx(whole.energy_mean).epsilon(1e-14));
  CHECK(merged.energy_sq_dev == Approx(whole.energy_sq_dev).epsilon(1e-12));
  CHECK(merged.energy_std == Approx(whole.energy_std).epsilon(1e-12));
  CHECK(merged.energy_min == whole.energy_min);
  CHECK(merged.energy_max == whole.energy_max);
  CHECK(merged.force_frames == whole.force_frames);
  CHECK(merged.force_sum_sq == Approx(whole.force_sum_sq).epsilon(1e-14));
  CHECK(merged.force_max == whole.force_max);
  // The packed form carries exactly those fields.
  const auto back = deepkf::unpack(deepkf::pack(merged).data(), whole);
  CHECK(back.energy_sq_dev == merged.energy_sq_dev);
  CHECK(back.force_frames == merged.force_frames);
}
