#pragma once
// What the deepmd/hdf5 reader and writer share: an owned HDF5 identifier, and HDF5's own error printing
// turned off.
#include <hdf5.h>

namespace deepkf {

// Owns an HDF5 identifier and closes it with the matching H5?close.
class Hdf5Handle {
 public:
  Hdf5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Turns off HDF5's printing of its error stack (our messages name the file and object instead); once.
inline void silence_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

}  // namespace deepkf
