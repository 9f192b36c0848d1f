// The TCP sockets of this process, found through /proc/self/fd.
//
// restrict_listeners_to: LibTorch 1.13's c10d TCPStore listens on every
// address (its options take a port, no address); a classic BPF socket filter
// on that listening socket drops every packet not addressed to the --listen
// address, SYNs included, so the store is reachable on that address only.
//
// set_congestion_control: Gloo opens its connections itself; they are
// found afterwards and switched with setsockopt(TCP_CONGESTION).
#include "splitsim/exec/tcp_sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/filter.h>
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

// This process's listening TCP sockets bound to `port`.
std::vector<int> listening_sockets(int port) {
  std::vector<int> fds;
  for (int fd : tcp_sockets()) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
      continue;
    sockaddr_storage addr{};
    len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6)
      bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) fds.push_back(fd);
  }
  return fds;
}

}  // namespace

int restrict_listeners_to(const std::string& host, int port) {
  in_addr want{};
  // A name is not resolved: "localhost" may reach the store as ::1, which an
  // IPv4 filter would drop.
  if (::inet_pton(AF_INET, host.c_str(), &want) != 1) return -1;
  if (want.s_addr == htonl(INADDR_ANY)) return 0;
  // Accept an IPv4 packet (also one reaching a dual-stack IPv6 socket)
  // whose destination is `host`; drop everything else.
  const uint32_t dst = ntohl(want.s_addr);
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, static_cast<uint32_t>(SKF_NET_OFF)),  // version, IHL
      BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(SKF_NET_OFF + 16)),  // daddr
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, dst, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),
      BPF_STMT(BPF_RET | BPF_K, 0),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  int attached = 0;
  for (int fd : listening_sockets(port)) {
    if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) != 0) return -1;
    // Locked: nothing later in this process can remove it by mistake.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof one);
    ++attached;
  }
  return attached;
}

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
