#pragma once
// Strict readers for user-written JSON (scenario files, codec objects).
// Every reader takes the JSON path of the value it reads ("$.network.latency_s")
// and throws InputError at that path with a message that says what was
// expected and what was found ("expected a positive integer, got \"4\"").
// Internal to splitsim_core.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace splitsim::json_read {

using nlohmann::json;

// "a, b, c".
std::string join(const std::vector<std::string>& items);
// The value as compact JSON, shortened to about 60 characters.
std::string show(const json& v);
// Levenshtein distance (for "did you mean").
size_t edit_distance(const std::string& a, const std::string& b);
// Returns "; did you mean \"x\"?" when some `candidates` entry is close to
// `word`, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// Path of a member: `path.key`, or `path["key"]` when key is not an identifier.
std::string member_path(const std::string& path, const std::string& key);
// Path of an array element: `path[i]`.
std::string index_path(const std::string& path, size_t i);

// Throws unless `v` is an object; `what` names what was expected there
// ("a codec object such as {\"method\": \"none\"}").
void require_object(const json& v, const std::string& path, const std::string& what);
// Throws unless `v` is an array with at least `min_size` elements.
void require_array(const json& v, const std::string& path, const std::string& what,
                   size_t min_size = 0);
// REQUIRES: v is an object. Throws at the first key of `v` not in `allowed`,
// listing the allowed keys and the closest one.
void check_keys(const json& v, const std::string& path, const std::vector<std::string>& allowed);
// REQUIRES: v is an object. Throws at `path.key` when `key` is missing;
// `what` describes the value expected there.
void require_key(const json& v, const std::string& path, const std::string& key,
                 const std::string& what);

// An integer in [min, max]. Integral floats (1e3) are accepted; booleans,
// strings and fractions are not.
int64_t read_int(const json& v, const std::string& path, int64_t min = 1,
                 int64_t max = std::numeric_limits<int64_t>::max());

// A number in a range; each bound is inclusive or open.
struct NumberRange {
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_open = false;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_open = false;
  std::string describe() const;  // "a positive number", "a number in (0, 1]"
};
inline NumberRange positive() { return {0, true}; }
inline NumberRange non_negative() { return {0, false}; }
inline NumberRange fraction() { return {0, true, 1, false}; }  // (0, 1]
double read_number(const json& v, const std::string& path, const NumberRange& range);

// A string; empty strings are refused unless `allow_empty`.
std::string read_string(const json& v, const std::string& path, bool allow_empty = false);
bool read_bool(const json& v, const std::string& path);
// Throws InputError(where, ...) unless `s` is valid UTF-8 free of control
// characters (U+0000 to U+001F, U+007F to U+009F): a label that is printed
// to a terminal, written to CSV and JSON, and matched against others.
void check_label_text(const std::string& s, const std::string& where);
// A non-empty string that passes check_label_text.
std::string read_label(const json& v, const std::string& path);
// One of `allowed`; `what` names the kind of value ("schedule").
std::string read_choice(const json& v, const std::string& path, const std::string& what,
                        const std::vector<std::string>& allowed);

}  // namespace splitsim::json_read
