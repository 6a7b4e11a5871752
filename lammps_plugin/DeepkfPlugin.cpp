// Entry point of the plugin: `plugin load libdeepkf_lammps.so` registers pair_style deepkf, and the same
// style under DeePMD-kit's name, deepmd, unless this LAMMPS already has a pair style of that name (DeePMD-kit
// built in or loaded first keeps it; a DeePMD-kit plugin loaded later replaces ours).
#include "force.h"
#include "lammps.h"
#include "lammps_plugin/PairDeepkf.hpp"
#include "lammpsplugin.h"
#include "version.h"

namespace {

LAMMPS_NS::Pair* create_pair_deepkf(LAMMPS_NS::LAMMPS* lmp) {
  return new LAMMPS_NS::PairDeepkf(lmp, "deepkf");
}
LAMMPS_NS::Pair* create_pair_deepmd(LAMMPS_NS::LAMMPS* lmp) {
  return new LAMMPS_NS::PairDeepkf(lmp, "deepmd");
}

void register_style(const char* name, const char* info, lammpsplugin_factory1* creator, void* lmp,
                    void* handle, lammpsplugin_regfunc register_plugin) {
  lammpsplugin_t plugin;
  plugin.version = LAMMPS_VERSION;
  plugin.style = "pair";
  plugin.name = name;
  plugin.info = info;
  plugin.author = "deepkf developers";
  plugin.creator.v1 = creator;
  plugin.handle = handle;
  (*register_plugin)(&plugin, lmp);
}

}  // namespace

extern "C" void lammpsplugin_init(void* lmp, void* handle, void* regfunc) {
  auto register_plugin = reinterpret_cast<lammpsplugin_regfunc>(regfunc);
  register_style("deepkf", "deepkf DeepPot-SE pair style (LibTorch)",
                 reinterpret_cast<lammpsplugin_factory1*>(&create_pair_deepkf), lmp, handle, register_plugin);
  const auto* lammps = static_cast<LAMMPS_NS::LAMMPS*>(lmp);
  if (lammps->force->pair_map->count("deepmd") > 0) return;
  register_style("deepmd", "deepkf DeepPot-SE pair style under DeePMD-kit's name (deepkf model files)",
                 reinterpret_cast<lammpsplugin_factory1*>(&create_pair_deepmd), lmp, handle, register_plugin);
}
