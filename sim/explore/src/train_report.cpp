#include "train_report.h"

#include "json_read.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim::train_report {

namespace jr = json_read;

void for_each_run(const std::string& file, const std::string& flag,
                  const std::function<void(const nlohmann::json&, const std::string&)>& read) {
  const nlohmann::json j = parse_json_file(file, flag + " file");
  const std::string schema = j.is_object() ? j.value("schema", "") : "";
  if (schema == "splitsim.train/1") {
    read(j, file + ": $");
    return;
  }
  if (schema != "splitsim.train_sweep/1" || !j.contains("runs") || !j["runs"].is_array())
    throw InputError(flag, "\"" + file +
                               "\" is not a report of splitsim train (schema splitsim.train/1 "
                               "or splitsim.train_sweep/1)");
  const nlohmann::json& runs = j["runs"];
  if (runs.size() > kMaxRuns)
    throw InputError(file + ": $.runs", std::to_string(runs.size()) + " runs; the limit is " +
                                            std::to_string(kMaxRuns));
  if (runs.empty()) throw InputError(flag, "\"" + file + "\" holds no trained run");
  for (size_t i = 0; i < runs.size(); ++i)
    read(runs[i], file + ": $.runs[" + std::to_string(i) + "]");
}

std::string task_of(const nlohmann::json& run, const std::string& path) {
  std::string task;
  if (run.contains("dataset") && !run["dataset"].is_null()) {
    const nlohmann::json& d = run["dataset"];
    const bool name =
        d.is_string() && !d.get<std::string>().empty() && d.get<std::string>().size() <= 64 &&
        d.get<std::string>().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
            std::string::npos;
    if (!name)
      throw InputError(path + ".dataset",
                       "a dataset's name (a-z, 0-9, _), not " + d.dump().substr(0, 80));
    task = d.get<std::string>();
  }
  if (!run.contains("one_vs_rest") || run["one_vs_rest"].is_null()) return task;
  const nlohmann::json& k = run["one_vs_rest"];
  if (!k.is_number_integer() || k.get<int64_t>() < 0 || k.get<int64_t>() > 9)
    throw InputError(path + ".one_vs_rest", "a class 0 to 9 (train --one-vs-rest), or null; not " +
                                                k.dump().substr(0, 80));
  return task + " with class " + std::to_string(k.get<int64_t>()) + " against the rest";
}

std::vector<BoundaryCodecs> read_compression(const nlohmann::json& run, const std::string& path) {
  std::vector<BoundaryCodecs> codecs;
  const nlohmann::json& c = run.at("compression");
  jr::require_array(c, path + ".compression", "one {forward, backward} object per boundary");
  for (size_t b = 0; b < c.size(); ++b) {
    const std::string at = jr::index_path(path + ".compression", b);
    jr::require_object(c[b], at, "a {\"forward\": codec, \"backward\": codec} object");
    jr::require_key(c[b], at, "forward", "a codec object");
    jr::require_key(c[b], at, "backward", "a codec object");
    codecs.push_back({parse_codec(c[b].at("forward"), at + ".forward"),
                      parse_codec(c[b].at("backward"), at + ".backward")});
  }
  return codecs;
}

}  // namespace splitsim::train_report
