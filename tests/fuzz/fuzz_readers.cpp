// fuzz_readers: seeded mutation fuzzing of every reader a user's files reach (docs/reliability.md,
// "Fuzzing").
//
//   fuzz_readers [--mutants N] [--seed S] [--targets npy,hdf5,xyz,dump,input,model,checkpoint] [--work DIR]
//                [--report FILE] [--timeout SECONDS]
//
// Seeds are real files: the project's CP2K silicon and water data (data/*.h5), a DeePMD npy folder and
// extended XYZ files written from them, training inputs in deepkf's and DeePMD-kit's layout, and the model
// file and checkpoint of a short training run on them. Each mutant is read in a child process, as the
// command line would read it, and classified:
//   accepted       read without complaint (for models and checkpoints: with the same content as the seed)
//   clean error    a deepkf error (what a user sees as one "deepkf: error:" line)
//   internal error any other exception (what a user would see as "deepkf: internal error")
//   crash          the child died on a signal; hang: it ran past the timeout
//   silent         a model or checkpoint accepted with content different from the seed's
// Mutants that are neither accepted nor clean errors are kept under WORK/findings. Exit status 1 when there
// is any internal error, crash, hang or silent corruption.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/core/Error.hpp"
#include "tests/fuzz/Mutator.hpp"
#include "tests/fuzz/Readers.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using deepkf::fuzz::Mutator;

namespace {

struct Options {
  std::int64_t mutants = 500;
  std::uint64_t seed = 1;
  std::vector<std::string> targets = {"npy", "hdf5", "xyz", "dump", "input", "model", "checkpoint"};
  std::string work;
  std::string report;
  double timeout = 30.0;
};

enum class Outcome { accepted, clean, internal, crash, hang, silent };

struct Tally {
  std::int64_t mutants = 0, accepted = 0, clean = 0, internal = 0, crash = 0, hang = 0, silent = 0;
  std::int64_t unnamed = 0;  // clean errors whose line names neither the file nor its folder
  std::vector<std::string> findings;
};

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

// Runs f in a child process (limited to 4 GiB of address space, one thread, output discarded). Returns
// what the child reported on its pipe ("ok <fingerprint>", "error <line>", "internal <line>") or marks a
// crash or hang.
std::pair<Outcome, std::string> in_child(const std::function<std::string()>& f, double timeout) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    rlimit limit{4LL << 30, 4LL << 30};
    setrlimit(RLIMIT_AS, &limit);
    std::string line;
    try {
      line = "ok " + f();
    } catch (const deepkf::Error& e) {
      line = std::string("error ") + e.what();
    } catch (const std::bad_alloc&) {
      line = "internal std::bad_alloc";
    } catch (const c10::Error& e) {
      line = "internal " + deepkf::first_line(e.what_without_backtrace());
    } catch (const std::exception& e) {
      line = std::string("internal ") + e.what();
    }
    line = line.substr(0, line.find('\n'));
    if (write(fds[1], line.data(), line.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool hung = false;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  if (hung) return {Outcome::hang, fmt::format("ran past {} s", timeout)};
  if (WIFSIGNALED(status)) return {Outcome::crash, fmt::format("signal {}", WTERMSIG(status))};
  if (said.rfind("ok ", 0) == 0) return {Outcome::accepted, said.substr(3)};
  if (said.rfind("error ", 0) == 0) return {Outcome::clean, said.substr(6)};
  if (said.rfind("internal ", 0) == 0) return {Outcome::internal, said.substr(9)};
  return {Outcome::crash, fmt::format("exit status {} with no report", WEXITSTATUS(status))};
}

using Target = deepkf::fuzz::Reader;

// The mutant of one seed: a copy whose one file (any file of a folder seed) is mutated. Returns its path.
fs::path make_mutant(const Target& t, const fs::path& seed, Mutator& mutator, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path target = dir / seed.filename();
  fs::path victim = target;
  if (fs::is_directory(seed)) {
    fs::copy(seed, target, fs::copy_options::recursive);
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(target))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    victim = files[mutator.below(files.size())];
  } else {
    fs::copy_file(seed, target);
  }
  const std::string data = deepkf::test::read_text(victim.string());
  const bool text = t.kind != "bytes" || victim.extension() == ".raw";
  write_file(victim, t.kind == "json" ? mutator.json(data) : text ? mutator.text(data) : mutator.bytes(data));
  return target;
}

Tally fuzz(const Target& t, const Options& o, const fs::path& work) {
  Tally tally;
  std::map<std::string, std::string> original;  // seed -> fingerprint
  for (const auto& seed : t.seeds) {
    const auto [outcome, said] = in_child([&] { return t.read(seed); }, o.timeout);
    if (outcome != Outcome::accepted)
      throw std::runtime_error(fmt::format("seed {} of {} is not read: {}", seed, t.name, said));
    original[seed] = said;
  }
  Mutator mutator(o.seed * 1000003ULL + std::hash<std::string>()(t.name));
  const fs::path dir = work / "mutant" / t.name;
  for (std::int64_t i = 0; i < o.mutants; ++i) {
    const fs::path seed = t.seeds[mutator.below(t.seeds.size())];
    const fs::path path = make_mutant(t, seed, mutator, dir);
    auto [outcome, said] = in_child([&] { return t.read(path.string()); }, o.timeout);
    if (outcome == Outcome::accepted && t.content_checked && said != original[seed.string()])
      outcome = Outcome::silent;
    ++tally.mutants;
    std::string what;
    switch (outcome) {
      case Outcome::accepted:
        ++tally.accepted;
        break;
      case Outcome::clean:
        ++tally.clean;
        if (said.find(path.filename().string()) == std::string::npos) {
          ++tally.unnamed;
          what = "error not naming the file";
        }
        break;
      case Outcome::internal:
        ++tally.internal;
        what = "internal error";
        break;
      case Outcome::crash:
        ++tally.crash;
        what = "crash";
        break;
      case Outcome::hang:
        ++tally.hang;
        what = "hang";
        break;
      case Outcome::silent:
        ++tally.silent;
        what = "silent corruption";
        break;
    }
    if (!what.empty()) {
      const fs::path kept = work / "findings" / fmt::format("{}-{}", t.name, i);
      fs::create_directories(kept.parent_path());
      fs::remove_all(kept);
      fs::copy(dir, kept, fs::copy_options::recursive);
      tally.findings.push_back(
          fmt::format("{} mutant {} ({}): {}: {}", t.name, i, kept.string(), what, said));
    }
  }
  return tally;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mutants")
      o.mutants = std::stoll(value());
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--work")
      o.work = value();
    else if (a == "--report")
      o.report = value();
    else if (a == "--timeout")
      o.timeout = std::stod(value());
    else if (a == "--targets") {
      o.targets.clear();
      std::stringstream s(value());
      for (std::string t; std::getline(s, t, ',');) o.targets.push_back(t);
    } else {
      throw std::runtime_error("unknown option " + a);
    }
  }
  if (o.work.empty()) o.work = (fs::temp_directory_path() / fmt::format("deepkf-fuzz-{}", getpid())).string();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const fs::path work = fs::absolute(o.work);
    fs::create_directories(work);
    // Seeds come from a child too: the parent never starts LibTorch's threads, so forking stays safe.
    const fs::path seeds = work / "seeds";
    const auto [made, why] = in_child(
        [&] {
          deepkf::fuzz::write_seeds(DEEPKF_SOURCE_DIR, seeds.string());
          return std::string();
        },
        600.0);
    if (made != Outcome::accepted) throw std::runtime_error("writing the seed files failed: " + why);

