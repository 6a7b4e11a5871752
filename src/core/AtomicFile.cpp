#include "src/core/AtomicFile.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "src/core/Error.hpp"

namespace deepkf {
namespace fs = std::filesystem;

namespace {

// fsync a file or directory so that the rename below is durable.
void sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return;  // best effort: some file systems refuse to open directories
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw Error("cannot write " + path + ": directory " + dir.string() + " does not exist");
  std::random_device rd;
  tmp_ = (dir / ("." + target.filename().string() + ".tmp-" + std::to_string(rd()))).string();
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove(tmp_, ignored);
}

void AtomicFile::commit() {
  if (!fs::exists(tmp_)) throw Error("cannot write " + path_ + ": nothing was written");
  sync_path(tmp_, false);
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) throw Error("cannot write " + path_ + ": " + ec.message());
  committed_ = true;
  const fs::path target(path_);
  sync_path(target.has_parent_path() ? target.parent_path().string() : ".", true);
}

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& tmp_path)>& write) {
  AtomicFile file(path);
  write(file.tmp_path());
  file.commit();
}

void write_text_atomically(const std::string& path, const std::string& content) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    out.close();
    if (!out) throw Error("cannot write " + path + ": " + std::strerror(errno));
  });
}

std::vector<std::string> remove_unfinished_files(const std::string& folder) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const auto mark = name.rfind(".tmp-");
    // ".NAME.tmp-DIGITS", as the constructor above names them.
    if (name.size() < 2 || name[0] != '.' || mark == std::string::npos || mark == 0 ||
        name.find_first_not_of("0123456789", mark + 5) != std::string::npos || mark + 5 == name.size() ||
        !entry.is_regular_file(ec)) {
      continue;
    }
    if (fs::remove(entry.path(), ec)) removed.push_back(name);
  }
  return removed;
}

}  // namespace deepkf
