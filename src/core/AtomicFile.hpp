#pragma once
// Atomic file output: write to a temporary file in the destination's directory, flush it to disk, then
// rename it over the destination. A reader (or a run killed half-way) sees the old file or the new one,
// never a torn one.
#include <functional>
#include <string>
#include <vector>

namespace deepkf {

// A temporary file next to `path` (same directory, so the rename is atomic) that commit() moves over
// `path` after syncing it to disk; if commit() is never reached the temporary file is removed. For output
// written in stages (a checkpoint streamed block by block); write_atomically covers the one-call case.
class AtomicFile {
 public:
  // Throws Error when the directory of `path` does not exist.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& tmp_path() const { return tmp_; }
  // fsync the temporary file, rename it over the destination, fsync the directory. Throws Error (the
  // destination is then untouched).
  void commit();

 private:
  std::string path_;
  std::string tmp_;
  bool committed_ = false;
};

// Calls write(tmp_path) to produce the content, then moves it to `path`. On any error the temporary file
// is removed and the destination is untouched; the error is rethrown (as deepkf::Error for I/O failures).
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp_path)>& write);

// write_atomically for a text or binary string.
void write_text_atomically(const std::string& path, const std::string& content);

// Removes the temporary files that AtomicFile leaves in `folder` when its process is killed before commit()
// (".NAME.tmp-N"), and returns their names. Only for a folder no other process is writing into (one held by
// a FolderLock).
std::vector<std::string> remove_unfinished_files(const std::string& folder);

}  // namespace deepkf
