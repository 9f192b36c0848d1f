// The TCP sockets of this process, found through /proc/self/fd.
//
// set_congestion_control: Gloo opens its connections itself; they are
// found afterwards and switched with setsockopt(TCP_CONGESTION).
#include "splitsim/exec/tcp_sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace splitsim {
namespace {

// Every TCP socket (IPv4 or IPv6, stream, protocol TCP) this process holds.
std::vector<int> tcp_sockets() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    int type = 0, protocol = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM)
      continue;
    len = sizeof protocol;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 ||
        protocol != IPPROTO_TCP)
      continue;
    fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  return fds;
}

}  // namespace

std::string congestion_control_of(int fd) {
  char name[16] = {};  // TCP_CA_NAME_MAX (linux/tcp.h)
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, sizeof name));
}

CongestionControlResult set_congestion_control(const std::string& name) {
  CongestionControlResult r;
  r.requested = name;
  std::set<std::string> in_use;
  for (int fd : tcp_sockets()) {
    ++r.sockets;
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0)
      ++r.set;
    else if (r.refusal.empty())
      r.refusal = std::strerror(errno);
    const std::string now = congestion_control_of(fd);
    if (!now.empty()) in_use.insert(now);
  }
  for (const auto& a : in_use) r.in_use += (r.in_use.empty() ? "" : "+") + a;
  return r;
}

std::string read_ipv4_sysctl(const std::string& file) {
  std::string text;
  if (FILE* f = std::fopen(("/proc/sys/net/ipv4/" + file).c_str(), "r")) {
    char buf[512] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) text = buf;
    std::fclose(f);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string default_congestion_control() { return read_ipv4_sysctl("tcp_congestion_control"); }

}  // namespace splitsim
