#pragma once
// The server half of BoundedTcpStore: a run's StoreMap served to peers by
// one thread that polls non-blocking sockets (it never blocks on a peer).
// It enforces StoreLimits on connections, requests and time; the map on
// what is stored. No LibTorch.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "splitsim/exec/store_protocol.h"
#include "store_map.h"

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

  // The map, for rank 0 itself; peers' requests go to the same.
  StoreMap& map() { return map_; }

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
  void wake();  // the server thread: a key changed, or stop

  const std::string token_;
  const StoreLimits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd
  int port_ = 0;
  bool stop_ = false;      // under mu_
  mutable std::mutex mu_;  // stop_, stats_
  StoreStats stats_;
  StoreMap map_;
  std::thread thread_;
};

}  // namespace splitsim::store
