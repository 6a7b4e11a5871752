#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;

TEST_CASE("atomic writes replace the file whole or not at all", "[core][io]") {
  const std::string dir = deepkf::test::make_temp_dir("atomic");
  const std::string path = dir + "/out.txt";
  deepkf::write_text_atomically(path, "first\n");
  CHECK(deepkf::test::read_text(path) == "first\n");
  deepkf::write_text_atomically(path, "second\n");
  CHECK(deepkf::test::read_text(path) == "second\n");

  // A writer that fails half-way leaves the old content and no temporary file behind.
  CHECK_THROWS_WITH(deepkf::write_atomically(path,
                                             [](const std::string& tmp) {
                                               std::ofstream(tmp) << "partial";
                                               throw deepkf::Error("disk full");
                                             }),
                    "disk full");
  CHECK(deepkf::test::read_text(path) == "second\n");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);

  CHECK_THROWS_WITH(deepkf::write_text_atomically(dir + "/missing/out.txt", "x"),
                    Catch::Matchers::Contains("does not exist"));
}
