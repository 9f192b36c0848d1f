#pragma once
// Reading files the user names (scenario, device, explore space, bandwidth
// trace, cached profile) within fixed limits, so that no input can crash the
// parser, block the reader or exhaust memory (scenarios/FORMAT.md "Input
// limits"). Every refusal is an InputError naming the file.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace splitsim {

// Largest input file read, in bytes.
constexpr size_t kMaxInputFileBytes = size_t{16} << 20;
// Deepest nesting of arrays and objects in a JSON input. The JSON library
// recurses per level; a scenario needs fewer than 10.
constexpr int kMaxJsonDepth = 64;
// Longest JSON string (key or value), in bytes.
constexpr size_t kMaxJsonStringBytes = size_t{64} << 10;

// "a directory", "a FIFO", "a character device", ... for a stat mode
// (st_mode): what a message says a path is.
std::string file_kind_name(unsigned int mode);

// Reads the whole of `path`. Refuses anything but a regular file
// (directories, FIFOs, devices such as /dev/zero) without blocking, and files
// over `max_bytes`. `what` names the file's role in messages ("scenario
// file"). Throws InputError(path, ...).
std::string read_input_file(const std::string& path, const std::string& what,
                            size_t max_bytes = kMaxInputFileBytes);

// Throws InputError("file:line:column", ...) when `text` nests arrays and
// objects deeper than kMaxJsonDepth or holds a string longer than
// kMaxJsonStringBytes. Strings and escapes are skipped correctly; other syntax
// is left to the parser.
void check_json_limits(const std::string& text, const std::string& file);

// read_input_file + check_json_limits + parse. Syntax errors and numbers
// that overflow a double become InputError("file:line:column", ...); a key
// given twice in one object becomes InputError at its JSON path
// ("$.network.latency_s: duplicate key \"latency_s\" in FILE; ...").
nlohmann::json parse_json_file(const std::string& path, const std::string& what);

// Parses `text` (already read from `file`) the same way.
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

// "file:line:column" of byte offset `pos` (0-based) of `text`.
std::string text_position(const std::string& text, size_t pos, const std::string& file);

}  // namespace splitsim
