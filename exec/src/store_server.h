#pragma once
// The server half of BoundedTcpStore: the key-value map of a run's
// rendezvous, served to peers by one thread that polls non-blocking sockets
// (it never blocks on a peer), and used in-process by rank 0. Every limit of
// StoreLimits is enforced here. No LibTorch.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "splitsim/exec/store_protocol.h"

namespace splitsim::store {

class StoreServer {
 public:
  using Clock = std::chrono::steady_clock;

  // Listens on `host`:`port` (that address only; 0.0.0.0 for every one).
  // Throws std::runtime_error when it cannot.
  StoreServer(const std::string& host, int port, std::string token, StoreLimits limits);
  // Stops the thread: wakes its poll and joins it (it never waits on a peer).
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  StoreStats stats() const;

  // The operations for rank 0 itself, as a peer's requests do them.
  // kRefused (with `reason`) when a limit would be exceeded.
  Status set(const std::string& key, const std::string& value, std::string* reason);
  // Waits until every key is set or `deadline`; false at the deadline.
  bool wait(const std::vector<std::string>& keys, Clock::time_point deadline);
  // false when the key is not set.
  bool get(const std::string& key, std::string* value) const;
  Status add(const std::string& key, int64_t delta, int64_t* sum, std::string* reason);
  Status compare_set(const std::string& key, const std::string& expected,
                     const std::string& desired, std::string* now, std::string* reason);
  bool check(const std::vector<std::string>& keys) const;
  bool erase(const std::string& key);
  int64_t num_keys() const;

  struct Connection;  // one peer (store_server.cpp)

 private:
  using Connections = std::vector<std::unique_ptr<Connection>>;
  void serve();
  void accept_all(Connections* conns);
  void read_from(Connection* c);
  void serve_input(Connection* c);
  void close_expired(Connection* c, Clock::time_point now);
  void count(int64_t StoreStats::*field);
  void handle(Connection* c, const Request& r);
  void finish_waits(Connection* c, Clock::time_point now);
  void changed();  // wakes local waiters and the server thread
  bool check_locked(const std::vector<std::string>& keys) const;
  Status set_locked(const std::string& key, const std::string& value, std::string* reason);

  const std::string token_;
  const StoreLimits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd
  int port_ = 0;
  bool stop_ = false;  // under mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> map_;
  StoreStats stats_;
  std::thread thread_;
};

}  // namespace splitsim::store
