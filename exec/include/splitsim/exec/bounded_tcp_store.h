#pragma once
// BoundedTcpStore: exec's rendezvous store, a c10d::Store for
// ProcessGroupGloo in place of c10d::TCPStore, whose server trusts nothing
// a peer sends. Rank 0 holds the map in memory and serves it on its listen
// address; the others connect, present the run's token, and speak the
// framed protocol of store_protocol.h. What the server bounds (lengths,
// keys, bytes, connections, time) is StoreLimits; exec/README.md lists it.
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "splitsim/exec/store_protocol.h"

namespace splitsim {

namespace store {
class StoreServer;
}

// The server answered and refused this process (a wrong or missing token):
// retrying cannot help.
class StoreRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BoundedTcpStore : public c10d::Store {
 public:
  // The server (rank 0): listens on host:port (that address only; port 0
  // picks one). Throws std::runtime_error when it cannot listen.
  static c10::intrusive_ptr<BoundedTcpStore> serve(const std::string& host, int port,
                                                   const std::string& token,
                                                   const store::StoreLimits& limits,
                                                   std::chrono::milliseconds timeout);
  // A client: connects to host:port, retrying until `timeout`, and
  // presents `token`. Throws std::runtime_error when no connection is
  // accepted in time, StoreRefused at once when the server refuses the token.
  static c10::intrusive_ptr<BoundedTcpStore> connect(const std::string& host, int port,
                                                     const std::string& token,
                                                     const store::StoreLimits& limits,
                                                     std::chrono::milliseconds timeout);
  ~BoundedTcpStore() override;

  // The port the server listens on; the one connected to for a client.
  int port() const { return port_; }
  // What the server saw of its peers (all zero for a client).
  store::StoreStats server_stats() const;

  // c10d::Store. Every wait ends within the store's timeout (a longer or
  // zero timeout is cut to it); a timeout or a refusal throws
  // std::runtime_error naming the keys.
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  BoundedTcpStore(std::chrono::milliseconds timeout, store::StoreLimits limits);
  // One request to the server, its reply body; throws on a refusal, a
  // closed connection, or no reply within `wait_for` (plus a margin).
  std::string call(store::Op op, const std::vector<std::string>& args,
                   std::chrono::milliseconds wait_for, store::Status* status = nullptr);
  std::chrono::milliseconds bounded(std::chrono::milliseconds t) const;

  store::StoreLimits limits_;
  std::unique_ptr<store::StoreServer> server_;  // rank 0
  std::string where_;                           // host:port
  int port_ = 0;
  int fd_ = -1;  // a client's connection
  std::mutex mu_;
};

}  // namespace splitsim
