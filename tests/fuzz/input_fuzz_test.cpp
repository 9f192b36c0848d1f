// The input files splitsim reads besides scenarios, fuzzed through the CLI
// as a user meets them: a corpus (tests/fuzz/corpus/) mutated with a fixed
// seed per surface, each mutation one run under a time and an address-space
// limit. Every run must end in exit 0 or exit 2; never a signal, a hang, exit
// 1 (a file is the user's input), a library's raw text or a control
// character; and an exit 2 names the file it refuses. (Scenarios are fuzzed
// in tests/costmodel/scenario_fuzz_test.cpp and tests/cli/hardening_cli_test.cpp,
// TorchScript archives in tests/costmodel/torchscript_untrusted_test.cpp.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace splitsim {
namespace {

namespace fs = std::filesystem;

// Per surface, each one CLI run (~1-3 s). SPLITSIM_FUZZ_MUTATIONS and
// SPLITSIM_FUZZ_SEED (added to each surface's seed) run a larger or another
// set by hand.
int mutations() {
  const char* n = std::getenv("SPLITSIM_FUZZ_MUTATIONS");
  return n != nullptr ? std::atoi(n) : 10;
}
unsigned seed_offset() {
  const char* n = std::getenv("SPLITSIM_FUZZ_SEED");
  return n != nullptr ? static_cast<unsigned>(std::strtoul(n, nullptr, 10)) : 0;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Values that broke readers before (issue #39) and plain wrong ones.
const std::vector<std::string> kEdgeValues = {
    "0",     "-1",    "1e-300", "5e-324", "1e308",      "-1e308", "NaN",  "inf",
    "0x10",  "1e20",  "\"x\"",  "null",   "[]",         "{}",     "true", "4096",
    "2.5",   "\"\"",  "1e-9",   "99999999999999999999", "-0"};

// One mutation of a text file, chosen by `rng`: a number replaced by an
// edge value, a line repeated (a duplicate key or row), a line dropped, the
// end cut off, a byte changed, an ESC or half a UTF-8 character inserted.
std::string mutate(const std::string& text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::string s = text;
  switch (pick(7)) {
    case 0:
    case 1: {  // a number
      static const std::regex number(R"(-?\d+(\.\d+)?([eE][-+]?\d+)?)");
      std::vector<std::pair<size_t, size_t>> at;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), number);
           it != std::sregex_iterator(); ++it)
        at.emplace_back(static_cast<size_t>(it->position()), static_cast<size_t>(it->length()));
      if (at.empty()) break;
      const auto [pos, len] = at[pick(at.size())];
      s.replace(pos, len, kEdgeValues[pick(kEdgeValues.size())]);
      break;
    }
    case 2: {  // a line twice, or dropped
      std::vector<std::string> lines;
      std::istringstream in(s);
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.size() < 2) break;
      const size_t i = 1 + pick(lines.size() - 1);
      if (pick(2) == 0) {
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[i]);
      } else {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
      }
      s.clear();
      for (const auto& l : lines) s += l + "\n";
      break;
    }
    case 3: s.resize(pick(s.size())); break;
    case 4: s[pick(s.size())] = static_cast<char>(pick(256)); break;
    case 5: {  // into a string: ESC, or the first byte of a two-byte character
      const size_t q = s.find('"', pick(s.size()));
      if (q == std::string::npos) break;
      s.insert(q + 1, pick(2) == 0 ? std::string("\x1b[31m") : std::string("\xc3"));
      break;
    }
    default: s.insert(pick(s.size()), 1, static_cast<char>(pick(256)));
  }
  return s;
}

struct CliRun {
  int status = 0;
  std::string out, err;
};

