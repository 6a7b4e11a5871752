#include "src/learn/LabelStore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/core/AtomicFile.hpp"
#include "src/data/DeepmdHdf5.hpp"

namespace deepkf {
namespace {

// "Si8", "O8H16": element counts in type-map order.
std::string formula(const System& s) {
  std::string out;
  for (std::size_t t = 0; t < s.type_map.size(); ++t) {
    const auto n = std::count(s.atom_types.begin(), s.atom_types.end(), static_cast<int>(t));
    if (n > 0) out += fmt::format("{}{}", s.type_map[t], n);
  }
  return out;
}

void append_frame(System& to, const System& from) {
  to.coord.insert(to.coord.end(), from.coord.begin(), from.coord.end());
  to.box.insert(to.box.end(), from.box.begin(), from.box.end());
  to.energy.insert(to.energy.end(), from.energy.begin(), from.energy.end());
  to.force.insert(to.force.end(), from.force.begin(), from.force.end());
  to.virial.insert(to.virial.end(), from.virial.begin(), from.virial.end());
  to.nframes += from.nframes;
}

}  // namespace

std::string iteration_group(int iteration) { return fmt::format("iter.{:03d}", iteration); }

void write_label_file(const std::string& path,
                      const std::vector<std::pair<int, std::vector<LabelledFrame>>>& by_iteration) {
  std::vector<System> systems;
  std::vector<std::string> names;
  std::vector<nlohmann::json> provenance;
  for (const auto& [iteration, frames] : by_iteration) {
    const std::size_t first = systems.size();
    std::map<std::string, int> formula_uses;
    for (const auto& lf : frames) {
      // The group of frames holding the same atoms, in this iteration.
      auto it = std::find_if(systems.begin() + static_cast<std::ptrdiff_t>(first), systems.end(),
                             [&](const System& s) {
                               return s.type_map == lf.frame.type_map && s.atom_types == lf.frame.atom_types;
                             });
      if (it == systems.end()) {
        System s = lf.frame;
        s.coord.clear(), s.box.clear(), s.energy.clear(), s.force.clear(), s.virial.clear();
        s.nframes = 0;
        const std::string f = formula(s);
        const int use = ++formula_uses[f];
        names.push_back(iteration_group(iteration) + "/" + (use == 1 ? f : fmt::format("{}_{}", f, use)));
        provenance.emplace_back(nlohmann::json::array());
        systems.push_back(std::move(s));
        it = systems.end() - 1;
      }
      append_frame(*it, lf.frame);
      provenance[static_cast<std::size_t>(it - systems.begin())].push_back(lf.provenance);
    }
  }
  std::vector<std::map<std::string, std::string>> attributes;
  for (const auto& p : provenance) attributes.push_back({{"provenance", p.dump()}});
  write_atomically(
      path, [&](const std::string& tmp) { write_hdf5_systems(tmp, systems, names, 5000, attributes); });
}

}  // namespace deepkf
