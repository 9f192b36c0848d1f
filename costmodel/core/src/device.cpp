#include "splitsim/costmodel/device.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "json_read.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/median.h"

namespace splitsim {

const UnitTiming* DeviceProfile::timing_for(const std::string& model,
                                            const std::vector<int64_t>& input_shape,
                                            const std::string& unit) const {
  if (model != measured_model || input_shape != measured_input_shape) return nullptr;
  for (const auto& t : timings)
    if (t.unit == unit) return &t;
  return nullptr;
}

OpClassParts OpClassParts::normalized() const {
  const double t = total();
  if (!(t > 0)) return {};
  return {conv / t, depthwise / t, matmul / t, elementwise / t, per_op / t};
}

bool OpClassParts::operator==(const OpClassParts& o) const {
  return conv == o.conv && depthwise == o.depthwise && matmul == o.matmul &&
         elementwise == o.elementwise && per_op == o.per_op;
}

double& op_class_part(OpClassParts& p, size_t i) {
  double* f[] = {&p.conv, &p.depthwise, &p.matmul, &p.elementwise, &p.per_op};
  return *f[i];
}

double op_class_part(const OpClassParts& p, size_t i) {
  const double f[] = {p.conv, p.depthwise, p.matmul, p.elementwise, p.per_op};
  return f[i];
}

OpClassParts formula_parts(const DeviceProfile& d, const OpCounts& w) {
  const double macs_per_s = d.peak_macs_per_s();
  const Efficiency& e = d.efficiency;
  OpClassParts s;
  s.conv = w.conv_macs / (macs_per_s * e.conv);
  s.depthwise = w.depthwise_macs / (macs_per_s * e.depthwise);
  s.matmul = w.matmul_macs / (macs_per_s * e.matmul);
  s.elementwise = 8.0 * w.elementwise_elems / (d.memory_bandwidth_Bps * e.elementwise);
  s.per_op = w.ops * e.per_op_s;
  return s;
}

DeviceProfile at_compute_precision(const DeviceProfile& d, const std::string& precision,
                                   bool* applied) {
  const double peak = precision == "fp16"   ? d.peak_flops_fp16
                      : precision == "bf16" ? d.peak_flops_bf16
                                            : 0;
  if (applied != nullptr) *applied = peak > 0;
  if (peak <= 0) return d;
  DeviceProfile out = d;
  out.peak_flops = peak;
  const auto& half = precision == "fp16" ? d.efficiency_fp16 : d.efficiency_bf16;
  if (half) {
    out.efficiency.conv = half->conv;
    out.efficiency.depthwise = half->depthwise;
    out.efficiency.matmul = half->matmul;
  }
  return out;
}

DeviceProfile slowed_profile(const DeviceProfile& d, double factor) {
  DeviceProfile out = d;
  for (double* peak :
       {&out.peak_flops, &out.peak_flops_fp16, &out.peak_flops_bf16, &out.memory_bandwidth_Bps})
    *peak /= factor;
  out.efficiency.per_op_s *= factor;
  for (auto* half : {&out.efficiency_fp16, &out.efficiency_bf16})
    if (*half) (*half)->per_op_s *= factor;
  for (UnitTiming& t : out.timings)
    for (double* s : {&t.fwd_s, &t.bwd_s, &t.update_s}) *s *= factor;
  for (CodecTiming& c : out.codec_timings) {
    c.encode_s *= factor;
    c.decode_s *= factor;
    for (auto* s : {&c.sender_backward_s, &c.receiver_backward_s})
      if (*s) **s *= factor;
  }
  return out;
}

double formula_seconds(const DeviceProfile& d, const OpCounts& w) {
  return formula_parts(d, w).total();
}

double update_formula_seconds(const DeviceProfile& d, int64_t param_count, int64_t state_copies) {
  const double bytes = (3.0 + 2.0 * state_copies) * 4.0 * param_count;
  return bytes / (d.memory_bandwidth_Bps * d.efficiency.elementwise);
}

void to_json(nlohmann::json& j, const DeviceProfile& d) {
  j = {{"schema", "splitsim.device/1"},
       {"name", d.name},
       {"description", d.description},
       {"peak_flops", d.peak_flops},
       {"memory_bandwidth_Bps", d.memory_bandwidth_Bps},
       {"memory_bytes", d.memory_bytes},
       {"efficiency",
        {{"conv", d.efficiency.conv},
         {"depthwise", d.efficiency.depthwise},
         {"matmul", d.efficiency.matmul},
         {"elementwise", d.efficiency.elementwise},
         {"per_op_s", d.efficiency.per_op_s}}},
       {"sources", d.sources}};
  if (d.peak_flops_fp16 > 0) j["peak_flops_fp16"] = d.peak_flops_fp16;
  if (d.peak_flops_bf16 > 0) j["peak_flops_bf16"] = d.peak_flops_bf16;
  const auto mac_shares = [](const Efficiency& e) {
    return nlohmann::json{{"conv", e.conv}, {"depthwise", e.depthwise}, {"matmul", e.matmul}};
  };
  if (d.efficiency_fp16) j["efficiency_fp16"] = mac_shares(*d.efficiency_fp16);
  if (d.efficiency_bf16) j["efficiency_bf16"] = mac_shares(*d.efficiency_bf16);
  if (!d.timings.empty()) {
    nlohmann::json units = nlohmann::json::array();
    for (const auto& t : d.timings)
      units.push_back(
          {{"unit", t.unit}, {"fwd_s", t.fwd_s}, {"bwd_s", t.bwd_s}, {"update_s", t.update_s}});
    j["measured"] = {{"model", d.measured_model}, {"input_shape", d.measured_input_shape},
                     {"batch", d.measured_batch}, {"in_flight", d.measured_in_flight},
                     {"threads", d.threads},      {"units", units}};
    if (d.timing_spread > 0) j["measured"]["timing_spread"] = d.timing_spread;
  }
  if (!d.codec_timings.empty()) {
    nlohmann::json codecs = nlohmann::json::array();
    for (const auto& t : d.codec_timings) {
      nlohmann::json c = {{"codec", nlohmann::json::parse(t.codec)},
                          {"shape", t.shape},
                          {"batch", t.batch},
                          {"encode_s", t.encode_s},
                          {"decode_s", t.decode_s}};
      if (t.sender_backward_s) c["sender_backward_s"] = *t.sender_backward_s;
      if (t.receiver_backward_s) c["receiver_backward_s"] = *t.receiver_backward_s;
      codecs.push_back(std::move(c));
    }
    j["measured_codecs"] = codecs;
  }
}

double timing_spread_of(const std::vector<std::vector<double>>& seconds_by_unit) {
  std::vector<double> spreads;
  for (const auto& seconds : seconds_by_unit) {
    if (seconds.size() < 2) continue;
    const double mid = median(seconds);
    if (!(mid > 0)) continue;
    const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
    spreads.push_back((*hi - *lo) / (2 * mid));
  }
  return spreads.empty() ? 0.0 : std::min(median(spreads), kMaxTimingSpread);
}

const CodecTiming* DeviceProfile::codec_timing_for(const std::string& codec,
                                                   const std::vector<int64_t>& shape,
                                                   int64_t batch) const {
  for (const auto& t : codec_timings)
    if (t.batch == batch && t.shape == shape && t.codec == codec) return &t;
  return nullptr;
}

namespace {

namespace jr = json_read;

// Reads j[key] as a number > 0 (or >= 0 when `allow_zero`).
double number(const nlohmann::json& j, const std::string& key, const std::string& where,
              bool required, double fallback, bool allow_zero = false) {
  if (!j.contains(key)) {
    if (required) throw InputError(where + "." + key, "missing; expected a number");
    return fallback;
  }
  const auto& v = j.at(key);
  if (!v.is_number()) throw InputError(where + "." + key, "expected a number, got " + v.dump());
  const double x = v.get<double>();
  // Beyond 1e30 every formula here overflows or rounds to nothing.
  if (!(x <= 1e30)) throw InputError(where + "." + key, "must be <= 1e30, got " + v.dump());
  if (x < 0 || (x == 0 && !allow_zero))
    throw InputError(where + "." + key, "must be " + std::string(allow_zero ? ">= 0" : "> 0"));
  return x;
}

// A measured time: a number of seconds from 0 (a unit too small for the
// clock) to limits::kMaxTaskS.
double measured_seconds(const nlohmann::json& v, const std::string& path) {
  return jr::read_number(v, path, {0, false, limits::kMaxTaskS, false});
}

// A shape: 1 to limits::kMaxInputDims positive dimensions, each at most
// limits::kMaxPlanBytes.
std::vector<int64_t> read_shape(const nlohmann::json& v, const std::string& path) {
  jr::require_array(v, path, "a shape such as [3, 224, 224]", 1);
  if (v.size() > static_cast<size_t>(limits::kMaxInputDims))
    throw InputError(path, "a shape of " + std::to_string(v.size()) + " dimensions; the limit is " +
                               std::to_string(limits::kMaxInputDims));
  std::vector<int64_t> shape;
  for (size_t i = 0; i < v.size(); ++i)
    shape.push_back(jr::read_int(v[i], jr::index_path(path, i), 1, limits::kMaxPlanBytes));
  return shape;
}

void check_keys(const nlohmann::json& j, const std::vector<std::string>& allowed,
                const std::string& where) {
  if (!j.is_object()) throw InputError(where, "expected an object");
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw InputError(where + "." + key, "unknown key; allowed keys: " + list);
  }
}

DeviceProfile parse_device_fields(const nlohmann::json& j, const std::string& where);

}  // namespace

