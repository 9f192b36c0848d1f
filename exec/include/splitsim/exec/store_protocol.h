#pragma once
// The wire format of exec's rendezvous store (BoundedTcpStore) and the
// limits its server enforces on what a peer sends. No LibTorch here.
//
// Request:  op (1 byte), argument count (u32), then per argument its length
//           (u32) and its bytes. Integers (u32, i64) are big-endian.
// Reply:    status (1 byte), body length (u32), body.
//
// Every length is checked against StoreLimits as soon as its four bytes
// arrive, before anything is allocated for it: a request is at most
// max_request_bytes(limits) long. The first request of a connection is
// kAuth carrying the run's token ("" when the run has none).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim::store {

enum class Op : uint8_t {
  kAuth = 1,        // token -> kOk, or kRefused and the connection closes
  kSet = 2,         // key, value
  kGet = 3,         // key -> value; waits for the key (store timeout)
  kAdd = 4,         // key, i64 -> i64 (the key holds the sum, as decimal text)
  kCheck = 5,       // key... -> "1" when every key is set, else "0"
  kCompareSet = 6,  // key, expected, desired -> the value after the call
  kDelete = 7,      // key -> "1" when it existed
  kNumKeys = 8,     // -> i64
  kWait = 9,        // timeout in ms (i64), key... -> kOk, or kTimeout
};

enum class Status : uint8_t { kOk = 0, kTimeout = 1, kRefused = 2 };

struct StoreLimits {
  size_t key_bytes = 512;
  // One value: what Gloo stores per rank is one address per peer (a
  // 128-byte sockaddr and a sequence number), a few hundred bytes.
  size_t value_bytes = 64 * 1024;
  size_t keys_per_request = 64;           // kCheck, kWait
  size_t keys = 1024;                     // stored at once
  size_t stored_bytes = 4 * 1024 * 1024;  // keys and values, all together
  size_t connections = 64;                // open at once; at the limit a new one evicts the
                                          // oldest not yet authenticated, else it is closed
  size_t token_bytes = 4095;              // kMaxTokenBytes (session.h)
  // A connection that has not authenticated, a request begun and not
  // finished, or a reply the peer does not read, for this long is closed.
  std::chrono::milliseconds peer_deadline{60000};

  // Limits for a run of `world_size` processes: values, keys and bytes grow
  // with it, everything else stays fixed.
  static StoreLimits for_world(int world_size, std::chrono::milliseconds deadline);
};

// What a store server saw of its peers (BoundedTcpStore::server_stats).
struct StoreStats {
  int64_t accepted = 0;              // connections
  int64_t open = 0;                  // connections open now
  int64_t open_unauthenticated = 0;  // of them, not yet past the token
  int64_t authenticated = 0;         // connections that presented the token
  int64_t refused_tokens = 0;        // closed: a wrong or missing token
  int64_t malformed = 0;             // closed: a request broke a limit or the format
  int64_t timed_out = 0;             // closed: silent past peer_deadline (see StoreLimits)
  int64_t evicted = 0;               // closed at the connection limit
  size_t peak_buffered_bytes = 0;    // all connections' buffers together, at most
  size_t stored_bytes = 0;           // keys and values held now
};

// The longest request the limits allow (a kCompareSet of two full values).
size_t max_request_bytes(const StoreLimits& limits);

struct Request {
  Op op = Op::kAuth;
  std::vector<std::string> args;
};

// Parses one request at the front of `data`. kNeedMore: incomplete so far
// (every length read is within the limits); kBad: `reason` says what broke
// a limit or the format; kDone: `request` holds it, `consumed` its size.
struct ParseResult {
  enum State { kNeedMore, kBad, kDone } state = kNeedMore;
  size_t consumed = 0;
  std::string reason;
  Request request;
};
ParseResult parse_request(const char* data, size_t size, const StoreLimits& limits);

std::string encode_request(Op op, const std::vector<std::string>& args);
std::string encode_reply(Status status, const std::string& body);

void put_u32(std::string* out, uint32_t v);
uint32_t get_u32(const char* p);
std::string i64_bytes(int64_t v);
// REQUIRES: s.size() == 8.
int64_t i64_of(const std::string& s);

}  // namespace splitsim::store
