#include "splitsim/validate/netns_link.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "netns_registry.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/subprocess.h"
#include "splitsim/exec/tcp_sockets.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

constexpr const char* kNetnsDir = "/var/run/netns/";
constexpr const char* kServerDev = "ssv-server";  // inside the namespaces only
constexpr const char* kClientDev = "ssv-client";

// What the signal handler needs, in fixed storage (no allocation in the
// handler). Namespace slots are claimed by the links and switches alive in
// this process.
constexpr int kMaxNamespaces = 40;
constexpr int kMaxChildren = 40;
constexpr int kMaxWorkFiles = 2 + 2 * 34;
struct Registry {
  std::atomic<int> state[kMaxNamespaces];  // 0 free, 1 claimed, 2 armed (path valid)
  char paths[kMaxNamespaces][128];         // /var/run/netns/<name>
  std::atomic<pid_t> children[kMaxChildren];
  std::atomic<int> work_dir_state;  // 0 none, 1 being filled, 2 armed
  char work_dir[256];
  char work_files[kMaxWorkFiles][320];
};
Registry g_registry;
std::atomic<int> g_sequence{0};
std::atomic<bool> g_handlers_installed{false};

void on_signal(int sig) {
  for (auto& c : g_registry.children) {
    const pid_t pgid = c.exchange(0);
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
  for (int i = 0; i < kMaxNamespaces; ++i) {
    if (g_registry.state[i].exchange(0) != 2) continue;
    umount2(g_registry.paths[i], MNT_DETACH);
    unlink(g_registry.paths[i]);
  }
  if (g_registry.work_dir_state.exchange(0) == 2) {
    for (const char* file : g_registry.work_files) {
      if (file[0] != '\0') unlink(file);
    }
    rmdir(g_registry.work_dir);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

bool on_path(const std::string& name) {
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  dirs += ":/usr/sbin:/sbin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string file = dirs.substr(start, end - start) + "/" + name;
    if (end > start && access(file.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// The number after the first `key` in `text`, or `otherwise`.
int64_t number_after(const std::string& text, const std::string& key, int64_t otherwise) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return otherwise;
  const long long n = std::strtoll(text.c_str() + at + key.size(), nullptr, 10);
  return n > 0 ? n : otherwise;
}

std::string rate_arg(double bit_per_s) {
  return std::to_string(static_cast<long long>(std::llround(bit_per_s))) + "bit";
}

}  // namespace

namespace netns_internal {

void install_handlers() {
  if (g_handlers_installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int arm_namespace(const std::string& name) {
  install_handlers();
  for (int i = 0; i < kMaxNamespaces; ++i) {
    int expected = 0;
    if (!g_registry.state[i].compare_exchange_strong(expected, 1)) continue;
    // Fill the path, then arm the slot for the handler.
    std::snprintf(g_registry.paths[i], sizeof g_registry.paths[i], "%s%s", kNetnsDir, name.c_str());
    g_registry.state[i].store(2);
    return i;
  }
  throw std::runtime_error("more than " + std::to_string(kMaxNamespaces) +
                           " network namespaces alive in one process");
}

void disarm_namespace(int slot) {
  if (slot >= 0) g_registry.state[slot].store(0);
}

void delete_namespace(const std::string& ns) noexcept {
  if (access((kNetnsDir + ns).c_str(), F_OK) != 0) return;
  try {
    const CommandResult r = run_command({"ip", "netns", "del", ns});
    if (r.exit_code != 0)
      std::fprintf(stderr, "warning: could not delete network namespace %s: %s", ns.c_str(),
                   r.err.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: could not delete network namespace %s: %s\n", ns.c_str(),
                 e.what());
  }
}

void configure_tcp(const std::string& ns, const std::string& congestion_control) {
  run_checked({"ip", "-n", ns, "link", "set", "lo", "up"});
  // TCP remembers a destination's congestion state (ssthresh, RTT) across
  // connections: a run would start where the previous variant, at another
  // rate, left off. Every run starts afresh instead.
  run_checked(
      {"ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/tcp_no_metrics_save"});
  // Receive buffers start at kReceiveBufferBytes (the minimum and the
  // largest the kernel may grow one to are kept, the largest raised to it
  // if below).
  const std::string rcvbuf = std::to_string(NetnsLink::kReceiveBufferBytes);
  run_checked({"ip", "netns", "exec", ns, "sh", "-c",
               "set -- $(cat /proc/sys/net/ipv4/tcp_rmem) && echo \"$1 " + rcvbuf + " $(($3 > " +
                   rcvbuf + " ? $3 : " + rcvbuf + "))\" > /proc/sys/net/ipv4/tcp_rmem"});
  // Refused (EPERM, shown as an I/O error) where the host does not allow
  // it as a default: the runs set it per socket all the same.
  if (!congestion_control.empty())
    run_command({"ip", "netns", "exec", ns, "sh", "-c",
                 "echo " + congestion_control + " > /proc/sys/net/ipv4/tcp_congestion_control"});
}

std::string default_congestion_control(const std::string& ns) {
  std::string name =
      run_command({"ip", "netns", "exec", ns, "cat", "/proc/sys/net/ipv4/tcp_congestion_control"})
          .out;
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

void shape_device(const std::string& ns, const std::string& dev, double rate_bit_per_s,
                  Shaper shaper, bool adding, int segments) {
  if (segments <= 0) segments = NetnsLink::packet_segments(rate_bit_per_s);
  run_checked(
      {"ip", "-n", ns, "link", "set", "dev", dev, "gso_max_segs", std::to_string(segments)});
  const std::string burst = std::to_string(NetnsLink::burst_bytes(rate_bit_per_s, shaper));
  const std::string rate = rate_arg(rate_bit_per_s);
  if (shaper == Shaper::kTbf) {
    const std::string latency =
        std::to_string(static_cast<int>(NetnsLink::kQueueLatencyS * 1000)) + "ms";
    run_checked({"tc", "-n", ns, "qdisc", adding ? "add" : "replace", "dev", dev, "root", "tbf",
                 "rate", rate, "burst", burst, "latency", latency});
    return;
  }
  // One class that takes all traffic; its leaf queue is the device's (1000
  // packets, each up to a 64 KiB GSO packet).
  if (adding)
    run_checked({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
                 "default", "1"});
  run_checked({"tc",  "-n",    ns,       "class",  adding ? "add" : "change",
               "dev", dev,     "parent", "1:",     "classid",
               "1:1", "htb",   "rate",   rate,     "ceil",
               rate,  "burst", burst,    "cburst", burst});
}

int64_t device_gso_packet_bytes(const std::string& ns, const std::string& dev) {
  // `ip -d link` prints "mtu N" and "gso_max_size N" (the kernel's 65536
  // where an older iproute2 does not).
  const std::string details = run_command({"ip", "-d", "-n", ns, "link", "show", "dev", dev}).out;
  return NetnsLink::gso_packet_bytes(number_after(details, " gso_max_size ", 65536),
                                     number_after(details, " mtu ", 1500));
}

int next_sequence() { return g_sequence.fetch_add(1); }

}  // namespace netns_internal

using namespace netns_internal;

const char* shaper_name(Shaper s) { return s == Shaper::kHtb ? "htb" : "tbf"; }

Shaper parse_shaper(const std::string& name) {
  if (name == "tbf") return Shaper::kTbf;
  if (name == "htb") return Shaper::kHtb;
  throw std::invalid_argument("unknown shaper \"" + name + "\" (tbf or htb)");
}

std::string NetnsLink::unavailable_reason() {
  if (geteuid() != 0) return "not root";
  if (!on_path("ip")) return "no `ip` command (install iproute2)";
  if (!on_path("tc")) return "no `tc` command (install iproute2)";
  return "";
}

int NetnsLink::packet_segments(double rate_bit_per_s) {
  const double segments = rate_bit_per_s / 8 * kPacketTimeS / kSegmentBytes;
  return static_cast<int>(std::clamp(std::floor(segments), 1.0, 45.0));
}

int64_t NetnsLink::burst_bytes(double rate_bit_per_s, Shaper shaper) {
  if (shaper == Shaper::kHtb) return kFrameBytes;
  const double one_ms = rate_bit_per_s / 8 * 1e-3;
  return std::max<int64_t>(static_cast<int64_t>(std::ceil(one_ms)), 4096);
}

int64_t NetnsLink::gso_packet_bytes(int64_t gso_max_size, int64_t mtu) {
  const int64_t mss = mtu - 52;
  return mss > 0 ? std::max<int64_t>(gso_max_size / mss, 1) * mss : 0;
}

int NetnsLink::remove_stale() {
  DIR* dir = opendir(kNetnsDir);
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  const std::string prefix = kPrefix;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) stale.push_back(name);
  }
  closedir(dir);
  int removed = 0;
  for (const auto& name : stale)
    if (run_command({"ip", "netns", "del", name}).exit_code == 0) ++removed;
  return removed;
}

bool NetnsLink::congestion_control_available(const std::string& name) {
  // The kernel's list ("reno bbr cubic"), the same in every namespace.
  const std::string padded = " " + read_ipv4_sysctl("tcp_available_congestion_control") + " ";
  return !name.empty() && padded.find(" " + name + " ") != std::string::npos;
}

void NetnsLink::check_congestion_control(const std::string& name) {
  if (!name.empty() && !congestion_control_available(name))
    throw std::invalid_argument("TCP congestion control \"" + name +
                                "\" is not available here (this kernel has: " +
                                read_ipv4_sysctl("tcp_available_congestion_control") + ")");
}

NetnsLink::NetnsLink(double rate_bit_per_s, Shaper shaper, const std::string& congestion_control)
    : rate_bit_per_s_(rate_bit_per_s), shaper_(shaper) {
  if (!(rate_bit_per_s > 0)) throw std::invalid_argument("NetnsLink: rate must be > 0");
  check_congestion_control(congestion_control);
  const int seq = next_sequence();
  const std::string base =
      std::string(kPrefix) + std::to_string(getpid()) + "-" + std::to_string(seq);
  server_ns_ = base + "-server";
  client_ns_ = base + "-client";
  // A private /30 per link: 10.213.X.(4k+1, 4k+2).
  const int x = static_cast<int>(getpid() % 250), k = seq % 64;
  server_addr_ = "10.213." + std::to_string(x) + "." + std::to_string(4 * k + 1);
  client_addr_ = "10.213." + std::to_string(x) + "." + std::to_string(4 * k + 2);

  try {
    slots_[0] = arm_namespace(server_ns_);
    slots_[1] = arm_namespace(client_ns_);
    run_checked({"ip", "netns", "add", server_ns_});
    run_checked({"ip", "netns", "add", client_ns_});
    run_checked({"ip", "-n", server_ns_, "link", "add", kServerDev, "type", "veth", "peer", "name",
                 kClientDev, "netns", client_ns_});
    run_checked({"ip", "-n", server_ns_, "addr", "add", server_addr_ + "/30", "dev", kServerDev});
    run_checked({"ip", "-n", client_ns_, "addr", "add", client_addr_ + "/30", "dev", kClientDev});
    for (const auto& [ns, dev] : {std::pair{server_ns_, kServerDev}, {client_ns_, kClientDev}}) {
      run_checked({"ip", "-n", ns, "link", "set", dev, "up"});
      configure_tcp(ns, congestion_control);
    }
    namespace_default_ = default_congestion_control(server_ns_);
    congestion_control_ = congestion_control.empty() ? namespace_default_ : congestion_control;
    gso_packet_bytes_ = device_gso_packet_bytes(server_ns_, kServerDev);
    shape(true);
  } catch (...) {
    remove();
    throw;
  }
}

NetnsLink::~NetnsLink() { remove(); }

void NetnsLink::shape(bool adding) {
  shape_device(server_ns_, kServerDev, rate_bit_per_s_, shaper_, adding, segments());
  shape_device(client_ns_, kClientDev, rate_bit_per_s_, shaper_, adding, segments());
}

int NetnsLink::segments() const { return loss_ > 0 ? 1 : packet_segments(rate_bit_per_s_); }

int64_t NetnsLink::burst_packet_bytes() const {
  if (shaper_ != Shaper::kHtb) return 0;
  return std::min(gso_packet_bytes_, segments() * kSegmentBytes);
}

void NetnsLink::set_rate(double rate_bit_per_s) {
  if (!(rate_bit_per_s > 0)) throw std::invalid_argument("NetnsLink: rate must be > 0");
  rate_bit_per_s_ = rate_bit_per_s;
  shape(false);
}

std::string NetnsLink::loss_unavailable_reason() {
  return run_command({"sh", "-c", "command -v nft"}).out.empty()
             ? "nft is not installed (Debian package nftables)"
             : "";
}

void NetnsLink::set_loss(double loss) {
  if (!(loss >= 0 && loss <= 0.2))
    throw std::invalid_argument("NetnsLink: loss must be in [0, 0.2]");
  if (loss == loss_) return;
  if (loss > 0 && !loss_unavailable_reason().empty())
    throw std::runtime_error("NetnsLink: " + loss_unavailable_reason());
  const std::string per_100k = std::to_string(static_cast<int64_t>(std::llround(loss * 100000)));
  for (const std::string& ns : {server_ns_, client_ns_}) {
    if (loss_ > 0)
      run_checked({"ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "splitsim_loss"});
    if (loss > 0)
      run_checked({"ip", "netns", "exec", ns, "nft",
                   "add table inet splitsim_loss; add chain inet "
                   "splitsim_loss input { type filter hook input priority 0; }; add rule inet "
                   "splitsim_loss input meta l4proto tcp numgen random mod 100000 < " +
                       per_100k + " counter drop"});
  }
  // One segment per packet under loss (a dropped GSO packet would be
  // several segments at once).
  loss_ = loss;
  shape(false);
}

std::string NetnsLink::description() const {
  const std::string tcp =
      congestion_control_ == namespace_default_
          ? congestion_control_
          : congestion_control_ + " set per socket (namespace default " + namespace_default_ + ")";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "veth %s each way, tc %s burst %lld B%s, TCP %s, receive buffers from %lld B "
                "(netns %s <-> %s)",
                format_link_rate(rate_bit_per_s_).c_str(), shaper_name(shaper_),
                static_cast<long long>(burst_bytes(rate_bit_per_s_, shaper_)),
                burst_packet_bytes() > 0
                    ? (", packets up to " + std::to_string(burst_packet_bytes()) + " B").c_str()
                    : "",
                tcp.c_str(), static_cast<long long>(kReceiveBufferBytes), server_ns_.c_str(),
                client_ns_.c_str());
  if (loss_ > 0)
    return std::string(buf) + ", " + format_percent(loss_, 2) +
           " of TCP packets dropped at random each way (nftables), one segment per packet";
  return buf;
}

void NetnsLink::remove() noexcept {
  for (int& slot : slots_) {
    disarm_namespace(slot);
    slot = -1;
  }
  delete_namespace(server_ns_);
  delete_namespace(client_ns_);
}

void NetnsLink::register_child(pid_t pgid) {
  install_handlers();  // also without a link: Ctrl-C must not orphan the group
  for (auto& c : g_registry.children) {
    pid_t expected = 0;
    if (c.compare_exchange_strong(expected, pgid)) return;
  }
}

void NetnsLink::register_work_dir(const std::string& dir, const std::vector<std::string>& files) {
  install_handlers();
  int expected = 0;
  if (dir.size() >= sizeof g_registry.work_dir || files.size() > kMaxWorkFiles) return;
  if (!g_registry.work_dir_state.compare_exchange_strong(expected, 1)) return;
  std::snprintf(g_registry.work_dir, sizeof g_registry.work_dir, "%s", dir.c_str());
  for (int i = 0; i < kMaxWorkFiles; ++i) {
    const std::string path = i < static_cast<int>(files.size()) ? dir + "/" + files[i] : "";
    std::snprintf(g_registry.work_files[i], sizeof g_registry.work_files[i], "%s", path.c_str());
  }
  g_registry.work_dir_state.store(2);
}

void NetnsLink::unregister_work_dir() { g_registry.work_dir_state.store(0); }

void NetnsLink::unregister_child(pid_t pgid) {
  for (auto& c : g_registry.children) {
    pid_t expected = pgid;
    c.compare_exchange_strong(expected, 0);
  }
}

}  // namespace splitsim
