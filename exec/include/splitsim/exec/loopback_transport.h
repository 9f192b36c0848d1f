#pragma once
// LoopbackTransport: several endpoints of one process exchanging tensors
// through shared mailboxes (copies), for unit tests. Sends complete at once;
// a receive completes when the matching send arrived.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "splitsim/exec/transport.h"

namespace splitsim {

// The shared state of a group of endpoints. Thread-safe.
class LoopbackHub {
 public:
  explicit LoopbackHub(int world_size) : world_size_(world_size) {}
  int world_size() const { return world_size_; }
  // Makes every pending and later wait() throw TransportError (a peer died).
  void fail(const std::string& why);

  void deliver(int src, int dst, int tag, std::vector<torch::Tensor> copies);
  // Copies the message (src, dst, tag) into `into`; waits at most `timeout`.
  void take(int src, int dst, int tag, std::vector<torch::Tensor>& into,
            std::chrono::milliseconds timeout);
  // Whether take() would return (or throw) at once.
  bool arrived(int src, int dst, int tag);

 private:
  int world_size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::vector<torch::Tensor>> mail_;
  std::string failure_;
};

class LoopbackTransport : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackHub> hub, int rank)
      : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return hub_->world_size(); }
  std::shared_ptr<Transfer> send(std::vector<torch::Tensor> tensors, int peer, int tag) override;
  std::shared_ptr<Transfer> recv(std::vector<torch::Tensor> tensors, int peer, int tag) override;
  // Fails the hub: every rank's transfers end (LoopbackHub::fail).
  void abort(const std::string& why) override { hub_->fail(why); }

 private:
  std::shared_ptr<LoopbackHub> hub_;
  int rank_;
};

}  // namespace splitsim
