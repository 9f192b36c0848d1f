#include "json_read.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "splitsim/costmodel/errors.h"

namespace splitsim::json_read {
namespace {

constexpr size_t kShowMax = 60;

bool is_identifier(const std::string& key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string format_bound(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > kShowMax) s = s.substr(0, kShowMax - 3) + "...";
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // Close enough: at most 2 edits (1 for words of up to 3 characters).
  const size_t limit = word.size() <= 3 ? 1 : 2;
  size_t best = limit + 1;
  std::string best_word;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  if (best_word.empty()) return "";
  return "; did you mean \"" + best_word + "\"?";
}

std::string member_path(const std::string& path, const std::string& key) {
  if (is_identifier(key)) return path + "." + key;
  return path + "[" + json(key).dump() + "]";
}

std::string index_path(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void require_object(const json& v, const std::string& path, const std::string& what) {
  if (!v.is_object()) throw InputError(path, "expected " + what + ", got " + show(v));
}

void require_array(const json& v, const std::string& path, const std::string& what,
                   size_t min_size) {
  if (!v.is_array()) throw InputError(path, "expected " + what + ", got " + show(v));
  if (v.size() < min_size) {
    throw InputError(path, "expected " + what + ", got " + std::to_string(v.size()) +
                               (v.size() == 1 ? " entry" : " entries"));
  }
}

void check_keys(const json& v, const std::string& path, const std::vector<std::string>& allowed) {
  for (const auto& item : v.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end()) continue;
    throw InputError(member_path(path, item.key()), "unknown key \"" + item.key() +
                                                        "\"; allowed keys: " + join(allowed) +
                                                        did_you_mean(item.key(), allowed));
  }
}

void require_key(const json& v, const std::string& path, const std::string& key,
                 const std::string& what) {
  if (!v.contains(key)) {
    throw InputError(member_path(path, key),
                     "missing required key \"" + key + "\"; expected " + what);
  }
}

int64_t read_int(const json& v, const std::string& path, int64_t min, int64_t max) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::string expected;
  if (min == 1 && max == kMax) {
    expected = "a positive integer";
  } else if (min == 0 && max == kMax) {
    expected = "a non-negative integer";
  } else if (max == kMax) {
    expected = "an integer >= " + std::to_string(min);
  } else {
    expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  }
  const std::string message = "expected " + expected + ", got " + show(v);
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(kMax)) throw InputError(path, message);
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    // 9.2e18 is the largest double below 2^63.
    if (d != std::floor(d) || std::fabs(d) > 9.2e18) throw InputError(path, message);
    x = static_cast<int64_t>(d);
  } else {
    throw InputError(path, message);
  }
  if (x < min || x > max) throw InputError(path, message);
  return x;
}

std::string NumberRange::describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && !has_hi && lo == 0) return lo_open ? "a positive number" : "a non-negative number";
  if (!has_lo && !has_hi) return "a number";
  if (!has_hi) return "a number " + std::string(lo_open ? "> " : ">= ") + format_bound(lo);
  if (!has_lo) return "a number " + std::string(hi_open ? "< " : "<= ") + format_bound(hi);
  return "a number in " + std::string(lo_open ? "(" : "[") + format_bound(lo) + ", " +
         format_bound(hi) + (hi_open ? ")" : "]");
}

double read_number(const json& v, const std::string& path, const NumberRange& range) {
  const std::string message = "expected " + range.describe() + ", got " + show(v);
  if (!v.is_number()) throw InputError(path, message);
  const double x = v.get<double>();
  const bool below = range.lo_open ? x <= range.lo : x < range.lo;
  const bool above = range.hi_open ? x >= range.hi : x > range.hi;
  if (below || above) throw InputError(path, message);
  return x;
}

std::string read_string(const json& v, const std::string& path, bool allow_empty) {
  if (!v.is_string()) throw InputError(path, "expected a string, got " + show(v));
  std::string s = v.get<std::string>();
  if (s.empty() && !allow_empty) throw InputError(path, "expected a non-empty string, got \"\"");
  return s;
}

void check_label_text(const std::string& s, const std::string& where) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    // Sequence length and the smallest code point it may encode (no overlongs).
    size_t len = 1;
    uint32_t cp = c, min = 0;
    if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07u, min = 0x10000;
    } else if (c >= 0xE0) {
      len = 3, cp = c & 0x0Fu, min = 0x800;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1Fu, min = 0x80;
    } else if (c >= 0x80) {
      len = 0;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (b[i + k] & 0xC0u) == 0x80u;
      cp = (cp << 6) | (b[i + k] & 0x3Fu);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      throw InputError(where, "not valid UTF-8 at byte " + std::to_string(i) +
                                  " of the label; give labels as UTF-8 text");
    }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
      throw InputError(where, std::string("control character ") + code + " at byte " +
                                  std::to_string(i) +
                                  " of the label; labels are printed text: give letters, "
                                  "digits, spaces and punctuation");
    }
    i += len;
  }
}

std::string read_label(const json& v, const std::string& path) {
  std::string s = read_string(v, path);
  check_label_text(s, path);
  return s;
}

bool read_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) throw InputError(path, "expected true or false, got " + show(v));
  return v.get<bool>();
}

std::string read_choice(const json& v, const std::string& path, const std::string& what,
                        const std::vector<std::string>& allowed) {
  if (!v.is_string()) {
    throw InputError(path,
                     "expected a " + what + " name (one of " + join(allowed) + "), got " + show(v));
  }
  const std::string s = v.get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    throw InputError(path, "unknown " + what + " \"" + s + "\"; allowed: " + join(allowed) +
                               did_you_mean(s, allowed));
  }
  return s;
}

}  // namespace splitsim::json_read
