#pragma once
// NetnsLink: a real, shaped network link on this machine, for `splitsim
// validate`. Two network namespaces ("splitsim-<pid>-<n>-server" and
// "...-client") joined by a veth pair with addresses in a private /30
// (10.213.X.4k+1 and +2; only addresses inside namespaces created here are
// used, so nothing on the host's own network changes), lo and both veth
// ends up, and a shaper on BOTH ends, so each direction is shaped to the
// rate (full duplex): one htb class (the default) or a token bucket (tc
// tbf). No netem: these kernels lack it.
//
// Cleanup: the destructor deletes both namespaces (the veth pair goes with
// them). SIGINT/SIGTERM handlers (installed by the first link) kill the
// registered child process groups, detach the namespaces' bind mounts
// (umount2 + unlink: async-signal-safe, what `ip netns del` does) and
// re-raise the signal. remove_stale() deletes namespaces with the prefix
// whose creator pid is dead (a previous run killed with SIGKILL).
//
// No LibTorch here; every command runs through fork/exec (subprocess.h).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

// How a link is shaped. tbf cuts every GSO packet larger than its bucket
// into frames and releases them one by one from a timer; htb paces whole
// GSO packets (of NetnsLink::packet_segments, at line rate, then waits),
// which costs the cores less per byte (exec/validate/README.md "Host work
// per byte and per message").
enum class Shaper { kTbf, kHtb };
const char* shaper_name(Shaper s);  // "tbf", "htb"
// "tbf" or "htb"; throws std::invalid_argument naming the choices.
Shaper parse_shaper(const std::string& name);

class NetnsLink {
 public:
  static constexpr const char* kPrefix = "splitsim-";

  // "" when this process can build a link (euid 0 and `ip` and `tc` found on
  // PATH), else the reason ("not root", "no `ip` command (iproute2)").
  static std::string unavailable_reason();

  // The link is a wire: no transfer crosses faster than the rate by more
  // than one packet. TCP may hand the shaper packets of packet_segments
  // segments (the devices' gso_max_segs): as many as the rate carries in
  // kPacketTimeS, at least 1 and at most a veth's 45. With the kernel's 64
  // KiB packets and a bucket of 1 ms, a message up to both crossed at once
  // after an idle spell (a 32 KiB one at 10x a 300 Mbit/s rate), so the
  // fastest transfer of a run said nothing about the link
  // (exec/validate/README.md "The link is a wire").
  static constexpr double kPacketTimeS = 128e-6;
  static constexpr int64_t kSegmentBytes = 1448;  // a veth's mtu 1500 less IPv4 and TCP headers
  // A segment as the shaper counts it: with its Ethernet, IPv4 and TCP
  // (timestamps) headers.
  static constexpr int64_t kFrameBytes = kSegmentBytes + 66;
  static int packet_segments(double rate_bit_per_s);
  // The token bucket. htb's burst and cburst: one frame, whatever the rate
  // (htb still sends the packet that spends it whole). tbf's bucket:
  // max(1 ms at the rate, 4 KiB), as before the link was a wire: tbf
  // releases a frame per timer expiry once the bucket is spent, and with a
  // bucket of one frame it carried 69% of 200 Mbit/s. A tbf link lets
  // that bucket through at once after an idle spell.
  static int64_t burst_bytes(double rate_bit_per_s, Shaper shaper = Shaper::kHtb);
  // The largest packet TCP hands a qdisc on a device of `mtu` whose
  // segmentation offload takes up to `gso_max_size` bytes: whole segments of
  // mtu - 52 bytes (IPv4 and TCP headers with timestamps) that fit, 65,160 B
  // for a veth's 1500 and 65536.
  static int64_t gso_packet_bytes(int64_t gso_max_size, int64_t mtu);
  // The queue bound passed as tbf "latency" (a too short queue drops the
  // sender's packets and makes TCP back off below the rate).
  static constexpr double kQueueLatencyS = 0.2;
  // What a TCP socket in either namespace starts with as its receive buffer
  // (tcp_rmem's default, the kernel's 128 KiB when not set): with 128 KiB,
  // transfers of tens of kilobytes at 1 Gbit/s stalled 50-80 ms now and
  // then (the mechanism inside TCP is not known), which the simulator does
  // not model (exec/validate/README.md "TCP's receive buffer").
  static constexpr int64_t kReceiveBufferBytes = 4 << 20;
  // Linux's own default; BBR (some machines' default) mistakes htb's whole
  // GSO packets for a slower path and sends below the rate
  // (exec/validate/README.md "The link").
  static constexpr const char* kCongestionControl = "cubic";
  // Whether this kernel has `name` (tcp_available_congestion_control).
  static bool congestion_control_available(const std::string& name);
  // Throws std::invalid_argument naming the kernel's list when `name` is
  // neither "" nor available.
  static void check_congestion_control(const std::string& name);