// `args` after the binary, in `dir`, bounded: 120 s, 6 GB of address space.
CliRun run_in(const fs::path& dir, const std::string& args) {
  const fs::path out = dir / "stdout", err = dir / "stderr";
  const std::string cmd = "cd '" + dir.string() + "' && ulimit -v 6000000 && timeout -s KILL 120 " +
                          std::string(SPLITSIM_BIN) + " " + args + " >'" + out.string() +
                          "' 2>'" + err.string() + "'";
  CliRun r;
  r.status = std::system(cmd.c_str());
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Checks one run: exit 0 or 2, no library text or control character; an
// exit 2 names `named`. Returns the exit code (-1 for a signal or a kill).
int check_run(const CliRun& r, const std::string& label, const std::string& named) {
  const std::string what = label + ":\n" + r.err.substr(0, 2000);
  EXPECT_TRUE(WIFEXITED(r.status)) << "killed or timed out: " << what;
  if (!WIFEXITED(r.status)) return -1;
  const int code = WEXITSTATUS(r.status);
  EXPECT_TRUE(code == 0 || code == 2) << "exit " << code << ": " << what;
  for (const char* raw : {"json.exception", "terminate called", "frame #", "Exception raised from",
                          "stoull", "stod", "basic_string", "what():"})
    EXPECT_EQ(r.err.find(raw), std::string::npos) << "raw library text: " << what;
  for (const std::string* stream : {&r.out, &r.err})
    for (char c : *stream)
      EXPECT_FALSE(c == '\x1b' || (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t'))
          << "a control character reaches the terminal: " << what;
  if (code == 2) {
    EXPECT_NE(r.err.find(named), std::string::npos) << "the refusal does not name " << named
                                                    << ": " << what;
  }
  return code;
}

// A fresh copy of the corpus for one surface, removed at the end.
class Corpus {
 public:
  explicit Corpus(const std::string& surface)
      : dir_(fs::temp_directory_path() /
             ("splitsim_fuzz_" + surface + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(std::string(SPLITSIM_SOURCE_DIR) + "/tests/fuzz/corpus"))
      fs::copy_file(e.path(), dir_ / e.path().filename());
  }
  ~Corpus() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// Mutates corpus file `file` mutations() times (seed `seed`) and runs `args`
// on each; with `plan`, `plan scenario.json --json` writes plan.json first.
void fuzz(const std::string& surface, const std::string& file, const std::string& args,
          unsigned seed, bool plan = false) {
  Corpus corpus(surface);
  if (plan) {
    const CliRun p = run_in(corpus.dir(), "plan scenario.json --json");
    ASSERT_EQ(p.status, 0) << p.err;
    std::ofstream(corpus.dir() / "plan.json") << p.out;
  }
  const CliRun clean = run_in(corpus.dir(), args);
  ASSERT_EQ(clean.status, 0) << "the unmutated corpus fails: " << args << "\n" << clean.err;
  const std::string original = slurp(corpus.dir() / file);
  std::mt19937 rng(seed + seed_offset());
  int refused = 0;
  for (int i = 0; i < mutations(); ++i) {
    const std::string mutated = mutate(original, rng);
    std::ofstream(corpus.dir() / file, std::ios::binary | std::ios::trunc) << mutated;
    const CliRun r = run_in(corpus.dir(), args);
    if (check_run(r, surface + " mutation " + std::to_string(i) + " (" + args + ")", file) == 2)
      ++refused;
  }
  ::testing::Test::RecordProperty("refused", refused);
}

TEST(InputFuzz, MeasuredCsvForCalibrate) {
  fuzz("calibrate_csv", "measured.csv",
       "calibrate plan.json --measured measured.csv -o out.json --no-leave-one-out", 3901,
       /*plan=*/true);
}

TEST(InputFuzz, CalibrationFileForSimulate) {
  fuzz("calibration", "calibration.json", "simulate plan.json --calibration calibration.json",
       3902, /*plan=*/true);
}

TEST(InputFuzz, DeviceProfile) { fuzz("device", "device.json", "plan scenario.json", 3903); }

TEST(InputFuzz, BandwidthTrace) { fuzz("trace", "trace.txt", "simulate scenario.json", 3904); }

TEST(InputFuzz, ExploreSpaceFile) {
  fuzz("space", "space.json", "explore scenario.json --space space.json", 3905);
}

TEST(InputFuzz, AccuracyReportForExplore) {
  fuzz("accuracy", "accuracy.json",
       "explore scenario.json --kinds ushape --chunks 1 --accuracy accuracy.json "
       "--target-accuracy 70",
       3906);
}

TEST(InputFuzz, LeakageReportForExplore) {
  fuzz("leakage", "leakage.json",
       "explore scenario.json --kinds single --chunks 1 --leakage leakage.json --max-psnr 15",
       3908);
}

// Flag values: each flag of a quick command given edge values; a refusal
// names the flag.
TEST(InputFuzz, FlagValues) {
  Corpus corpus("flags");
  const CliRun p = run_in(corpus.dir(), "plan scenario.json --json");
  ASSERT_EQ(p.status, 0) << p.err;
  std::ofstream(corpus.dir() / "plan.json") << p.out;
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"simulate plan.json", "--jobs"},           {"simulate plan.json", "--server-order"},
      {"explore scenario.json", "--chunks"},      {"explore scenario.json", "--top"},
      {"explore scenario.json", "--spread"},      {"explore scenario.json", "--stages"},
      {"explore scenario.json", "--bandwidth-bit-per-s"},
      {"explore scenario.json", "--max-client-mac-share"},
      {"calibrate plan.json --measured measured.csv -o out.json", "--jobs"}};
  std::mt19937 rng(3907 + seed_offset());
  for (int i = 0; i < mutations(); ++i) {
    const auto& [command, flag] = flags[static_cast<size_t>(i) % flags.size()];
    std::string value = kEdgeValues[std::uniform_int_distribution<size_t>(0, kEdgeValues.size() - 1)(rng)];
    if (value.front() == '"') value = value.substr(1, value.size() - 2);
    const std::string args = command + " " + flag + " '" + value + "'";
    check_run(run_in(corpus.dir(), args), "flags: " + args, flag);
  }
}

}  // namespace
}  // namespace splitsim
