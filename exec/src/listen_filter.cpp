// restrict_listeners_to: LibTorch 1.13's c10d TCPStore listens on every
// address (its options take a port, no address); a classic BPF socket filter
// on that listening socket drops every packet not addressed to the --listen
// address, SYNs included, so the store is reachable on that address only.
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "splitsim/exec/gloo_transport.h"

namespace splitsim {
namespace {

// This process's listening TCP sockets bound to `port`.
std::vector<int> listening_sockets(int port) {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM)
      continue;
    len = sizeof listening;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        !listening)
      continue;
    sockaddr_storage addr{};
    len = sizeof addr;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6)
      bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
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

}  // namespace splitsim
