#include "src/data/FrameInputs.hpp"

#include <memory>

#include "src/data/DataFormat.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/LammpsDump.hpp"

namespace deepkf {

FrameInputs open_frames(const std::vector<std::string>& paths, const std::vector<std::string>& dump_types,
                        const std::vector<std::string>& model_types, const std::string& model_origin) {
  FrameInputs out;
  for (const auto& path : paths) {
    const DataFormat format = data_format(path);
    if (format != DataFormat::kLammpsDump) {
      for (auto& source : open_dataset({path}, {format}, model_types, model_origin).systems) {
        out.sets.push_back({source, {}});
        out.timesteps.emplace_back();
      }
      continue;
    }
    LammpsDump dump = read_lammps_dump(path, dump_types);
    for (std::size_t k = 0; k < dump.systems.size(); ++k) {
      remap_types(dump.systems[k], model_types);
      out.sets.push_back({std::make_shared<MemoryFrameSource>(std::move(dump.systems[k])), {}});
      out.timesteps.push_back(std::move(dump.timesteps[k]));
    }
  }
  for (auto& s : out.sets) {
    s.frames.resize(static_cast<std::size_t>(s.source->nframes()));
    for (std::size_t f = 0; f < s.frames.size(); ++f) s.frames[f] = static_cast<std::int64_t>(f);
  }
  return out;
}

}  // namespace deepkf
