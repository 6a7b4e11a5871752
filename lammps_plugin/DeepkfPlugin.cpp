// Entry point of the plugin: `plugin load libdeepkf_lammps.so` registers pair_style deepkf.
#include "lammps_plugin/PairDeepkf.hpp"
#include "lammpsplugin.h"
#include "version.h"

namespace {

LAMMPS_NS::Pair* create_pair_deepkf(LAMMPS_NS::LAMMPS* lmp) { return new LAMMPS_NS::PairDeepkf(lmp); }

}  // namespace

extern "C" void lammpsplugin_init(void* lmp, void* handle, void* regfunc) {
  lammpsplugin_t plugin;
  auto register_plugin = reinterpret_cast<lammpsplugin_regfunc>(regfunc);
  plugin.version = LAMMPS_VERSION;
  plugin.style = "pair";
  plugin.name = "deepkf";
  plugin.info = "deepkf DeepPot-SE pair style (LibTorch)";
  plugin.author = "deepkf developers";
  plugin.creator.v1 = reinterpret_cast<lammpsplugin_factory1*>(&create_pair_deepkf);
  plugin.handle = handle;
  (*register_plugin)(&plugin, lmp);
}
