#include "splitsim/exec/cpu_accounting.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace splitsim {
namespace {

double timeval_s(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; }

double clock_s(clockid_t id) {
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double jiffy_s() {
  const long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
}

}  // namespace

void parse_proc_stat(const std::string& text, CpuTimes* all, std::vector<CpuTimes>* per_cpu) {
  std::istringstream lines(text);
  std::string line;
  per_cpu->clear();
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream f(line);
    std::string name;
    CpuTimes t;
    f >> name >> t.user >> t.nice >> t.system >> t.idle >> t.iowait >> t.irq >> t.softirq >>
        t.steal;
    if (!f && !f.eof()) continue;
    if (name == "cpu") {
      *all = t;
    } else {
      const int index = std::atoi(name.c_str() + 3);
      if (index < 0 || index > 4096) continue;
      if (per_cpu->size() <= static_cast<size_t>(index)) per_cpu->resize(index + 1);
      (*per_cpu)[static_cast<size_t>(index)] = t;
    }
  }
}

CpuSnapshot take_cpu_snapshot() {
  CpuSnapshot s;
  s.wall_s = clock_s(CLOCK_MONOTONIC);
  parse_proc_stat(read_text("/proc/stat"), &s.all, &s.per_cpu);
  s.self_cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  rusage ru{};
  if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
    s.children_cpu_s = timeval_s(ru.ru_utime) + timeval_s(ru.ru_stime);
    s.children_sys_s = timeval_s(ru.ru_stime);
  }
  std::istringstream load(read_text("/proc/loadavg"));
  load >> s.load_1m;
  return s;
}

CpuConditions cpu_conditions(const CpuSnapshot& a, const CpuSnapshot& b) {
  CpuConditions c;
  c.wall_s = b.wall_s - a.wall_s;
  c.load_1m = b.load_1m;
  c.children_cpu_s = b.children_cpu_s - a.children_cpu_s;
  c.children_sys_s = b.children_sys_s - a.children_sys_s;
  const int64_t total = b.all.total() - a.all.total();
  if (total > 0) c.steal_fraction = static_cast<double>(b.all.steal - a.all.steal) / total;
  const double tasks_s = static_cast<double>((b.all.user + b.all.nice + b.all.system) -
                                             (a.all.user + a.all.nice + a.all.system)) *
                         jiffy_s();
  const double ours_s = (b.self_cpu_s - a.self_cpu_s) + (b.children_cpu_s - a.children_cpu_s);
  const double cpus = static_cast<double>(std::max<size_t>(1, b.per_cpu.size()));
  if (c.wall_s > 0) c.foreign_cpu_fraction = std::max(0.0, tasks_s - ours_s) / (cpus * c.wall_s);
  return c;
}

double cpu_busy_s(const CpuSnapshot& a, const CpuSnapshot& b, int cpu) {
  if (cpu < 0 || static_cast<size_t>(cpu) >= a.per_cpu.size() ||
      static_cast<size_t>(cpu) >= b.per_cpu.size())
    return 0;
  const auto i = static_cast<size_t>(cpu);
  return static_cast<double>(b.per_cpu[i].busy() - a.per_cpu[i].busy()) * jiffy_s();
}

double cpu_interrupt_s(const CpuSnapshot& a, const CpuSnapshot& b, int cpu) {
  if (cpu < 0 || static_cast<size_t>(cpu) >= a.per_cpu.size() ||
      static_cast<size_t>(cpu) >= b.per_cpu.size())
    return 0;
  const CpuTimes& x = a.per_cpu[static_cast<size_t>(cpu)];
  const CpuTimes& y = b.per_cpu[static_cast<size_t>(cpu)];
  return static_cast<double>((y.irq + y.softirq) - (x.irq + x.softirq)) * jiffy_s();
}

double ksoftirqd_cpu_s(int cpu) {
  const std::string want = "ksoftirqd/" + std::to_string(cpu);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string comm = read_text((e.path() / "comm").c_str());
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
    if (comm != want) continue;
    // /proc/PID/stat: "pid (comm) state ..." with utime, stime the 14th and 15th fields.
    const std::string stat = read_text((e.path() / "stat").c_str());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream f(stat.substr(close + 2));
    std::string field;
    int64_t utime = 0, stime = 0;
    for (int i = 3; i <= 13 && (f >> field); ++i) {
    }
    f >> utime >> stime;
    return static_cast<double>(utime + stime) * jiffy_s();
  }
  return 0;
}

double process_cpu_s() { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

std::string disturbance(const CpuConditions& c, const DisturbanceLimits& limits) {
  char buf[160];
  std::string out;
  if (c.steal_fraction > limits.steal_fraction) {
    std::snprintf(buf, sizeof buf, "steal %.1f%%", 100 * c.steal_fraction);
    out += buf;
  }
  if (c.foreign_cpu_fraction > limits.foreign_cpu_fraction) {
    std::snprintf(buf, sizeof buf, "%sother processes %.1f%% of the CPUs", out.empty() ? "" : ", ",
                  100 * c.foreign_cpu_fraction);
    out += buf;
  }
  return out;
}

std::string cpu_model_from_cpuinfo(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t first = line.find_first_not_of(" \t", colon + 1);
    if (first == std::string::npos) return "";
    const size_t last = line.find_last_not_of(" \t\r");
    return line.substr(first, last - first + 1);
  }
  return "";
}

MachineDescription describe_this_machine() {
  MachineDescription m;
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  m.cpu_model = cpu_model_from_cpuinfo(text.str());
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = online > 0 ? static_cast<int>(online) : 0;
  return m;
}

std::string machine_text(const MachineDescription& m) {
  std::string out;
  const auto add = [&out](const std::string& part) {
    if (!part.empty()) out += (out.empty() ? "" : ", ") + part;
  };
  add(m.kernel);
  add(m.cpu_model);
  if (m.cpus > 0) add(std::to_string(m.cpus) + (m.cpus == 1 ? " CPU" : " CPUs"));
  return out.empty() ? "unknown" : out;
}

}  // namespace splitsim