    std::vector<Target> all = deepkf::fuzz::readers(seeds.string());
    std::string table =
        "| reader | mutants | accepted | clean errors | (not naming the file) | internal errors | crashes | "
        "hangs | silent corruption |\n|---|---|---|---|---|---|---|---|---|\n";
    std::vector<std::string> findings;
    bool failed = false;
    for (const auto& name : o.targets) {
      const auto it = std::find_if(all.begin(), all.end(), [&](const Target& t) { return t.name == name; });
      if (it == all.end()) throw std::runtime_error("unknown target " + name);
      const auto start = std::chrono::steady_clock::now();
      const Tally t = fuzz(*it, o, work);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "%s: %lld mutants in %.0f s\n", name.c_str(), static_cast<long long>(t.mutants),
                   s);
      table += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", name, t.mutants, t.accepted,
                           t.clean, t.unnamed, t.internal, t.crash, t.hang, t.silent);
      findings.insert(findings.end(), t.findings.begin(), t.findings.end());
      failed = failed || t.internal + t.crash + t.hang + t.silent > 0;
    }
    std::string report = fmt::format("fuzz_readers --mutants {} --seed {}\n\n{}", o.mutants, o.seed, table);
    for (const auto& f : findings) report += "\n- " + f;
    std::cout << report << std::endl;
    if (!o.report.empty()) write_file(o.report, report + "\n");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_readers: %s\n", e.what());
    return 2;
  }
}
