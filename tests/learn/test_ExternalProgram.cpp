// Running external programs: status, output tail, time limit, PATH lookup, and no child left behind when
// the process that started it is killed with SIGKILL.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/core/Error.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/ParallelJobs.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
namespace fs = std::filesystem;

namespace {

std::string sh() { return find_program("sh", "/", "test.sh", "test"); }

// A process that is alive and not a zombie.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string pid_field, name, state;
  stat >> pid_field >> name >> state;
  return state != "Z" && state != "X";
}

}  // namespace

TEST_CASE("a program's status, output and environment", "[learn][program]") {
  const auto dir = test::make_temp_dir("program");
  ProgramRun run;
  run.argv = {sh(), "-c", "echo line one; echo \"value $DEEPKF_TEST_VALUE\"; pwd; echo oops >&2; exit 3"};
  run.cwd = dir;
  run.output = "out.txt";
  run.env = {{"DEEPKF_TEST_VALUE", "42"}};
  const ProgramResult r = run_program(run);
  CHECK(r.status == 3);
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.timed_out);
  const std::string out = file_tail(dir + "/out.txt");
  CHECK(out == "line one\nvalue 42\n" + fs::canonical(dir).string() + "\noops\n");
  const std::string why = failure_text(run, r);
  CHECK_THAT(why, Catch::Contains("sh exited with status 3 in " + dir));
  CHECK_THAT(why, Catch::Contains("last lines of " + dir + "/out.txt:\nline one"));
  CHECK_THAT(why, Catch::Contains("'echo line one;"));  // the command line, quoted as a shell takes it

  run.argv = {sh(), "-c", "exit 0"};
  CHECK(run_program(run).ok());
  CHECK(file_tail(dir + "/out.txt").empty());  // the output file starts empty each run
}

TEST_CASE("a program past its time limit is stopped, with its children", "[learn][program]") {
  const auto dir = test::make_temp_dir("program-timeout");
  ProgramRun run;
  // The shell's child (sleep) is in the same process group, which the limit stops as a whole.
  run.argv = {sh(), "-c", "sleep 30 & echo $! > child.pid; wait"};
  run.cwd = dir;
  run.output = "out.txt";
  run.timeout_s = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult r = run_program(run);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.timed_out);
  CHECK_FALSE(r.ok());
  CHECK(took < 10.0);
  CHECK_THAT(failure_text(run, r), Catch::Contains("ran past its 0.5 s limit"));
  std::ifstream pid_file(dir + "/child.pid");
  pid_t child = 0;
  pid_file >> child;
  REQUIRE(child > 0);
  for (int i = 0; i < 50 && running(child); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(running(child));
}

TEST_CASE("a child dies with the process that started it, even by SIGKILL", "[learn][program]") {
  const auto dir = test::make_temp_dir("program-orphan");
  const std::string shell = sh();
  const pid_t starter = fork();
  REQUIRE(starter >= 0);
  if (starter == 0) {
    ProgramRun run;
    run.argv = {shell, "-c", "echo $$ > child.pid; exec sleep 60"};
    run.cwd = dir;
    run.output = "out.txt";
    run_program(run);
    _exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(dir + "/child.pid");
    in >> child;
  }
  REQUIRE(child > 0);
  REQUIRE(running(child));
  kill(starter, SIGKILL);
  waitpid(starter, nullptr, 0);
  for (int i = 0; i < 50 && running(child); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(running(child));
}

TEST_CASE("programs are found from a path or PATH, or named in the error", "[learn][program]") {
  CHECK(find_program("sh", "/", "label.cp2k", "loop.json").front() == '/');
  CHECK(find_program("/bin/sh", "/", "label.cp2k", "loop.json") == "/bin/sh");
  CHECK_THROWS_WITH(find_program("no-such-cp2k", "/", "label.cp2k", "loop.json"),
                    Catch::StartsWith("'label.cp2k' in loop.json is \"no-such-cp2k\": not found in PATH ("));
  CHECK_THROWS_WITH(
      find_program("bin/no-such-lmp", "/opt", "explore.lmp", "loop.json"),
      "'explore.lmp' in loop.json is \"bin/no-such-lmp\": /opt/bin/no-such-lmp is not an executable file");
  CHECK_THROWS_AS(find_program("", "/", "explore.lmp", "loop.json"), ConfigError);
}

TEST_CASE("parallel jobs all run, a few at a time, and the first failure is rethrown", "[learn][program]") {
  std::vector<int> done(20, 0);
  std::atomic<int> now{0}, most{0};
  run_parallel(done.size(), 3, [&](std::size_t i) {
    const int n = ++now;
    int seen = most.load();
    while (n > seen && !most.compare_exchange_weak(seen, n)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++done[i];
    --now;
  });
  for (int d : done) CHECK(d == 1);
  CHECK(most.load() <= 3);
  std::vector<int> ran(6, 0);
  CHECK_THROWS_WITH(run_parallel(ran.size(), 2,
                                 [&](std::size_t i) {
                                   ++ran[i];
                                   if (i == 2 || i == 4) throw Error("job " + std::to_string(i));
                                 }),
                    "job 2");
  for (int r : ran) CHECK(r == 1);  // the other jobs still ran
}
