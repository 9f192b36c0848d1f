// read_measured (calibrate.h): measured rows from exec's metrics JSON or a CSV.
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_read.h"
#include "splitsim/calibrate/calibrate.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim {
namespace {

namespace jr = json_read;

bool is_metric_key(const std::string& key) {
  return key == "time_per_batch_s" || key == "computation_time_s" ||
         (key.rfind("busy_s_per_batch.", 0) == 0 && key.size() > 17);
}

// A measured time: finite, from kMinMeasuredS to kMaxMeasuredS seconds.
double checked_time(double v, const std::string& where, const std::string& key) {
  if (!std::isfinite(v) || v < kMinMeasuredS || v > kMaxMeasuredS) {
    std::ostringstream os;
    os << key << " must be a time from " << kMinMeasuredS << " to " << kMaxMeasuredS
       << " seconds, got " << v;
    throw InputError(where, os.str());
  }
  return v;
}

void check_row_count(size_t rows, const std::string& where) {
  if (rows > kMaxMeasuredRows)
    throw InputError(where, "more than " + std::to_string(kMaxMeasuredRows) +
                                " measured rows; the limit is " + std::to_string(kMaxMeasuredRows) +
                                " (each row is simulated at every step of the fit)");
}

// A metric of a metrics object: absent, or a number checked by checked_time.
void read_metric(const nlohmann::json& m, const std::string& key, const std::string& at,
                 const std::string& metric, MeasuredRow* row) {
  if (!m.contains(key)) return;
  const nlohmann::json& v = m.at(key);
  const std::string path = jr::member_path(at, key);
  if (!v.is_number())
    throw InputError(path, key + ": expected a number of seconds, got " + jr::show(v));
  row->metrics[metric] = checked_time(v.get<double>(), path, key);
}

std::vector<MeasuredRow> rows_from_metrics_json(const nlohmann::json& j, const std::string& file) {
  const nlohmann::json all = j.is_array() ? j : nlohmann::json::array({j});
  if (all.size() > kMaxMeasuredRows) check_row_count(all.size(), file + ": $");
  std::vector<MeasuredRow> rows;
  for (size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& m = all[i];
    const std::string at = j.is_array() ? "$[" + std::to_string(i) + "]" : "$";
    try {
      if (!m.is_object() || m.value("schema", "") != "splitsim.metrics/1")
        throw InputError(at,
                         "expected a splitsim.metrics/1 object (what `splitsim exec --json` "
                         "writes)");
      if (!m.contains("variant") || !m["variant"].is_string() ||
          m["variant"].get<std::string>().empty())
        throw InputError(at + ".variant", "the variant label is missing");
      MeasuredRow row;
      row.label = jr::read_label(m["variant"], at + ".variant");
      row.source = file + (j.is_array() ? "[" + std::to_string(i) + "]" : "");
      for (const char* key : {"time_per_batch_s", "computation_time_s"})
        read_metric(m, key, at, key, &row);
      if (m.contains("parties")) {
        jr::require_object(m["parties"], at + ".parties", "an object of parties");
        for (const auto& [party, p] : m["parties"].items()) {
          const std::string pp = jr::member_path(at + ".parties", party);
          jr::require_object(p, pp, "a party's metrics object");
          read_metric(p, "busy_s_per_batch", pp, "busy_s_per_batch." + party, &row);
        }
      }
      if (row.metrics.empty())
        throw InputError(at, "no time_per_batch_s, computation_time_s or busy time");
      rows.push_back(row);
    } catch (const InputError& e) {
      throw in_file(e, file);
    }
  }
  return rows;
}

// Digits, a sign, a point and an exponent only: strtod also reads "inf",
// "nan" and hexadecimal ("0x1p-3").
bool is_decimal(const std::string& s) {
  return s.find_first_not_of("+-0123456789.eE") == std::string::npos;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(cell);
  for (auto& s : cells) {  // trim spaces
    const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
    s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  }
  return cells;
}

std::vector<MeasuredRow> rows_from_csv(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::vector<std::string> header;
  int label_col = -1;
  std::vector<MeasuredRow> rows;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = file + ":" + std::to_string(n);
    if (line.find_first_not_of(" \r") == std::string::npos || line[0] == '#') continue;
    const std::vector<std::string> cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      for (size_t c = 0; c < header.size(); ++c) {
        if (header[c] == "variant" || header[c] == "label") {
          label_col = static_cast<int>(c);
        } else if (!is_metric_key(header[c])) {
          throw InputError(where, "unknown column \"" + header[c] +
                                      "\"; expected variant, time_per_batch_s, "
                                      "computation_time_s or busy_s_per_batch.PARTY");
        }
      }
      if (label_col < 0) throw InputError(where, "the header needs a \"variant\" column");
      if (header.size() < 2) throw InputError(where, "the header names no measured metric");
      continue;
    }
    if (cells.size() != header.size())
      throw InputError(where, "expected " + std::to_string(header.size()) + " cells, got " +
                                  std::to_string(cells.size()));
    MeasuredRow row;
    row.label = cells[static_cast<size_t>(label_col)];
    row.source = where;
    if (row.label.empty()) throw InputError(where, "the variant label is empty");
    jr::check_label_text(row.label, where);
    check_row_count(rows.size() + 1, where);
    for (size_t c = 0; c < cells.size(); ++c) {
      if (static_cast<int>(c) == label_col || cells[c].empty()) continue;  // empty: not measured
      char* end = nullptr;
      const double v = std::strtod(cells[c].c_str(), &end);
      if (end == cells[c].c_str() || *end != '\0' || !is_decimal(cells[c]))
        throw InputError(where, header[c] + ": expected a number of seconds, got \"" +
                                    cells[c].substr(0, 40) + "\"");
      row.metrics[header[c]] = checked_time(v, where, header[c]);
    }
    if (row.metrics.empty()) throw InputError(where, "no measured value in this row");
    rows.push_back(row);
  }
  if (header.empty()) throw InputError(file, "no header line");
  if (rows.empty()) throw InputError(file, "no measured rows");
  return rows;
}

}  // namespace

std::vector<MeasuredRow> read_measured(const std::string& file) {
  const std::string text = read_input_file(file, "measured file");
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '['))
    return rows_from_metrics_json(parse_json_text(text, file), file);
  return rows_from_csv(text, file);
}

}  // namespace splitsim
