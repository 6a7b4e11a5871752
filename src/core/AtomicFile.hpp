#pragma once
// Atomic file output: write to a temporary file in the destination's directory, flush it to disk, then
// rename it over the destination. A reader (or a run killed half-way) sees the old file or the new one,
// never a torn one.
#include <functional>
#include <string>

namespace deepkf {

// Calls write(tmp_path) to produce the content, then moves it to `path`. On any error the temporary file
// is removed and the destination is untouched; the error is rethrown (as deepkf::Error for I/O failures).
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp_path)>& write);

// write_atomically for a text or binary string.
void write_text_atomically(const std::string& path, const std::string& content);

}  // namespace deepkf
