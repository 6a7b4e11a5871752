// What reading frames per batch costs. The trainer reads each rank's share of every batch from the files
// (src/data/FrameSource.hpp); this measures, in one run, the time to read k random frames of the water
// dataset (192 atoms, float64 npy) from its npy folder, from the same frames converted to deepmd/hdf5, and
// from memory, against make_batch on the same frames (the neighbour list every batch builds anyway).
//
//   bench_frame_read DATASETS [READS]    (DATASETS: ../shared/datasets; READS per case, default 400)
#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelConfig.hpp"

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: bench_frame_read DATASETS [READS]\n");
    return 2;
  }
  const std::string system = std::string(argv[1]) + "/water/data_0";
  const int reads = argc > 2 ? std::stoi(argv[2]) : 400;
  torch::set_num_threads(1);

  const auto npy = deepkf::open_systems(system).at(0);
  const deepkf::System all = npy->read_all();
  const std::string h5 = (fs::temp_directory_path() / "deepkf-bench-frame-read.h5").string();
  deepkf::write_hdf5_systems(h5, {all}, {"water"});
  const auto hdf5 = deepkf::open_systems(h5).at(0);
  const deepkf::MemoryFrameSource memory(all);

  deepkf::ModelConfig mc;
  mc.type_map = {"O", "H"};
  mc.rcut = 6.0;
  mc.rcut_smth = 0.5;
  mc.sel = {46, 92};

  fmt::print("water/data_0: {} frames of {} atoms, {:.1f} KiB of labels per frame; {} reads per case\n",
             all.nframes, all.natoms, static_cast<double>(all.natoms * 6 + 19) * 8 / 1024, reads);
  fmt::print("{:>6}  {:>12}  {:>12}  {:>12}  {:>14}  {:>10}  {:>10}\n", "frames", "npy us/fr", "hdf5 us/fr",
             "memory us/fr", "make_batch us/fr", "npy/batch", "hdf5/batch");
  for (const int k : {1, 4, 16}) {
    std::mt19937_64 rng(7);
    std::vector<std::vector<std::int64_t>> draws(static_cast<std::size_t>(reads));
    for (auto& d : draws)
      for (int i = 0; i < k; ++i)
        d.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(all.nframes)));
    auto time_reads = [&](const deepkf::FrameSource& source) {
      const auto t0 = std::chrono::steady_clock::now();
      std::int64_t n = 0;
      for (const auto& d : draws) n += source.read(d).nframes;
      return seconds_since(t0) / static_cast<double>(n) * 1e6;
    };
    time_reads(*npy);  // warm the page cache and the allocator
    const double t_npy = time_reads(*npy);
    const double t_h5 = time_reads(*hdf5);
    const double t_mem = time_reads(memory);
    std::vector<std::int64_t> frames(static_cast<std::size_t>(k));
    const auto t0 = std::chrono::steady_clock::now();
    const int batches = std::max(1, reads / 4);
    for (int b = 0; b < batches; ++b) {
      std::iota(frames.begin(), frames.end(), static_cast<std::int64_t>(b * k) % (all.nframes - k));
      const auto batch = deepkf::make_batch(all, frames, mc, torch::kCPU, torch::kFloat64);
      (void)batch;
    }
    const double t_batch = seconds_since(t0) / static_cast<double>(batches * k) * 1e6;
    fmt::print("{:>6}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {:>14.1f}  {:>10.3f}  {:>10.3f}\n", k, t_npy, t_h5,
               t_mem, t_batch, t_npy / t_batch, t_h5 / t_batch);
  }
  fs::remove(h5);
  return 0;
}
