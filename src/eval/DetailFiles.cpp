#include "src/eval/DetailFiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "src/core/AtomicFile.hpp"

namespace deepkf {

namespace {

constexpr const char* kEnergyColumns = "data_e pred_e";
constexpr const char* kForceColumns = "data_fx data_fy data_fz pred_fx pred_fy pred_fz";
constexpr const char* kVirialColumns =
    "data_vxx data_vxy data_vxz data_vyx data_vyy data_vyz data_vzx data_vzy data_vzz "
    "pred_vxx pred_vxy pred_vxz pred_vyx pred_vyy pred_vyz pred_vzx pred_vzy pred_vzz";

// One row as numpy's savetxt writes it by default.
void append_row(std::string& out, const std::vector<double>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    fmt::format_to(std::back_inserter(out), i ? " {:.18e}" : "{:.18e}", values[i]);
  out += '\n';
}

// Atom indices sorted by type, stable within a type.
std::vector<std::int64_t> type_order(const std::vector<int>& types) {
  std::vector<std::int64_t> order(types.size());
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return types[static_cast<std::size_t>(a)] < types[static_cast<std::size_t>(b)];
  });
  return order;
}

struct DetailText {
  std::string energy, energy_per_atom, force, virial, virial_per_atom;
};

}  // namespace

std::vector<std::string> write_detail_files(const LabelledErrors& result, const std::string& prefix) {
  DetailText text;
  std::size_t next = 0;  // result.frames holds the systems' frames one system after the other
  for (const auto& sys : result.systems) {
    const auto order = type_order(sys.atom_types);
    const auto first = result.frames.begin() + static_cast<std::ptrdiff_t>(next);
    const auto last = first + static_cast<std::ptrdiff_t>(sys.frames);
    next += static_cast<std::size_t>(sys.frames);
    const bool forces = std::any_of(first, last, [](const FrameResult& f) { return f.force_begin >= 0; });
    const bool virials = std::any_of(first, last, [](const FrameResult& f) { return !f.v_ref.empty(); });
    text.energy += fmt::format("# {}: {}\n", sys.source, kEnergyColumns);
    text.energy_per_atom += fmt::format("# {}: {}\n", sys.source, kEnergyColumns);
    if (forces) text.force += fmt::format("# {}: {}\n", sys.source, kForceColumns);
    if (virials) {
      text.virial += fmt::format("# {}: {}\n", sys.source, kVirialColumns);
      text.virial_per_atom += fmt::format("# {}: {}\n", sys.source, kVirialColumns);
    }
    for (auto f = first; f != last; ++f) {
      const double n = static_cast<double>(f->natoms);
      append_row(text.energy, {f->e_ref, f->e_pred});
      append_row(text.energy_per_atom, {f->e_ref / n, f->e_pred / n});
      if (f->force_begin >= 0) {
        for (const auto atom : order) {
          const auto at = static_cast<std::size_t>(f->force_begin + 3 * atom);
          append_row(text.force, {result.f_ref[at], result.f_ref[at + 1], result.f_ref[at + 2],
                                  result.f_pred[at], result.f_pred[at + 1], result.f_pred[at + 2]});
        }
      }
      if (!f->v_ref.empty()) {
        std::vector<double> row(f->v_ref);
        row.insert(row.end(), f->v_pred.begin(), f->v_pred.end());
        append_row(text.virial, row);
        for (auto& v : row) v /= n;
        append_row(text.virial_per_atom, row);
      }
    }
  }

  std::vector<std::string> written;
  const auto write = [&](const char* suffix, const std::string& content) {
    if (content.empty()) return;
    const std::string path = std::filesystem::path(prefix).replace_extension(suffix).string();
    write_text_atomically(path, content);
    written.push_back(path);
  };
  write(".e.out", text.energy);
  write(".e_peratom.out", text.energy_per_atom);
  write(".f.out", text.force);
  write(".v.out", text.virial);
  write(".v_peratom.out", text.virial_per_atom);
  return written;
}

}  // namespace deepkf
