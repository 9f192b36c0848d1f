// cli/README.md's "Commands" (the CLI reference) against the binary's own
// --help: every subcommand has a row, every long option of
// `splitsim SUB --help` is in SUB's row, and every --option the section names
// exists in some --help.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

using OptionSet = std::set<std::string>;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The long options a CLI11 help text declares: lines "  --name ..." or
// "  -o,--name ...". Wrapped descriptions are indented further, and options
// named inside descriptions ("Excludes: --csv") are not declarations.
OptionSet declared_options(const std::string& help) {
  static const std::regex kDecl(R"(^  (?:-[A-Za-z],)?(--[A-Za-z0-9][A-Za-z0-9_-]*))");
  OptionSet out;
  for (const std::string& line : lines_of(help)) {
    std::smatch m;
    if (std::regex_search(line, m, kDecl)) out.insert(m[1]);
  }
  return out;
}

// Every "--name" written anywhere in `text`.
OptionSet mentioned_options(const std::string& text) {
  static const std::regex kOpt(R"((^|[^A-Za-z0-9_-])(--[A-Za-z0-9][A-Za-z0-9_-]*))");
  OptionSet out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kOpt); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[2]);
  return out;
}

// The subcommands listed under "Subcommands:" in `splitsim --help`.
std::vector<std::string> subcommands(const std::string& help) {
  static const std::regex kSub(R"(^  ([a-z][a-z_-]*)\s)");
  std::vector<std::string> out;
  bool in_section = false;
  for (const std::string& line : lines_of(help)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_section = true;
      continue;
    }
    std::smatch m;
    if (in_section && std::regex_search(line, m, kSub)) out.push_back(m[1]);
  }
  return out;
}

// The CLI reference: cli/README.md from "## Commands" up to the next "## "
// heading.
constexpr char kReadme[] = "cli/README.md";
constexpr char kSection[] = "\n## Commands\n";

std::string cli_reference_section() {
  const std::string readme = slurp(source_path(kReadme));
  const auto begin = readme.find(kSection);
  if (begin == std::string::npos) return "";
  const auto end = readme.find("\n## ", begin + 1);
  return readme.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The section's table rows by command: "| `SUB ...` | ... |".
std::map<std::string, std::string> rows_by_command(const std::string& section) {
  static const std::regex kRow(R"(^\| `([a-z][a-z_-]*)[ `])");
  std::map<std::string, std::string> rows;
  for (const std::string& line : lines_of(section)) {
    std::smatch m;
    if (std::regex_search(line, m, kRow)) rows[m[1]] += line + "\n";
  }
  return rows;
}

// What the binary and README say. `error` non-empty: reading failed.
struct CliDocs {
  std::string error;
  OptionSet top_options;
  std::vector<std::string> commands;
  std::map<std::string, OptionSet> options;  // by subcommand
  std::string section;
  std::map<std::string, std::string> rows;
};

CliDocs read_cli_docs() {
  CliDocs d;
  const CliResult top = run_cli("--help");
  if (top.exit_code != 0) {
    d.error = "splitsim --help failed: " + top.err;
    return d;
  }
  d.top_options = declared_options(top.out);
  d.commands = subcommands(top.out);
  if (d.commands.size() < 7) {
    d.error = "fewer than 7 subcommands parsed from:\n" + top.out;
    return d;
  }
  for (const std::string& sub : d.commands) {
    const CliResult r = run_cli(sub + " --help");
    d.options[sub] = declared_options(r.out);
    if (r.exit_code != 0 || d.options[sub].empty()) {
      d.error = "splitsim " + sub + " --help failed or declares no option:\n" + r.out + r.err;
      return d;
    }
  }
  d.section = cli_reference_section();
  if (d.section.empty())
    d.error = std::string(kReadme) + " has no \"## Commands\" section (the CLI reference)";
  d.rows = rows_by_command(d.section);
  return d;
}

// Read once for the suite: each --help starts the binary, which loads LibTorch.
const CliDocs& cli_docs() {
  static const CliDocs docs = read_cli_docs();
  return docs;
}

class ReadmeCliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cli_docs().error.empty()) << cli_docs().error; }

  const OptionSet& top_options_ = cli_docs().top_options;
  const std::vector<std::string>& commands_ = cli_docs().commands;
  const std::map<std::string, OptionSet>& options_ = cli_docs().options;
  const std::string& section_ = cli_docs().section;
  const std::map<std::string, std::string>& rows_ = cli_docs().rows;
};

TEST_F(ReadmeCliTest, EverySubcommandHasARowAndEveryRowASubcommand) {
  for (const std::string& sub : commands_)
    EXPECT_EQ(rows_.count(sub), 1u)
        << "cli/README.md's CLI reference has no row \"| `" << sub << " ...`\"";
  for (const auto& [command, row] : rows_)
    EXPECT_EQ(options_.count(command), 1u)
        << "cli/README.md's CLI reference has a row for \"" << command
        << "\", which `splitsim --help` does not list";
}

TEST_F(ReadmeCliTest, EveryOptionOfEverySubcommandIsInItsRow) {
  for (const auto& [sub, declared] : options_) {
    if (rows_.count(sub) == 0) continue;  // reported by the test above
    const OptionSet written = mentioned_options(rows_.at(sub));
    for (const std::string& opt : declared) {
      if (opt == "--help") continue;  // every command has it; said once in the section
      EXPECT_EQ(written.count(opt), 1u)
          << "`splitsim " << sub << " --help` declares " << opt
          << " but cli/README.md's CLI reference row for " << sub << " does not mention it";
    }
  }
}

TEST_F(ReadmeCliTest, EveryOptionInARowExistsInThatCommandsHelp) {
  for (const auto& [command, row] : rows_) {
    if (options_.count(command) == 0) continue;  // reported above
    for (const std::string& opt : mentioned_options(row))
      EXPECT_EQ(options_.at(command).count(opt), 1u)
          << "cli/README.md's CLI reference row for " << command << " mentions " << opt
          << ", which `splitsim " << command << " --help` does not declare";
  }
}

TEST_F(ReadmeCliTest, EveryOptionInTheSectionExistsInSomeHelp) {
  OptionSet known = top_options_;
  for (const auto& [sub, declared] : options_) known.insert(declared.begin(), declared.end());
  for (const std::string& opt : mentioned_options(section_))
    EXPECT_EQ(known.count(opt), 1u) << "cli/README.md's CLI reference mentions " << opt
                                    << ", which no `splitsim [SUB] --help` declares";
  for (const std::string& opt : top_options_)
    EXPECT_EQ(mentioned_options(section_).count(opt), 1u)
        << "`splitsim --help` declares " << opt << " but cli/README.md's CLI reference does not";
}

}  // namespace
}  // namespace splitsim::testing
