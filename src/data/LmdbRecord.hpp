#pragma once
// The values of DeePMD-kit's LMDB records (deepmd/dpmodel/utils/lmdb_data.py): each record is a msgpack
// map; an array in it is a map {"type": numpy dtype name, "shape": [dims], "data": raw bytes in C order},
// "shape" optional (then the data is one-dimensional). Decoded with nlohmann::json::from_msgpack.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace deepkf {

// One decoded array: its values as float64 (integers included) and its shape as stored.
struct RecordArray {
  std::vector<double> values;
  std::vector<std::int64_t> shape;
  bool integral = false;  // the dtype is an integer type
};

// The record `bytes` (stored under key `key` of database `path`) as a msgpack map. Throws DataError
// "LMDB PATH key KEY: ..." when it is not msgpack or not a map.
nlohmann::json decode_record(const std::string& bytes, const std::string& path, const std::string& key);

// The encoded array record[name]. Dtypes: float32/64, (u)int8/16/32/64 by name ("float32") or by numpy's
// array-protocol code ("<f8", ">i4", "|u1"); big-endian data is swapped. Throws DataError naming `where`
// ("LMDB PATH key KEY"), the name and the value for a missing entry, a value that is not such a map, an
// unknown dtype, a bad shape or a data length that does not match the shape.
RecordArray record_array(const nlohmann::json& record, const std::string& name, const std::string& where);

// A short text of a JSON value for messages (at most about 60 characters; binary data as its length).
std::string value_text(const nlohmann::json& value);

}  // namespace deepkf
