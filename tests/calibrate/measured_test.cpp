// The measured-file readers of calibrate (sim/calibrate/src/measured.cpp):
// CSV and exec's metrics JSON, errors that name the file and line, bounds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "splitsim/calibrate/calibrate.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim::testing {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("splitsim_calib_" + name + "_" + std::to_string(::getpid()));
  std::ofstream(p) << text;
  return p.string();
}

TEST(MeasuredTest, ReadsCsvAndExecMetricsJson) {
  const std::string csv =
      write_temp("ok.csv",
                 "# measured on testbed A\nvariant,time_per_batch_s,busy_s_per_batch.server\n"
                 "\"chunks=4 compression=q8\",0.31,0.25\nchunks=8,0.29,\n");
  const std::vector<MeasuredRow> rows = read_measured(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, "chunks=4 compression=q8");
  EXPECT_DOUBLE_EQ(rows[0].metrics.at("busy_s_per_batch.server"), 0.25);
  EXPECT_EQ(rows[1].metrics.size(), 1u);  // an empty cell: not measured
  EXPECT_EQ(rows[1].source, csv + ":4");

  const nlohmann::json m = {{"schema", "splitsim.metrics/1"},
                            {"variant", "chunks=4"},
                            {"time_per_batch_s", 0.5},
                            {"computation_time_s", 0.4},
                            {"parties", {{"client", {{"busy_s_per_batch", 0.1}}}}}};
  const std::string json = write_temp("ok.json", nlohmann::json::array({m, m}).dump());
  const std::vector<MeasuredRow> from_json = read_measured(json);
  ASSERT_EQ(from_json.size(), 2u);
  EXPECT_DOUBLE_EQ(from_json[1].metrics.at("computation_time_s"), 0.4);
  EXPECT_DOUBLE_EQ(from_json[1].metrics.at("busy_s_per_batch.client"), 0.1);
  std::filesystem::remove(csv);
  std::filesystem::remove(json);
}

TEST(MeasuredTest, BadFilesNameTheLine) {
  const auto where = [](const std::string& name, const std::string& text) {
    const std::string f = write_temp(name, text);
    std::string w = "(accepted)";
    try {
      read_measured(f);
    } catch (const InputError& e) {
      w = e.where().substr(e.where().rfind('/') + 1);
    }
    std::filesystem::remove(f);
    return w;
  };
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(where("col", "variant,time_per_batch\nx,1\n"), "splitsim_calib_col_" + pid + ":1");
  EXPECT_EQ(where("num", "variant,time_per_batch_s\nx,fast\n"), "splitsim_calib_num_" + pid + ":2");
  EXPECT_EQ(where("neg", "variant,time_per_batch_s\nx,-1\n"), "splitsim_calib_neg_" + pid + ":2");
  EXPECT_EQ(where("cells", "variant,time_per_batch_s\nx,1,2\n"),
            "splitsim_calib_cells_" + pid + ":2");
  EXPECT_EQ(where("label", "time_per_batch_s\n1\n"), "splitsim_calib_label_" + pid + ":1");
  EXPECT_EQ(where("rows", "variant,time_per_batch_s\n"), "splitsim_calib_rows_" + pid);
  EXPECT_EQ(where("schema", R"({"schema": "splitsim.plan/1"})"), "$");
}

// Runs read_measured on `text`, expecting InputError; returns its where()
// without the directory and its message ("(accepted)" when none).
std::pair<std::string, std::string> refusal(const std::string& name, const std::string& text) {
  const std::string f = write_temp(name, text);
  std::pair<std::string, std::string> out{"(accepted)", ""};
  try {
    read_measured(f);
  } catch (const InputError& e) {
    out = {e.where().substr(e.where().rfind('/') + 1), e.message()};
  }
  std::filesystem::remove(f);
  return out;
}

TEST(MeasuredTest, TimesAreFromAMicrosecondToADayInDecimal) {
  const std::string pid = std::to_string(::getpid());
  for (const char* bad : {"1e-300", "5e-324", "0", "1e-7", "86401", "inf", "nan", "0x1p-3"}) {
    const auto [where, message] =
        refusal("tiny", std::string("variant,time_per_batch_s\nx,") + bad + "\n");
    EXPECT_EQ(where, "splitsim_calib_tiny_" + pid + ":2") << bad;
    EXPECT_NE(message.find("time_per_batch_s"), std::string::npos) << message;
  }
  EXPECT_NE(refusal("tiny", "variant,time_per_batch_s\nx,1e-300\n")
                .second.find("from 1e-06 to 86400 seconds, got 1e-300"),
            std::string::npos);
  EXPECT_EQ(refusal("ok", "variant,time_per_batch_s\nx,1e-6\ny,86400\n").first, "(accepted)");
}

