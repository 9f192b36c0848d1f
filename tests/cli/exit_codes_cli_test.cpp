// One meaning for exit codes in every command (cli/README.md "Exit codes"):
// 2 for what the user gave (a flag, a file, an address), 1 for a failure
// while running (here: a peer that is not there).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../free_port.h"
#include "run_cli.h"

namespace splitsim::testing {
namespace {

// Every command and the smallest arguments that reach its work.
struct Command {
  std::string name, args;
};

std::vector<Command> commands() {
  const std::string sc = source_path("scenarios/mobilenet_v2_ushape.json");
  return {{"plan", sc},
          {"simulate", sc},
          {"profile", "--model resnet20 -o /tmp/splitsim_never_written.json"},
          {"bench", "--what sim"},
          {"exec", sc + " --role client --connect 127.0.0.1:1"},
          {"validate", sc},
          {"explore", sc},
          {"calibrate", sc + " --measured m.csv -o /tmp/splitsim_never_written.json"},
          {"train", sc},
          {"link-probe", "--role client --connect 127.0.0.1:1"}};
}

TEST(ExitCodesCliTest, AnUnknownFlagIsTwoInEveryCommand) {
  for (const Command& c : commands()) {
    const CliResult r = run_cli(c.name + " " + c.args + " --no-such-flag");
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << c.name << ": " << r.err;
  }
}

TEST(ExitCodesCliTest, AMissingInputFileIsTwoNamingIt) {
  const std::string missing = "/tmp/splitsim_no_such_input.json";
  for (const std::string& args :
       {"plan " + missing, "simulate " + missing, "explore " + missing, "train " + missing,
        "validate " + missing, "profile --scenario " + missing + " -o /tmp/splitsim_never.json",
        "bench --scenario " + missing, "exec " + missing + " --role client --connect 127.0.0.1:1",
        "calibrate " + missing + " --measured " + missing + " -o /tmp/splitsim_never.json"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(missing), std::string::npos) << args << ": " << r.err;
  }
}

TEST(ExitCodesCliTest, AnAddressThatCannotBeIsTwo) {
  const std::string sc = source_path("scenarios/mobilenet_v2_ushape.json");
  for (const std::string& args : std::vector<std::string>{
           "exec " + sc + " --variant \"chunks=1 compression=none\" --role client --connect "
               "127.0.0.1:99999",
           "link-probe --role client --connect no:port",
           "train " + source_path("scenarios/accuracy/resnet20_fashion_mnist.json") +
               " --variant \"compression=none chunks=1\" --role client --connect 127.0.0.1:0"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("--connect"), std::string::npos) << args << ": " << r.err;
  }
}

TEST(ExitCodesCliTest, APeerThatIsNotThereIsOne) {
  const std::string sc = source_path("scenarios/mobilenet_v2_ushape.json");
  const std::string at = "127.0.0.1:" + std::to_string(free_port());
  for (const std::string& args : std::vector<std::string>{
           "exec " + sc + " --variant \"chunks=1 compression=none\" --role client --connect " +
               at + " --timeout-s 2",
           "link-probe --role client --connect " + at + " --timeout-s 2"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.err;
    EXPECT_TRUE(r.err.rfind("error: ", 0) == 0 || r.err.find("\nerror: ") != std::string::npos)
        << args << ": " << r.err;
  }
}

}  // namespace
}  // namespace splitsim::testing
