#include "src/core/FolderLock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

std::string holder_of(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder.empty() ? "another process" : holder;
}

}  // namespace

FolderLock::FolderLock(const std::string& folder, const std::string& what) {
  const std::string path = folder + "/.deepkf.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      const std::string holder = holder_of(fd_);
      ::close(fd_);
      fd_ = -1;
      throw ConfigError("output folder " + folder + " is in use by " + holder + "; give " + what +
                        " another folder, or wait until that run ends");
    }
    return;  // ENOLCK, EOPNOTSUPP...: a file system without locks; go on unlocked
  }
  char host[128] = {};
  ::gethostname(host, sizeof host - 1);
  char started[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S UTC", &utc);
  const std::string holder =
      "deepkf (process " + std::to_string(::getpid()) + " on " + host + ", started " + started + ")\n";
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, holder.data(), holder.size(), 0);
    (void)written;  // the holder's name is for the message only
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace deepkf
