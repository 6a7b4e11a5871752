#pragma once
// An exclusive lock on an output folder, so that two runs never write into one folder at once (their logs
// and checkpoints would interleave). An advisory lock (flock) on FOLDER/.deepkf.lock, which names its holder
// (process id, host, start time); the kernel releases it when the holder exits, even by kill -9, so a
// killed run never leaves the folder locked. Where the file system has no locks, the folder is used
// unlocked.
#include <string>

namespace deepkf {

class FolderLock {
 public:
  // Throws ConfigError naming the holder when another process holds the lock of `folder` (which must
  // exist), or Error when the lock file cannot be created.
  FolderLock(const std::string& folder, const std::string& what);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace deepkf
