#include "splitsim/exec/store_protocol.h"

#include <algorithm>
#include <cassert>

namespace splitsim::store {
namespace {

constexpr size_t kHeaderBytes = 5;  // op, argument count

// Argument counts allowed for `op`: [lo, hi]; false for an unknown op.
bool arg_counts(Op op, const StoreLimits& l, size_t* lo, size_t* hi) {
  switch (op) {
    case Op::kAuth:
    case Op::kGet:
    case Op::kDelete:
      *lo = *hi = 1;
      return true;
    case Op::kSet:
    case Op::kAdd:
      *lo = *hi = 2;
      return true;
    case Op::kCompareSet:
      *lo = *hi = 3;
      return true;
    case Op::kNumKeys:
      *lo = *hi = 0;
      return true;
    case Op::kCheck:
      *lo = 1;
      *hi = l.keys_per_request;
      return true;
    case Op::kWait:
      *lo = 2;
      *hi = l.keys_per_request + 1;
      return true;
  }
  return false;
}

// The longest argument `i` of `op` may be.
size_t arg_limit(Op op, size_t i, const StoreLimits& l) {
  switch (op) {
    case Op::kAuth:
      return l.token_bytes;
    case Op::kSet:
      return i == 0 ? l.key_bytes : l.value_bytes;
    case Op::kAdd:
      return i == 0 ? l.key_bytes : 8;
    case Op::kCompareSet:
      return i == 0 ? l.key_bytes : l.value_bytes;
    case Op::kWait:
      return i == 0 ? 8 : l.key_bytes;
    default:
      return l.key_bytes;
  }
}

}  // namespace

StoreLimits StoreLimits::for_world(int world_size, std::chrono::milliseconds deadline) {
  StoreLimits l;
  const size_t n = static_cast<size_t>(std::max(world_size, 2));
  l.value_bytes = std::max<size_t>(l.value_bytes, n * 1024);
  l.keys = std::max<size_t>(l.keys, 16 * n);
  l.stored_bytes = std::max<size_t>(l.stored_bytes, 4 * n * (l.value_bytes + l.key_bytes));
  l.peer_deadline = deadline;
  return l;
}

size_t max_request_bytes(const StoreLimits& l) {
  const size_t by_values = kHeaderBytes + 3 * 4 + l.key_bytes + 2 * l.value_bytes;
  const size_t by_keys = kHeaderBytes + (l.keys_per_request + 1) * (4 + l.key_bytes);
  return std::max({by_values, by_keys, kHeaderBytes + 4 + l.token_bytes});
}

ParseResult parse_request(const char* data, size_t size, const StoreLimits& limits) {
  ParseResult r;
  if (size < kHeaderBytes) return r;
  const Op op = static_cast<Op>(static_cast<uint8_t>(data[0]));
  const uint32_t count = get_u32(data + 1);
  size_t lo = 0, hi = 0;
  if (!arg_counts(op, limits, &lo, &hi)) {
    r.state = ParseResult::kBad;
    r.reason = "unknown request " + std::to_string(static_cast<int>(data[0]) & 0xff);
    return r;
  }
  if (count < lo || count > hi) {
    r.state = ParseResult::kBad;
    r.reason =
        "a request of " + std::to_string(count) + " arguments (at most " + std::to_string(hi) + ")";
    return r;
  }
  // Lengths first: every one is checked before any argument is copied.
  size_t at = kHeaderBytes;
  std::vector<std::pair<size_t, uint32_t>> spans;
  spans.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (size < at + 4) return r;
    const uint32_t len = get_u32(data + at);
    if (len > arg_limit(op, i, limits)) {
      r.state = ParseResult::kBad;
      r.reason = "an argument of " + std::to_string(len) + " bytes (at most " +
                 std::to_string(arg_limit(op, i, limits)) + ")";
      return r;
    }
    at += 4;
    if (size < at + len) return r;
    spans.emplace_back(at, len);
    at += len;
  }
  r.request.op = op;
  for (const auto& [from, len] : spans) r.request.args.emplace_back(data + from, len);
  r.consumed = at;
  r.state = ParseResult::kDone;
  return r;
}

void put_u32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string i64_bytes(int64_t v) {
  std::string out;
  const auto u = static_cast<uint64_t>(v);
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((u >> shift) & 0xff));
  return out;
}

int64_t i64_of(const std::string& s) {
  assert(s.size() == 8);
  uint64_t u = 0;
  for (char c : s) u = (u << 8) | static_cast<uint8_t>(c);
  return static_cast<int64_t>(u);
}

std::string encode_request(Op op, const std::vector<std::string>& args) {
  std::string out(1, static_cast<char>(op));
  put_u32(&out, static_cast<uint32_t>(args.size()));
  for (const auto& a : args) {
    put_u32(&out, static_cast<uint32_t>(a.size()));
    out += a;
  }
  return out;
}

std::string encode_reply(Status status, const std::string& body) {
  std::string out(1, static_cast<char>(status));
  put_u32(&out, static_cast<uint32_t>(body.size()));
  return out + body;
}

}  // namespace splitsim::store
