#include "flag_checks.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace splitsim {
namespace {

std::string show(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

CLI::Validator int_range(int64_t lo, int64_t hi) {
  const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long x = std::strtoll(text.c_str(), &end, 10);
        const bool whole = !text.empty() && end != nullptr && *end == '\0';
        if (!whole || errno == ERANGE || x < lo || x > hi) {
          return "must be " + range + ", got \"" + text.substr(0, 40) + "\"";
        }
        return "";
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator congestion_control_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        bool ok = !name.empty() && name.size() <= 15;
        for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
        return ok ? ""
                  : "not a TCP congestion control name (e.g. cubic, reno, bbr): \"" +
                        name.substr(0, 40) + "\"";
      },
      "NAME");
}

void add_congestion_control_flag(CLI::App* sub, std::string* name) {
  sub->add_option("--tcp-congestion-control", *name,
                  "TCP congestion control for this process's connections, set on each socket "
                  "(one of /proc/sys/net/ipv4/tcp_available_congestion_control; root may pick "
                  "one the host does not allow by default); every side passes the same. "
                  "Default: the network namespace's")
      ->check(congestion_control_name());
}

CLI::Validator number_range(double lo, double hi, bool lo_open) {
  const std::string range =
      "a number in " + std::string(lo_open ? "(" : "[") + show(lo) + ", " + show(hi) + "]";
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        // Decimal only: strtod also reads hexadecimal ("0x10"), "inf" and "nan".
        const bool whole = !text.empty() && end != nullptr && *end == '\0' &&
                           text.find_first_not_of("+-0123456789.eE") == std::string::npos;
        const bool below = lo_open ? !(x > lo) : !(x >= lo);
        if (!whole || !std::isfinite(x) || below || !(x <= hi)) {
          return "must be " + range + ", got \"" + text.substr(0, 40) + "\"";
        }
        return "";
      },
      "NUM in " + std::string(lo_open ? "(" : "[") + show(lo) + ", " + show(hi) + "]");
}

InputError as_flag_error(const CLI::App& sub, const InputError& e) {
  const std::string& field = e.where();
  if (field.empty() ||
      field.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    return e;
  std::string flag = "--" + field;
  for (char& c : flag) c = c == '_' ? '-' : c;
  if (sub.get_option_no_throw(flag) == nullptr) return e;
  return InputError(flag, e.message());
}

std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const std::string word = argv[1];
  if (word.empty() || word[0] == '-') return "";
  std::string valid;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return "";
    valid += (valid.empty() ? "" : ", ") + sub->get_name();
  }
  return "unknown subcommand \"" + word.substr(0, 60) + "\"; valid: " + valid;
}

}  // namespace splitsim
