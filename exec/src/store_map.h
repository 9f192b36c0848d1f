#pragma once
// The key-value map of a run's rendezvous: what rank 0 and every peer's
// requests read and write, within StoreLimits (key and value lengths, keys
// and bytes stored). Thread-safe. No LibTorch, no sockets.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "splitsim/exec/store_protocol.h"

namespace splitsim::store {

class StoreMap {
 public:
  using Clock = std::chrono::steady_clock;

  // `on_change` runs after every change (outside the lock).
  StoreMap(const StoreLimits& limits, std::function<void()> on_change);

  // kRefused (with `reason`) when a limit would be exceeded; nothing changes then.
  Status set(const std::string& key, const std::string& value, std::string* reason);
  // Waits until every key is set or `deadline`; false at the deadline.
  bool wait(const std::vector<std::string>& keys, Clock::time_point deadline);
  // false when the key is not set.
  bool get(const std::string& key, std::string* value) const;
  // The key holds the sum as decimal text (c10d::TCPStore's add).
  Status add(const std::string& key, int64_t delta, int64_t* sum, std::string* reason);
  // c10d::TCPStore's compareSet; `now` gets the value after the call.
  Status compare_set(const std::string& key, const std::string& expected,
                     const std::string& desired, std::string* now, std::string* reason);
  bool check(const std::vector<std::string>& keys) const;
  bool erase(const std::string& key);
  int64_t num_keys() const;
  size_t stored_bytes() const;  // keys and values

 private:
  bool check_locked(const std::vector<std::string>& keys) const;
  Status set_locked(const std::string& key, const std::string& value, std::string* reason);

  const StoreLimits limits_;
  const std::function<void()> on_change_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> map_;
  size_t stored_bytes_ = 0;
};

}  // namespace splitsim::store