TEST(MeasuredTest, MetricsJsonValuesAreNumbersAndErrorsNameTheFile) {
  const nlohmann::json m = {{"schema", "splitsim.metrics/1"},
                            {"variant", "chunks=4"},
                            {"time_per_batch_s", 0.5},
                            {"parties", {{"client", {{"busy_s_per_batch", 0.1}}}}}};
  const std::string pid = std::to_string(::getpid());
  auto with = [&](const nlohmann::json::json_pointer& at, const nlohmann::json& v) {
    nlohmann::json j = nlohmann::json::array({m, m});
    j[1][at] = v;
    return j.dump();
  };
  using ptr = nlohmann::json::json_pointer;
  auto [where, message] = refusal("str", with(ptr("/time_per_batch_s"), "0.5"));
  EXPECT_EQ(where, "$[1].time_per_batch_s");
  EXPECT_NE(message.find("expected a number of seconds, got \"0.5\""), std::string::npos);
  EXPECT_NE(message.find("[in "), std::string::npos) << message;
  EXPECT_NE(message.find("splitsim_calib_str_" + pid), std::string::npos) << message;
  std::tie(where, message) = refusal("tiny", with(ptr("/computation_time_s"), 1e-300));
  EXPECT_EQ(where, "$[1].computation_time_s");
  EXPECT_NE(message.find("splitsim_calib_tiny_" + pid), std::string::npos) << message;
  std::tie(where, message) =
      refusal("busy", with(ptr("/parties/client/busy_s_per_batch"), nullptr));
  EXPECT_EQ(where, "$[1].parties.client.busy_s_per_batch");
  std::tie(where, message) = refusal("parties", with(ptr("/parties"), "client"));
  EXPECT_EQ(where, "$[1].parties");
  std::tie(where, message) = refusal("label", with(ptr("/variant"), "chunks=4\x1b[2J"));
  EXPECT_EQ(where, "$[1].variant");
  EXPECT_NE(message.find("control character U+001B"), std::string::npos) << message;
  EXPECT_EQ(refusal("ok", with(ptr("/time_per_batch_s"), 0.25)).first, "(accepted)");
}

TEST(MeasuredTest, CsvLabelsAreUtf8WithoutControlCharacters) {
  const std::string pid = std::to_string(::getpid());
  auto [where, message] = refusal("half", "variant,time_per_batch_s\nchunks=4\xc3,0.5\n");
  EXPECT_EQ(where, "splitsim_calib_half_" + pid + ":2");
  EXPECT_NE(message.find("not valid UTF-8 at byte 8"), std::string::npos) << message;
  std::tie(where, message) = refusal("esc", "variant,time_per_batch_s\n\"a\x1b[31m\",0.5\n");
  EXPECT_EQ(where, "splitsim_calib_esc_" + pid + ":2");
  EXPECT_NE(message.find("U+001B"), std::string::npos) << message;
  EXPECT_EQ(refusal("ok", "variant,time_per_batch_s\n\"caf\xc3\xa9 chunks=4\",0.5\n").first,
            "(accepted)");
}

TEST(MeasuredTest, RowsAreBoundedAndRefusedQuickly) {
  const std::string pid = std::to_string(::getpid());
  const auto t0 = std::chrono::steady_clock::now();
  std::string csv = "variant,time_per_batch_s\n";
  for (int i = 0; i < 5000; ++i) csv += "v" + std::to_string(i) + ",0.5\n";
  auto [where, message] = refusal("csv", csv);
  // The header is line 1: row kMaxMeasuredRows + 1 is line kMaxMeasuredRows + 2.
  EXPECT_EQ(where, "splitsim_calib_csv_" + pid + ":" + std::to_string(kMaxMeasuredRows + 2));
  EXPECT_NE(message.find("the limit is 256"), std::string::npos) << message;
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; i < 120000; ++i)
    rows.push_back({{"schema", "splitsim.metrics/1"}, {"variant", "v"}, {"time_per_batch_s", 1}});
  std::tie(where, message) = refusal("json", rows.dump());
  EXPECT_EQ(where, "splitsim_calib_json_" + pid + ": $");
  EXPECT_NE(message.find("the limit is 256"), std::string::npos) << message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  // Several files that are each within the limit, but not together.
  const std::vector<MeasuredRow> many(kMaxMeasuredRows + 1, MeasuredRow{"v", "f:2", {}});
  try {
    calibrate({}, many, CalibrateOptions{});
    ADD_FAILURE() << "accepted " << many.size() << " rows";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "measured");
    EXPECT_NE(e.message().find("257 measured rows in all; the limit is 256"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace splitsim::testing