DeviceProfile parse_device(const nlohmann::json& j, const std::string& where) {
  try {
    return parse_device_fields(j, where);
  } catch (const nlohmann::json::exception& e) {
    // A value of the wrong type under "measured" or "sources": one line, not
    // the JSON library's exception text.
    throw InputError(where,
                     "malformed device profile: a value of the wrong type or a missing key "
                     "under \"measured\" or \"sources\"");
  }
}

namespace {

// "efficiency" and the half-precision MAC shares "efficiency_fp16" and
// "efficiency_bf16", each key defaulting to the FP32 share.
void parse_efficiencies(const nlohmann::json& j, const std::string& where, DeviceProfile* out) {
  DeviceProfile& d = *out;
  if (j.contains("efficiency")) {
    const auto& e = j.at("efficiency");
    const std::string ew = where + ".efficiency";
    check_keys(e, {"conv", "depthwise", "matmul", "elementwise", "per_op_s"}, ew);
    d.efficiency.conv = number(e, "conv", ew, false, d.efficiency.conv);
    d.efficiency.depthwise = number(e, "depthwise", ew, false, d.efficiency.depthwise);
    d.efficiency.matmul = number(e, "matmul", ew, false, d.efficiency.matmul);
    d.efficiency.elementwise = number(e, "elementwise", ew, false, d.efficiency.elementwise);
    d.efficiency.per_op_s = number(e, "per_op_s", ew, false, 0, true);
  }
  // Half-precision MAC shares: each key defaults to the FP32 share; a share
  // without its precision's peak would never be used, so it is refused.
  for (const char* p : {"fp16", "bf16"}) {
    const std::string key = std::string("efficiency_") + p;
    if (!j.contains(key)) continue;
    const std::string ew = where + "." + key;
    const double peak = std::string(p) == "fp16" ? d.peak_flops_fp16 : d.peak_flops_bf16;
    if (!(peak > 0))
      throw InputError(ew,
                       std::string("given without peak_flops_") + p + " (it would never apply)");
    const auto& e = j.at(key);
    check_keys(e, {"conv", "depthwise", "matmul"}, ew);
    Efficiency half = d.efficiency;
    half.conv = number(e, "conv", ew, false, half.conv);
    half.depthwise = number(e, "depthwise", ew, false, half.depthwise);
    half.matmul = number(e, "matmul", ew, false, half.matmul);
    (std::string(p) == "fp16" ? d.efficiency_fp16 : d.efficiency_bf16) = half;
  }
}

// "measured": what `splitsim profile` wrote, the unit timings among it.
void parse_measured(const nlohmann::json& m, const std::string& mw, DeviceProfile* out) {
  DeviceProfile& d = *out;
  check_keys(m, {"model", "input_shape", "batch", "in_flight", "threads", "units", "timing_spread"},
             mw);
  for (const char* key : {"model", "input_shape", "batch", "units"})
    jr::require_key(m, mw, key, "what `splitsim profile` writes");
  d.measured_model = jr::read_string(m.at("model"), mw + ".model");
  d.measured_input_shape = read_shape(m.at("input_shape"), mw + ".input_shape");
  d.measured_batch = jr::read_int(m.at("batch"), mw + ".batch", 1, limits::kMaxBatchSize);
  if (m.contains("threads")) d.threads = jr::read_int(m.at("threads"), mw + ".threads", 0, 4096);
  if (m.contains("in_flight"))
    d.measured_in_flight =
        jr::read_int(m.at("in_flight"), mw + ".in_flight", 1, limits::kMaxChunks);
  if (m.contains("timing_spread"))
    d.timing_spread =
        jr::read_number(m.at("timing_spread"), mw + ".timing_spread", {0, false, 1, true});
  const std::string uw = mw + ".units";
  jr::require_array(m.at("units"), uw, "one timing object per unit");
  for (size_t i = 0; i < m.at("units").size(); ++i) {
    const nlohmann::json& u = m.at("units")[i];
    const std::string at = jr::index_path(uw, i);
    jr::require_object(u, at, "a unit's timing {\"unit\", \"fwd_s\", \"bwd_s\", \"update_s\"}");
    jr::check_keys(u, at, {"unit", "fwd_s", "bwd_s", "update_s"});
    jr::require_key(u, at, "unit", "the unit's name");
    jr::require_key(u, at, "fwd_s", "the forward's measured seconds");
    jr::require_key(u, at, "bwd_s", "the backward's measured seconds");
    d.timings.push_back(
        {jr::read_string(u.at("unit"), at + ".unit"),
         measured_seconds(u.at("fwd_s"), at + ".fwd_s"),
         measured_seconds(u.at("bwd_s"), at + ".bwd_s"),
         u.contains("update_s") ? measured_seconds(u.at("update_s"), at + ".update_s") : 0.0});
  }
}

// "measured_codecs": a codec's measured encode and decode seconds.
void parse_measured_codecs(const nlohmann::json& list, const std::string& where,
                           DeviceProfile* out) {
  DeviceProfile& d = *out;
  if (!list.is_array()) throw InputError(where, "expected an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& c = list[i];
    const std::string cw = where + "[" + std::to_string(i) + "]";
    check_keys(c,
               {"codec", "shape", "batch", "encode_s", "decode_s", "sender_backward_s",
                "receiver_backward_s"},
               cw);
    CodecTiming t;
    t.codec = codec_to_json(parse_codec(c.at("codec"), cw + ".codec")).dump();
    for (const char* key : {"codec", "shape", "batch", "encode_s", "decode_s"})
      jr::require_key(c, cw, key, "what `splitsim profile` writes");
    t.shape = read_shape(c.at("shape"), cw + ".shape");
    t.batch = jr::read_int(c.at("batch"), cw + ".batch", 1, limits::kMaxBatchSize);
    t.encode_s = measured_seconds(c.at("encode_s"), cw + ".encode_s");
    t.decode_s = measured_seconds(c.at("decode_s"), cw + ".decode_s");
    for (const auto& [key, field] : {std::pair{"sender_backward_s", &t.sender_backward_s},
                                     std::pair{"receiver_backward_s", &t.receiver_backward_s}})
      if (c.contains(key)) *field = measured_seconds(c.at(key), cw + "." + key);
    d.codec_timings.push_back(std::move(t));
  }
}

DeviceProfile parse_device_fields(const nlohmann::json& j, const std::string& where) {
  check_keys(j,
             {"schema", "name", "description", "peak_flops", "peak_flops_fp16", "peak_flops_bf16",
              "memory_bandwidth_Bps", "memory_bytes", "efficiency", "efficiency_fp16",
              "efficiency_bf16", "sources", "measured", "measured_codecs", "fit"},
             where);
  if (j.value("schema", "") != "splitsim.device/1")
    throw InputError(where + ".schema", "expected \"splitsim.device/1\"");
  DeviceProfile d;
  if (!j.contains("name") || !j.at("name").is_string())
    throw InputError(where + ".name", "missing; expected a string");
  d.name = j.at("name").get<std::string>();
  d.description = j.value("description", "");
  d.peak_flops = number(j, "peak_flops", where, true, 0);
  d.peak_flops_fp16 = number(j, "peak_flops_fp16", where, false, 0);
  d.peak_flops_bf16 = number(j, "peak_flops_bf16", where, false, 0);
  d.memory_bandwidth_Bps = number(j, "memory_bandwidth_Bps", where, true, 0);
  d.memory_bytes = number(j, "memory_bytes", where, false, 0, true);
  parse_efficiencies(j, where, &d);
  if (j.contains("sources")) d.sources = j.at("sources").get<std::vector<std::string>>();
  if (j.contains("measured")) parse_measured(j.at("measured"), where + ".measured", &d);
  if (j.contains("measured_codecs"))
    parse_measured_codecs(j.at("measured_codecs"), where + ".measured_codecs", &d);
  return d;
}

}  // namespace