  // Deletes namespaces named kPrefix<pid>-... whose pid is not alive.
  // Returns how many were removed.
  static int remove_stale();

  // REQUIRES: unavailable_reason() == "". Builds the link shaped to
  // `rate_bit_per_s`. Throws std::runtime_error naming the failed command
  // and its stderr (anything already created is removed first).
  // `congestion_control` (e.g. "cubic", "bbr") is what the runs over the
  // link use: exec sets it on each socket (ExecEndpoints), which root may
  // do with any algorithm the kernel has. It is also made the namespaces'
  // default where the host allows that (a namespace may only choose one of
  // the host's tcp_allowed_congestion_control, e.g. "reno bbr"); where not,
  // they keep the default they inherit (namespace_default()), and nothing
  // host-wide is changed. "" uses the inherited default everywhere. Throws
  // std::invalid_argument when the kernel lacks the algorithm. The defaults
  // are what validate measured its targets with (exec/validate/README.md
  // "The link").
  explicit NetnsLink(double rate_bit_per_s, Shaper shaper = Shaper::kHtb,
                     const std::string& congestion_control = kCongestionControl);
  ~NetnsLink();
  NetnsLink(const NetnsLink&) = delete;
  NetnsLink& operator=(const NetnsLink&) = delete;

  // Re-shapes both directions (tbf: tc qdisc replace; htb: tc class
  // change). Throws as the constructor.
  void set_rate(double rate_bit_per_s);
  // Drops `loss` (0 to 0.2) of the TCP packets each namespace receives, at
  // random (an nftables rule in its input hook: this kernel has no netem),
  // with packets of one segment on both ends, so that a drop is one
  // segment; 0 removes the rule and restores packet_segments. Throws
  // std::runtime_error naming the command when nft is missing or refuses.
  void set_loss(double loss);
  double loss() const { return loss_; }
  // Why set_loss cannot work here ("" when it can): nft not installed.
  static std::string loss_unavailable_reason();

  const std::string& server_netns() const { return server_ns_; }
  const std::string& client_netns() const { return client_ns_; }
  const std::string& server_address() const { return server_addr_; }  // 10.213.X.Y
  const std::string& client_address() const { return client_addr_; }
  double rate_bit_per_s() const { return rate_bit_per_s_; }
  Shaper shaper() const { return shaper_; }
  // The TCP congestion control the runs over the link use ("cubic", ...).
  const std::string& congestion_control() const { return congestion_control_; }
  // The namespaces' default for sockets nobody sets ("bbr" where the host
  // refused `congestion_control` as a namespace default).
  const std::string& namespace_default() const { return namespace_default_; }
  // What the simulator's link needs to act as this shaper
  // (network.burst_packet_bytes): htb sends a whole GSO packet whenever its
  // class's tokens are not in debt (packet_segments of the rate, one under
  // loss, no more than the veth's figures allow); tbf waits for the tokens (0).
  int64_t burst_packet_bytes() const;
  // "veth 200mbit each way, tc htb burst 1514 B, packets up to 2896 B,
  // TCP cubic, receive buffers from 4194304 B (netns A <-> B)"; "TCP cubic
  // set per socket (namespace default bbr)" where the host refused it as the
  // namespaces' default.
  std::string description() const;

  // The signal handler (installed here too, link or not: children run in
  // their own process groups, which Ctrl-C does not reach) kills this
  // process group before removing any namespaces. At most 40 at a time.
  static void register_child(pid_t pgid);
  static void unregister_child(pid_t pgid);
  // The same handler then removes `files` (names, at most 4) of the work
  // directory `dir` and the directory itself: only signal-safe unlink and
  // rmdir, so nothing else may live there. One directory at a time, at most
  // 70 files.
  static void register_work_dir(const std::string& dir, const std::vector<std::string>& files);
  static void unregister_work_dir();

 private:
  void shape(bool adding);  // both ends: the first time, or a change
  int segments() const;     // the devices' gso_max_segs: packet_segments, 1 under loss
  void remove() noexcept;

  std::string server_ns_, client_ns_;
  std::string server_addr_, client_addr_;
  double rate_bit_per_s_;
  Shaper shaper_;
  int64_t gso_packet_bytes_ = 0;  // the veth's largest packet (gso_packet_bytes)
  double loss_ = 0;
  std::string congestion_control_, namespace_default_;
  int slots_[2] = {-1, -1};  // both namespaces' in the signal handler's registry
};

}  // namespace splitsim
