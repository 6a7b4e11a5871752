// CP2K inputs from a template: the k-point mesh, the placeholders and the template's mistakes.
#include <fstream>

#include "src/core/Error.hpp"
#include "src/learn/Cp2kInput.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;

namespace {

std::string write_template(const std::string& text) {
  static int n = 0;
  const auto path = test::make_temp_dir("cp2k-template") + "/t" + std::to_string(n++) + ".inp";
  std::ofstream(path) << text;
  return path;
}

const char* kTemplate = R"(&FORCE_EVAL
  STRESS_TENSOR ANALYTICAL
  &DFT
    &KPOINTS
      SCHEME MONKHORST-PACK {{ kpoints }}
    &END KPOINTS
  &END DFT
  &SUBSYS
    &CELL
      {{cell}}
    &END CELL
    &COORD
      {{coord}}
    &END COORD
    {{kinds}}
  &END SUBSYS
  &PRINT
    &FORCES ON
    &END FORCES
    &STRESS_TENSOR ON
    &END STRESS_TENSOR
  &END PRINT
&END FORCE_EVAL
)";

const std::map<std::string, std::array<std::string, 2>> kKinds = {
    {"O", {"DZVP-MOLOPT-SR-GTH", "GTH-PBE-q6"}},
    {"H", {"DZVP-MOLOPT-SR-GTH", "GTH-PBE-q1"}},
    {"Si", {"DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"}}};

}  // namespace

TEST_CASE("the k-point mesh follows the spacing in each direction", "[learn][cp2k]") {
  // The shipped silicon data: Si8 (a = 5.47 A) at 4x4x4 and Si16 (2a x a x a) at 2x4x4 is a spacing of 0.3.
  const double si8[9] = {5.47, 0, 0, 0, 5.47, 0, 0, 0, 5.47};
  const double si16[9] = {10.94, 0, 0, 0, 5.47, 0, 0, 0, 5.47};
  CHECK(kpoint_mesh(si8, 0.3) == std::array<int, 3>{4, 4, 4});
  CHECK(kpoint_mesh(si16, 0.3) == std::array<int, 3>{2, 4, 4});
  CHECK(kpoint_mesh(si8, 10.0) == std::array<int, 3>{1, 1, 1});
  // A sheared cell: the distance between faces, not the edge length, sets the mesh (2 pi / 0.3 / w).
  const double sheared[9] = {5.0, 0, 0, 4.0, 3.0, 0, 0, 0, 20.0};
  // w_a = V / |b x c| = 5 * 3 * 20 / |(60, -80, 0)| = 3, w_b = V / |c x a| = 300 / 100 = 3, w_c = 20.
  CHECK(kpoint_mesh(sheared, 0.3) == std::array<int, 3>{7, 7, 2});
}

TEST_CASE("a template is filled with the frame's cell, atoms, kinds and k-points", "[learn][cp2k]") {
  System s;
  s.source = "test";
  s.type_map = {"O", "H", "Si"};  // Si does not occur: no &KIND for it
  s.atom_types = {1, 0, 1};
  s.natoms = 3;
  s.nframes = 1;
  s.coord = {0.1, 0.2, 0.3, 1, 1, 1, 1.5, 0.25, -0.125};
  s.box = {6, 0, 0, 0, 6.5, 0, 0, 0, 7};
  const Cp2kTemplate t(write_template(kTemplate), kKinds, 0.5, "label in loop.json");
  const std::string in = t.render(s, 0);
  CHECK_THAT(in, Catch::Contains("SCHEME MONKHORST-PACK 3 2 2\n"));
  CHECK_THAT(in, Catch::Contains("    &CELL\n      A 6.0000000000 0.0000000000 0.0000000000\n"
                                 "      B 0.0000000000 6.5000000000 0.0000000000\n"
                                 "      C 0.0000000000 0.0000000000 7.0000000000\n    &END CELL"));
  CHECK_THAT(in, Catch::Contains("      H 0.1000000000 0.2000000000 0.3000000000\n"
                                 "      O 1.0000000000 1.0000000000 1.0000000000\n"
                                 "      H 1.5000000000 0.2500000000 -0.1250000000\n    &END COORD"));
  CHECK_THAT(in,
             Catch::Contains("    &KIND O\n      BASIS_SET DZVP-MOLOPT-SR-GTH\n      POTENTIAL GTH-PBE-q6\n"
                             "    &END KIND\n    &KIND H\n"));
  CHECK_THAT(in, !Catch::Contains("&KIND Si"));
  CHECK_THAT(in, !Catch::Contains("{{"));
  CHECK_THAT(in, Catch::EndsWith("&END FORCE_EVAL\n"));
}

