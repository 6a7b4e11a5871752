// The compiled part of the Python package deepkf (python/deepkf): a model file as a potential, the model
// deviation of DeePMD-kit's definitions, and the Kalman uncertainty of a checkpoint. Arrays cross as
// float64 NumPy arrays of fixed shapes; python/deepkf/infer.py checks and reshapes what users pass.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/cuda.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "python/src/KalmanSigma.hpp"
#include "src/core/Error.hpp"
#include "src/eval/Potential.hpp"
#include "src/model/CpuMemoryCache.hpp"
#include "src/model/ModelDeviation.hpp"

namespace py = pybind11;
using deepkf::Potential;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<int, py::array::c_style | py::array::forcecast>;

std::vector<double> values(const Array& a) { return {a.data(), a.data() + a.size()}; }

Array to_array(const std::vector<double>& v, std::vector<py::ssize_t> shape) {
  Array a(shape);
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

// coord [nf, na*3], box [nf, 9] or None, atype [na]: shapes checked by infer.py.
deepkf::PotentialFrames frames_of(const Array& coord, const py::object& box, const IntArray& atype) {
  deepkf::PotentialFrames f;
  f.nframes = coord.shape(0);
  f.natoms = atype.size();
  f.coord = values(coord);
  if (!box.is_none()) f.box = values(box.cast<Array>());
  f.atom_types.assign(atype.data(), atype.data() + atype.size());
  return f;
}

py::tuple evaluate(const Potential& pot, const Array& coord, const py::object& box, const IntArray& atype,
                   bool atomic) {
  const auto frames = frames_of(coord, box, atype);
  deepkf::PotentialResult r;
  {
    py::gil_scoped_release release;
    r = pot.evaluate(frames, {atomic});
  }
  const py::ssize_t nf = frames.nframes, na = frames.natoms;
  auto e = to_array(r.energy, {nf, 1}), f = to_array(r.force, {nf, na, 3}), v = to_array(r.virial, {nf, 9});
  if (!atomic) return py::make_tuple(e, f, v);
  return py::make_tuple(e, f, v, to_array(r.atom_energy, {nf, na, 1}), to_array(r.atom_virial, {nf, na, 9}));
}

// forces [nmodels, natoms, 3] of one frame -> per-atom deviations (natoms).
Array force_deviation(const Array& forces, double relative, const py::object& reference) {
  const auto nm = static_cast<std::size_t>(forces.shape(0)), na = static_cast<std::size_t>(forces.shape(1));
  std::vector<double> atom_major(na * nm * 3);  // natoms x nmodels x 3
  for (std::size_t k = 0; k < nm; ++k)
    for (std::size_t i = 0; i < na; ++i)
      for (std::size_t c = 0; c < 3; ++c)
        atom_major[(i * nm + k) * 3 + c] = forces.data()[(k * na + i) * 3 + c];
  std::vector<double> ref;
  if (!reference.is_none()) ref = values(reference.cast<Array>());
  const auto d =
      deepkf::force_deviation(atom_major.data(), na, nm, relative, ref.empty() ? nullptr : ref.data());
  return to_array(d, {static_cast<py::ssize_t>(na)});
}

// virials [nmodels, 9] of one frame -> the 9 component deviations (eV/atom).
Array virial_deviation(const Array& virials, double natoms, double relative, const py::object& reference) {
  std::vector<double> ref;
  if (!reference.is_none()) ref = values(reference.cast<Array>());
  const auto d = deepkf::virial_deviation(virials.data(), static_cast<std::size_t>(virials.shape(0)), natoms,
                                          relative, ref.empty() ? nullptr : ref.data());
  return to_array({d.begin(), d.end()}, {9});
}

// The row of model_devi.out (without step) from per-atom force deviations and the 9 virial deviations.
py::tuple deviation_row(const Array& atom_devi, const Array& virial_devi) {
  deepkf::DeviationExtremes extremes;
  extremes.add(values(atom_devi));
  std::array<double, 9> v{};
  std::copy(virial_devi.data(), virial_devi.data() + 9, v.begin());
  const auto r = deepkf::deviation_row(extremes, v);
  return py::make_tuple(r.max_devi_v, r.min_devi_v, r.avg_devi_v, r.max_devi_f, r.min_devi_f, r.avg_devi_f);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "deepkf's compiled core: model files as potentials, model deviation, Kalman uncertainty";
  deepkf::use_cpu_memory_cache();  // freed tensor memory kept for reuse (src/model/CpuMemoryCache.hpp)
  // deepkf's errors: each a one-line message; the data and settings errors are ValueErrors.
  auto base = py::register_exception<deepkf::Error>(m, "DeepkfError", PyExc_RuntimeError);
  py::register_exception<deepkf::DataError>(m, "DataError", PyExc_ValueError);
  py::register_exception<deepkf::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::register_exception<deepkf::ModelError>(m, "ModelError", base.ptr());

  py::class_<Potential>(m, "Potential")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"), py::arg("device") = "cpu")
      .def("evaluate", &evaluate, py::arg("coord"), py::arg("box"), py::arg("atype"),
           py::arg("atomic") = false)
      .def_property_readonly("type_map", [](const Potential& p) { return p.config().type_map; })
      .def_property_readonly("rcut", [](const Potential& p) { return p.config().rcut; })
      .def_property_readonly("sel", [](const Potential& p) { return p.config().sel; })
      .def_property_readonly("precision", [](const Potential& p) { return p.config().precision_name(); })
      .def_property_readonly("compressed", [](const Potential& p) { return p.loaded().model->compressed(); })
      .def_property_readonly("path", &Potential::path);

  m.def("cuda_available", [] { return torch::cuda::is_available(); });
  m.def("force_deviation", &force_deviation, py::arg("forces"), py::arg("relative") = -1.0,
        py::arg("reference") = py::none());
  m.def("virial_deviation", &virial_deviation, py::arg("virials"), py::arg("natoms"),
        py::arg("relative") = -1.0, py::arg("reference") = py::none());
  m.def("deviation_row", &deviation_row, py::arg("atom_devi"), py::arg("virial_devi"));

  py::class_<deepkf::python::KalmanSigma>(m, "KalmanSigma")
      .def(py::init<const std::string&>(), py::arg("checkpoint"))
      .def(
          "evaluate",
          [](const deepkf::python::KalmanSigma& k, const Array& coord, const py::object& box,
             const IntArray& atype, std::int64_t force_atoms, std::uint64_t seed) {
            const auto frames = frames_of(coord, box, atype);
            deepkf::python::FrameSigmas s;
            {
              py::gil_scoped_release release;
              s = k.evaluate(frames, force_atoms, seed);
            }
            const py::ssize_t nf = frames.nframes;
            py::dict d;
            d["sigma_e"] = to_array(s.sigma_e, {nf});
            d["sigma_f_max"] = to_array(s.sigma_f_max, {nf});
            d["sigma_f_mean"] = to_array(s.sigma_f_mean, {nf});
            d["sigma_f_rms"] = to_array(s.sigma_f_rms, {nf});
            return d;
          },
          py::arg("coord"), py::arg("box"), py::arg("atype"), py::arg("force_atoms") = 8, py::arg("seed") = 1)
      .def_property_readonly("calibrated", &deepkf::python::KalmanSigma::calibrated)
      .def_property_readonly("type_map", &deepkf::python::KalmanSigma::type_map);
}
