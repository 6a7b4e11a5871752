// Writes a DeepPot-SE model file with random weights for trying pair_style deepkf before a trained model
// exists (its forces are physically meaningless, but smooth: dynamics run and conserve energy).
//   deepkf_example_model OUT.pt ELEMENT [ELEMENT ...] [--rcut R] [--sel N,N,...] [--reference]
// --reference uses DeePMD-kit's water example sizes (embedding 25,50,100, axis 16, fitting 240,240,240);
// the default is a small net (8,16 / 4 / 16,16).
#include <torch/torch.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.pt ELEMENT [ELEMENT ...] [--rcut R] [--sel N,N,...] [--reference]\n",
                 argv[0]);
    return 2;
  }
  try {
    deepkf::ModelConfig mc;
    mc.rcut = 6.0;
    mc.rcut_smth = 0.5;
    mc.embedding_neuron = {8, 16};
    mc.axis_neuron = 4;
    mc.fitting_neuron = {16, 16};
    std::vector<int> sel;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--rcut" && i + 1 < argc) {
        mc.rcut = std::stod(argv[++i]);
      } else if (a == "--sel" && i + 1 < argc) {
        std::stringstream ss(argv[++i]);
        for (std::string item; std::getline(ss, item, ',');) sel.push_back(std::stoi(item));
      } else if (a == "--reference") {
        mc.embedding_neuron = {25, 50, 100};
        mc.axis_neuron = 16;
        mc.fitting_neuron = {240, 240, 240};
      } else {
        mc.type_map.push_back(a);
      }
    }
    mc.sel = sel.empty() ? std::vector<int>(mc.type_map.size(), 64) : sel;
    mc.validate();
    deepkf::DeepPot model(mc);
    // Statistics of the size seen in condensed phases: s(r) ~ 1/r about 0.1-0.2 1/A.
    const auto nnei = mc.nnei();
    const auto nt = mc.ntypes();
    auto davg = torch::zeros({nt, nnei, 4}, torch::kFloat64);
    auto dstd = torch::full({nt, nnei, 4}, 0.12, torch::kFloat64);
    davg.select(2, 0).fill_(0.12);
    dstd.select(2, 0).fill_(0.2);
    model->set_statistics(davg, dstd);
    deepkf::save_model(argv[1], model, nlohmann::json{{"source", "deepkf_example_model (random weights)"}});
    std::printf("wrote %s (%lld parameters)\n", argv[1], static_cast<long long>(model->parameter_count()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepkf_example_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