TEST_CASE("template mistakes are named with the file", "[learn][cp2k]") {
  std::string text = kTemplate;
  text.replace(text.find("{{coord}}"), 9, "{{coords}}");
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(text), kKinds, 0.3, "label in loop.json"),
                    Catch::Contains("has an unknown placeholder {{coords}}; did you mean {{coord}}?"));
  text = kTemplate;
  text.replace(text.find("{{coord}}"), 9, "");
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(text), kKinds, 0.3, "label in loop.json"),
                    Catch::Contains("has no {{coord}} placeholder"));
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(kTemplate), {}, 0.3, "label in loop.json"),
                    Catch::Contains("uses {{kinds}} but label in loop.json gives no 'kinds'"));
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(kTemplate), kKinds, 0.0, "label in loop.json"),
                    Catch::Contains("uses {{kpoints}} but label in loop.json gives no 'kpoint_spacing'"));
  text = kTemplate;
  text.replace(text.find("&STRESS_TENSOR ON"), 17, "");
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(text), kKinds, 0.3, "label in loop.json"),
                    Catch::Contains("lacks &STRESS_TENSOR"));
  text = kTemplate;
  text += "{{cell";
  CHECK_THROWS_WITH(Cp2kTemplate(write_template(text), kKinds, 0.3, "label in loop.json"),
                    Catch::Contains("opens a placeholder that is never closed"));
}

TEST_CASE("placeholders in CP2K comments are left as they are", "[learn][cp2k]") {
  System s;
  s.source = "test";
  s.type_map = {"Si"};
  s.atom_types = {0};
  s.natoms = 1;
  s.nframes = 1;
  s.coord = {0.5, 0.5, 0.5};
  s.box = {5, 0, 0, 0, 5, 0, 0, 0, 5};
  // A comment naming the placeholders (or an unknown one) is neither filled nor an error.
  const std::string text = std::string("! deepkf fills {{cell}} and {{coord}}; {{nonsense}}\n") + kTemplate +
                           "  # {{kpoints}} after a hash too\n";
  const std::string in = Cp2kTemplate(write_template(text), kKinds, 0.5, "label in loop.json").render(s, 0);
  CHECK_THAT(in, Catch::StartsWith("! deepkf fills {{cell}} and {{coord}}; {{nonsense}}\n&FORCE_EVAL"));
  CHECK_THAT(in, Catch::EndsWith("  # {{kpoints}} after a hash too\n"));
  CHECK_THAT(in, Catch::Contains("      Si 0.5000000000 0.5000000000 0.5000000000\n    &END COORD"));
  // Only commented placeholders: the frame has nowhere to go.
  CHECK_THROWS_WITH(Cp2kTemplate(write_template("! {{cell}} {{coord}}\n&FORCES\n&STRESS_TENSOR\n"), kKinds,
                                 0.5, "label in loop.json"),
                    Catch::Contains("has no {{cell}} placeholder"));
  // The shipped template names its placeholders in its header comment.
  const Cp2kTemplate shipped(std::string(DEEPKF_SOURCE_DIR) + "/configs/learn/si_cp2k.inp", kKinds, 0.3,
                             "label in loop.json");
  const std::string filled = shipped.render(s, 0);
  CHECK(filled.find("\nA 5.0000000000") == std::string::npos);  // nothing filled into the comment
  CHECK_THAT(filled, Catch::Contains("      A 5.0000000000 0.0000000000 0.0000000000\n"));
}
