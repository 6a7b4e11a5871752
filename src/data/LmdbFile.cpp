#include "src/data/LmdbFile.hpp"

#include <fmt/format.h>
#include <lmdb.h>

#include <filesystem>

#include "src/core/Error.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

// A read-only transaction, aborted when it goes out of scope (a reader commits nothing).
class ReadTxn {
 public:
  ReadTxn(MDB_env* env, const std::string& path) {
    const int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_);
    if (rc != 0) throw DataError(fmt::format("LMDB {}: cannot start a read: {}", path, mdb_strerror(rc)));
  }
  ~ReadTxn() { mdb_txn_abort(txn_); }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  MDB_txn* get() const { return txn_; }

 private:
  MDB_txn* txn_ = nullptr;
};

}  // namespace

LmdbFile::LmdbFile(const std::string& dir) : path_(dir) {
  int rc = mdb_env_create(&env_);
  if (rc != 0) throw DataError(fmt::format("LMDB {}: {}", dir, mdb_strerror(rc)));
  // MDB_NOTLS: transactions are not tied to threads; MDB_NORDAHEAD: frames are read at random.
  rc = mdb_env_open(env_, dir.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS | MDB_NORDAHEAD, 0644);
  if (rc != 0) {
    mdb_env_close(env_);
    throw DataError(fmt::format("{} cannot be opened as an LMDB database (a folder holding data.mdb): {}",
                                dir, mdb_strerror(rc)));
  }
  try {
    check_complete();
    ReadTxn txn(env_, path_);
    MDB_dbi dbi = 0;
    rc = mdb_dbi_open(txn.get(), nullptr, 0, &dbi);
    if (rc != 0) throw DataError(fmt::format("LMDB {}: cannot open its table: {}", dir, mdb_strerror(rc)));
    dbi_ = dbi;
  } catch (...) {
    mdb_env_close(env_);
    throw;
  }
}

LmdbFile::~LmdbFile() { mdb_env_close(env_); }

void LmdbFile::check_complete() const {
  // liblmdb maps the file and trusts its header: a page past the end of a truncated file (an interrupted
  // copy) would be a bus error when read, so the file must reach the last page the header names.
  MDB_envinfo info{};
  MDB_stat stat{};
  if (mdb_env_info(env_, &info) != 0 || mdb_env_stat(env_, &stat) != 0)
    throw DataError(fmt::format("LMDB {}: cannot read its header", path_));
  const auto need = static_cast<std::uintmax_t>(info.me_last_pgno + 1) * stat.ms_psize;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(fs::path(path_) / "data.mdb", ec);
  if (ec || size < need)
    throw DataError(
        fmt::format("LMDB {}: data.mdb is truncated: {} bytes, its header names pages up to byte {}", path_,
                    ec ? 0 : size, need));
}

std::optional<std::string> LmdbFile::get(const std::string& key) const {
  ReadTxn txn(env_, path_);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{0, nullptr};
  const int rc = mdb_get(txn.get(), dbi_, &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  if (rc != 0)
    throw DataError(fmt::format("LMDB {} key {}: cannot be read: {}", path_, key, mdb_strerror(rc)));
  return std::string(static_cast<const char*>(v.mv_data), v.mv_size);
}

std::int64_t LmdbFile::entries() const {
  ReadTxn txn(env_, path_);
  MDB_stat stat{};
  const int rc = mdb_stat(txn.get(), dbi_, &stat);
  if (rc != 0) throw DataError(fmt::format("LMDB {}: cannot count its keys: {}", path_, mdb_strerror(rc)));
  return static_cast<std::int64_t>(stat.ms_entries);
}

}  // namespace deepkf
