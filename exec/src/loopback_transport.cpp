#include "splitsim/exec/loopback_transport.h"

namespace splitsim {
namespace {

class DoneTransfer : public Transfer {
 public:
  DoneTransfer() : at_(ExecClock::now()) {}
  void wait(std::chrono::milliseconds) override {}
  ExecClock::time_point completed_at() const override { return at_; }
  bool ready() const override { return true; }

 private:
  ExecClock::time_point at_;
};

class LoopbackRecv : public Transfer {
 public:
  LoopbackRecv(std::shared_ptr<LoopbackHub> hub, int src, int dst, int tag,
               std::vector<torch::Tensor> into)
      : hub_(std::move(hub)), src_(src), dst_(dst), tag_(tag), into_(std::move(into)) {}
  void wait(std::chrono::milliseconds timeout) override {
    if (done_) return;
    hub_->take(src_, dst_, tag_, into_, timeout);
    at_ = ExecClock::now();
    done_ = true;
  }
  ExecClock::time_point completed_at() const override { return at_; }
  bool ready() const override { return done_ || hub_->arrived(src_, dst_, tag_); }

 private:
  std::shared_ptr<LoopbackHub> hub_;
  int src_, dst_, tag_;
  std::vector<torch::Tensor> into_;
  bool done_ = false;
  ExecClock::time_point at_;
};

}  // namespace

void LoopbackHub::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  failure_ = why;
  cv_.notify_all();
}

void LoopbackHub::deliver(int src, int dst, int tag, std::vector<torch::Tensor> copies) {
  std::lock_guard<std::mutex> lock(mutex_);
  mail_[{src, dst, tag}] = std::move(copies);
  cv_.notify_all();
}

bool LoopbackHub::arrived(int src, int dst, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failure_.empty() || mail_.count(std::make_tuple(src, dst, tag)) > 0;
}

void LoopbackHub::take(int src, int dst, int tag, std::vector<torch::Tensor>& into,
                       std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto key = std::make_tuple(src, dst, tag);
  const bool arrived =
      cv_.wait_for(lock, timeout, [&] { return !failure_.empty() || mail_.count(key) > 0; });
  if (!failure_.empty()) throw TransportError("loopback transport failed: " + failure_);
  if (!arrived)
    throw TransportError("loopback receive from rank " + std::to_string(src) + " (tag " +
                         std::to_string(tag) + ") timed out after " +
                         std::to_string(timeout.count()) + " ms" + kTransferTimeoutHint);
  std::vector<torch::Tensor> got = std::move(mail_[key]);
  mail_.erase(key);
  lock.unlock();
  if (got.size() != into.size())
    throw TransportError("loopback receive: " + std::to_string(got.size()) + " tensors sent, " +
                         std::to_string(into.size()) + " expected");
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].nbytes() != into[i].nbytes() || got[i].scalar_type() != into[i].scalar_type())
      throw TransportError("loopback receive: tensor " + std::to_string(i) +
                           " differs in size or dtype from the receive buffer");
    into[i].view(got[i].sizes()).copy_(got[i]);
  }
}

std::shared_ptr<Transfer> LoopbackTransport::send(std::vector<torch::Tensor> tensors, int peer,
                                                  int tag) {
  std::vector<torch::Tensor> copies;
  for (const auto& t : tensors) copies.push_back(t.detach().clone());
  if (peer != rank_) bytes_sent_ += nbytes(tensors);
  hub_->deliver(rank_, peer, tag, std::move(copies));
  return std::make_shared<DoneTransfer>();
}

std::shared_ptr<Transfer> LoopbackTransport::recv(std::vector<torch::Tensor> tensors, int peer,
                                                  int tag) {
  if (peer != rank_) bytes_received_ += nbytes(tensors);
  return std::make_shared<LoopbackRecv>(hub_, peer, rank_, tag, std::move(tensors));
}

}  // namespace splitsim
