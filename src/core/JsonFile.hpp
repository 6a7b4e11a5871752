#pragma once
// Reading a JSON file (comments allowed, as DeePMD-kit's inputs have them) with one error line naming it.
#include <nlohmann/json.hpp>
#include <string>

namespace deepkf {

// Parses `path`. Throws ConfigError "cannot open <what><path>" or "<what><path> is not valid JSON: ..." (a
// syntax error, or a number out of double's range such as 1e309); `what` is e.g. "input file ".
nlohmann::json read_json_file(const std::string& path, const std::string& what = "");

}  // namespace deepkf
