#pragma once
// Transport: the one seam between exec and the network. Tensors go to and
// come from peer ranks, asynchronously; a transfer is a list of contiguous
// tensors under one tag. Implementations: GlooTransport (c10d Gloo, real
// processes) and LoopbackTransport (in-process endpoints, for tests).
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace splitsim {

using ExecClock = std::chrono::steady_clock;

// A transport failure: timeout, peer gone, connection refused. Fatal for the
// run: the message says which operation, which peer and what to check.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Ends a transfer's timeout error: a peer that is still computing cannot be
// told from one that hangs.
inline constexpr char kTransferTimeoutHint[] =
    "; a peer still computing a slow batch (a large model; bf16 on a CPU without bf16 "
    "instructions) looks the same: raise --timeout-s";

// One posted send or receive.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Blocks until the transfer completed. Throws TransportError after
  // `timeout` or when the peer failed. Idempotent once it returned.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // When the transfer completed (valid after wait() returned).
  virtual ExecClock::time_point completed_at() const = 0;
  // Whether wait() would return (or throw) at once. Never blocks: a stage
  // polls its sends with it to free their tensors as soon as they crossed.
  virtual bool ready() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Sends `tensors` (each contiguous, CPU) to `peer` under `tag`. The
  // tensors must stay untouched until the transfer completed.
  // REQUIRES: tag >= 0 and (peer, tag) not in flight for another send.
  virtual std::shared_ptr<Transfer> send(std::vector<torch::Tensor> tensors, int peer, int tag) = 0;
  // Receives into preallocated `tensors` (sizes and dtypes as sent).
  virtual std::shared_ptr<Transfer> recv(std::vector<torch::Tensor> tensors, int peer, int tag) = 0;

  // Ends every transfer of this transport: waits in progress and to come
  // throw TransportError with `why` at once, and a transfer's destruction
  // no longer waits for the network. For a party whose run failed locally
  // (a stage's error, a checkpoint that cannot be written), so that its
  // other stages stop now rather than at the transfer timeout; the
  // transport is unusable afterwards. Thread-safe.
  virtual void abort(const std::string& why) = 0;

  // Bytes (sum of tensor nbytes) handed to send() / received by recv() to
  // and from other ranks since construction. Thread-safe.
  int64_t bytes_sent() const { return bytes_sent_.load(); }
  int64_t bytes_received() const { return bytes_received_.load(); }

 protected:
  static int64_t nbytes(const std::vector<torch::Tensor>& tensors) {
    int64_t n = 0;
    for (const auto& t : tensors) n += static_cast<int64_t>(t.nbytes());
    return n;
  }
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> bytes_received_{0};
};

}  // namespace splitsim
