#include "store_map.h"

#include <cerrno>
#include <cstdlib>

namespace splitsim::store {

StoreMap::StoreMap(const StoreLimits& limits, std::function<void()> on_change)
    : limits_(limits), on_change_([this, on_change] {
        cv_.notify_all();
        if (on_change) on_change();
      }) {}

bool StoreMap::check_locked(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (map_.count(k) == 0) return false;
  return true;
}

Status StoreMap::set_locked(const std::string& key, const std::string& value, std::string* reason) {
  if (key.size() > limits_.key_bytes || value.size() > limits_.value_bytes) {
    *reason = "a key of " + std::to_string(key.size()) + " bytes or a value of " +
              std::to_string(value.size()) + " bytes (limits " + std::to_string(limits_.key_bytes) +
              " and " + std::to_string(limits_.value_bytes) + ")";
    return Status::kRefused;
  }
  auto it = map_.find(key);
  const size_t before = it == map_.end() ? 0 : key.size() + it->second.size();
  const size_t after = stored_bytes_ - before + key.size() + value.size();
  if (it == map_.end() && map_.size() >= limits_.keys) {
    *reason = "the store holds its limit of " + std::to_string(limits_.keys) + " keys";
    return Status::kRefused;
  }
  if (after > limits_.stored_bytes) {
    *reason = "the store holds its limit of " + std::to_string(limits_.stored_bytes) + " bytes";
    return Status::kRefused;
  }
  map_[key] = value;
  stored_bytes_ = after;
  return Status::kOk;
}

Status StoreMap::set(const std::string& key, const std::string& value, std::string* reason) {
  Status s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s = set_locked(key, value, reason);
  }
  if (s == Status::kOk) on_change_();
  return s;
}

bool StoreMap::wait(const std::vector<std::string>& keys, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lk(mu_);
  return cv_.wait_until(lk, deadline, [&] { return check_locked(keys); });
}

bool StoreMap::get(const std::string& key, std::string* value) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  *value = it->second;
  return true;
}

Status StoreMap::add(const std::string& key, int64_t delta, int64_t* sum, std::string* reason) {
  Status s = Status::kOk;
  {
    std::lock_guard<std::mutex> lk(mu_);
    int64_t old = 0;
    auto it = map_.find(key);
    if (it != map_.end()) {
      char* end = nullptr;
      errno = 0;
      old = std::strtoll(it->second.c_str(), &end, 10);
      if (it->second.empty() || errno != 0 || end != it->second.c_str() + it->second.size()) {
        *reason = "key \"" + key + "\" holds a value that is not a number";
        return Status::kRefused;
      }
    }
    *sum = static_cast<int64_t>(static_cast<uint64_t>(old) + static_cast<uint64_t>(delta));
    s = set_locked(key, std::to_string(*sum), reason);
  }
  if (s == Status::kOk) on_change_();
  return s;
}

Status StoreMap::compare_set(const std::string& key, const std::string& expected,
                             const std::string& desired, std::string* now, std::string* reason) {
  // c10d::TCPStore's rule: an absent key is set only when `expected` is empty.
  Status s = Status::kOk;
  bool stored = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(key);
    const bool swap = it == map_.end() ? expected.empty() : it->second == expected;
    if (swap) {
      s = set_locked(key, desired, reason);
      stored = s == Status::kOk;
      *now = desired;
    } else {
      *now = it == map_.end() ? expected : it->second;
    }
  }
  if (stored) on_change_();
  return s;
}

bool StoreMap::check(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> lk(mu_);
  return check_locked(keys);
}

bool StoreMap::erase(const std::string& key) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  stored_bytes_ -= key.size() + it->second.size();
  map_.erase(it);
  return true;
}

int64_t StoreMap::num_keys() const {
  std::lock_guard<std::mutex> lk(mu_);
  return static_cast<int64_t>(map_.size());
}

size_t StoreMap::stored_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stored_bytes_;
}

}  // namespace splitsim::store
