// The link probe's timed transfers after idle (link_probe.h): single
// messages and two-tensor transfers by size, and their medians.
#include "link_probe_single.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include "splitsim/costmodel/median.h"

namespace splitsim {
namespace {

constexpr int kSingleTag = 3;  // single messages and their acknowledgements
constexpr int kAckTag = 4;

// The tensors of one timed transfer: `bytes`, and `tail_bytes` after it
// as a tensor of its own where > 0.
std::vector<torch::Tensor> transfer_tensors(int64_t bytes, int64_t tail_bytes, bool filled) {
  std::vector<torch::Tensor> v;
  for (const int64_t n : {bytes, tail_bytes})
    if (n > 0)
      v.push_back(filled ? torch::ones({n}, torch::kUInt8) : torch::empty({n}, torch::kUInt8));
  return v;
}

// One message of `bytes` (and its tail) after `gap_s` of silence, timed as
// exec times a transfer: from the send being posted (the sender's clock) to
// the receive's completion (the receiver's), each in seconds since its
// `start`. The receiver answers with that completion time once it has
// every byte. The sender returns {posted, completed}, the receiver {}.
std::array<double, 2> timed_message(Transport& t, bool sending, int64_t bytes, int64_t tail_bytes,
                                    double gap_s, ExecClock::time_point start,
                                    std::chrono::milliseconds timeout) {
  const int peer = 1 - t.rank();
  const auto since_start = [&](ExecClock::time_point p) {
    return std::chrono::duration<double>(p - start).count();
  };
  auto ack = torch::zeros({1}, torch::kFloat64);
  if (!sending) {
    auto in = t.recv(transfer_tensors(bytes, tail_bytes, false), peer, kSingleTag);
    in->wait(timeout);
    ack.fill_(since_start(in->completed_at()));
    t.send({ack}, peer, kAckTag)->wait(timeout);
    return {};
  }
  const std::vector<torch::Tensor> payload = transfer_tensors(bytes, tail_bytes, true);
  std::this_thread::sleep_for(std::chrono::duration<double>(gap_s));
  auto answer = t.recv({ack}, peer, kAckTag);
  const double posted = since_start(ExecClock::now());
  t.send(payload, peer, kSingleTag)->wait(timeout);
  answer->wait(timeout);
  return {posted, ack.item<double>()};
}

// 1 KiB up to `max_bytes`, four sizes per octave (a step of a shaper's
// packet shows between two of them).
std::vector<int64_t> ladder(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int k = 0;; ++k) {
    const int64_t b = std::llround(1024 * std::pow(2.0, k / 4.0));
    if (b > std::max<int64_t>(max_bytes, 1024)) break;
    sizes.push_back(b);
  }
  return sizes;
}

}  // namespace

// For each size, each way in turn, `repeats` times.
std::vector<double> single_messages(Transport& t, const LinkProbeOptions& o,
                                    ExecClock::time_point start) {
  const bool server = t.rank() == 0;
  std::vector<double> mine;
  for (const auto& [max_bytes, tail] :
       {std::pair{o.single_max_bytes, int64_t{0}}, {o.pair_max_bytes, o.pair_tail_bytes}}) {
    if (max_bytes <= 0) continue;
    for (const int64_t bytes : ladder(max_bytes))
      for (int i = 0; i < o.single_repeats; ++i)
        for (const bool up : {true, false}) {
          const bool sending = up != server;
          const auto times =
              timed_message(t, sending, bytes, tail, o.single_gap_s, start, o.timeout);
          if (sending) mine.insert(mine.end(), times.begin(), times.end());
        }
  }
  return mine;
}

std::vector<TransferSample> timed_samples(const std::vector<double>& times, size_t* at, int repeats,
                                          int64_t max_bytes, int64_t tail_bytes, double offset_s) {
  const size_t n = static_cast<size_t>(std::max(repeats, 1));
  std::vector<TransferSample> out;
  if (max_bytes <= 0) return out;
  for (const int64_t bytes : ladder(max_bytes)) {
    if (*at + 2 * n > times.size()) break;
    std::vector<double> one_way;
    for (size_t i = 0; i < n; ++i, *at += 2)
      one_way.push_back(times[*at + 1] - offset_s - times[*at]);
    out.push_back({bytes, std::max(median(one_way), 1e-9), tail_bytes});
  }
  return out;
}

}  // namespace splitsim
