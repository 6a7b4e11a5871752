#pragma once
// Read-only access to an LMDB database (a folder holding data.mdb) through liblmdb's C API. The file is
// opened without a lock (MDB_NOLOCK): deepkf only reads, and a database on a read-only file system opens
// too. Every read runs in its own read transaction, so one LmdbFile may serve several threads.
#include <cstdint>
#include <optional>
#include <string>

struct MDB_env;

namespace deepkf {

class LmdbFile {
 public:
  // Opens the database in folder `dir`. Throws DataError naming the folder and liblmdb's reason (no
  // data.mdb, not an LMDB file, ...).
  explicit LmdbFile(const std::string& dir);
  ~LmdbFile();
  LmdbFile(const LmdbFile&) = delete;
  LmdbFile& operator=(const LmdbFile&) = delete;

  // The value stored under `key` (a copy), or nullopt when the key is absent. Throws DataError naming the
  // folder and the key when liblmdb reports an error (a damaged page).
  std::optional<std::string> get(const std::string& key) const;

  // The number of keys in the database's main table.
  std::int64_t entries() const;

  const std::string& path() const { return path_; }

 private:
  // Throws DataError when data.mdb is shorter than the pages its header names.
  void check_complete() const;

  std::string path_;
  MDB_env* env_ = nullptr;
  unsigned int dbi_ = 0;
};

}  // namespace deepkf