DeviceProfile load_device(const std::string& name_or_file,
                          const std::vector<std::string>& search_dirs, const std::string& where) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  const bool is_file = fs::path(name_or_file).extension() == ".json";
  if (is_file) {
    candidates.push_back(name_or_file);
  } else {
    for (const auto& dir : search_dirs)
      candidates.push_back(fs::path(dir) / (name_or_file + ".json"));
  }
  for (const auto& path : candidates) {
    std::error_code ec;
    // A missing name falls through to the list of known devices; anything
    // else that exists (a directory, a FIFO) is refused by read_input_file.
    if (!fs::exists(path, ec)) continue;
    nlohmann::json j;
    try {
      j = parse_json_file(path.string(), "device profile");
    } catch (const InputError& e) {
      // A duplicate key: "FILE:$.path", as parse_device names its errors.
      if (e.where().rfind('$', 0) != 0) throw;
      throw InputError(path.string() + ":" + e.where(), e.message());
    }
    return parse_device(j, path.string() + ":$");
  }
  std::string known;
  for (const auto& dir : search_dirs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json")
        known += (known.empty() ? "" : ", ") + entry.path().stem().string();
  }
  throw InputError(where, "no device profile \"" + name_or_file + "\"" +
                              (is_file         ? ""
                               : known.empty() ? "; no device profiles where it looked"
                                               : "; known devices: " + known) +
                              " (or give a path to a .json file)");
}

}  // namespace splitsim
