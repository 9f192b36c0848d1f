#pragma once
// The TCP sockets this process holds (found through /proc/self/fd), and the
// congestion control of every one, set after a library (Gloo) opened them.
// No LibTorch here.
#include <string>
#include <vector>

namespace splitsim {

// What set_congestion_control did to this process's TCP sockets.
struct CongestionControlResult {
  std::string requested;
  int sockets = 0;  // TCP sockets found
  int set = 0;      // of them now using `requested`
  // Non-empty when a socket refused it: the kernel's reason ("Operation not
  // permitted": neither root nor in tcp_allowed_congestion_control; "No such
  // file or directory": not in this kernel).
  std::string refusal;
  // The algorithms the sockets use after the call, sorted and unique,
  // joined by "+" ("cubic"; "bbr+cubic" when some refused).
  std::string in_use;
};

// Sets TCP congestion control `name` (e.g. "cubic") on every TCP socket
// this process holds. Per socket, root (CAP_NET_ADMIN) may choose any
// algorithm of the kernel's tcp_available_congestion_control; a namespace's
// default may only be one of the host's tcp_allowed_congestion_control, so
// this is how a run uses an algorithm the host does not allow by default.
// Connections already open switch at once (their window state restarts).
CongestionControlResult set_congestion_control(const std::string& name);

// The congestion control of TCP socket `fd` ("" when it is not one).
std::string congestion_control_of(int fd);

// This network namespace's default for new sockets
// (/proc/sys/net/ipv4/tcp_congestion_control), "" when unreadable.
std::string default_congestion_control();

// One line of /proc/sys/net/ipv4/FILE with its newline removed ("" when
// unreadable): "reno bbr cubic" for tcp_available_congestion_control.
std::string read_ipv4_sysctl(const std::string& file);

}  // namespace splitsim
