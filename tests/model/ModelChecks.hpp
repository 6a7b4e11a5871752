#pragma once
// Catch checks shared by the model tests (ModelTestSupport.hpp holds the helpers without Catch, which the
// benchmarks use too).
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"

namespace deepkf::test {

// The checks of compare_ghost_layout: c has ghosts in that layout, and energies, forces, the virial and the
// sum of the per-atom virials equal the periodic ones to round-off.
inline void check_ghost_layout(DeepPot& model, const Config& c) {
  REQUIRE(!ghost_layout(c, make_inputs(c, model->config()), model->config()).owner.empty());
  // forces on ghosts summed onto their owners give the periodic forces
  const auto d = compare_ghost_layout(model, c);
  CHECK(d.energy < 1e-13);
  CHECK(d.force < 1e-12);
  CHECK(d.virial < 1e-12);
  CHECK(d.atom_virial < 1e-12);
}

}  // namespace deepkf::test
