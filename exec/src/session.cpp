#include "splitsim/exec/session.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "session_tags.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/checkpoint.h"

namespace splitsim {
namespace {

using session_tags::kTagClock;
using session_tags::kTagGo;
using session_tags::kTagHello;
using session_tags::kTagPing;
using session_tags::kTagPong;
using session_tags::kTagResume;
using session_tags::kTagSteps;
using session_tags::kTagVerdict;

constexpr int kPings = 8;
constexpr int64_t kTextBytes = 4096;

// This host's boot id (/proc/sys/kernel/random/boot_id, 32 hex digits) as
// two integers, {0, 0} where it cannot be read. Processes with the same one
// read the same steady clock (CLOCK_MONOTONIC; network namespaces do not
// change it).
std::array<int64_t, 2> boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string text;
  std::getline(in, text);
  std::array<uint64_t, 2> v{0, 0};
  int digits = 0;
  for (const char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) continue;
    if (digits >= 32) return {0, 0};
    const uint64_t d =
        static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                  ? c - '0'
                                  : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    v[static_cast<size_t>(digits / 16)] = v[static_cast<size_t>(digits / 16)] << 4 | d;
    ++digits;
  }
  if (digits != 32) return {0, 0};
  return {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])};
}

// What a rank tells rank 0 of its clock: its boot id and its time origin on
// the steady clock (ns).
torch::Tensor clock_tensor(ExecClock::time_point start) {
  const auto id = boot_id();
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  return torch::tensor({id[0], id[1], ns}, torch::kInt64);
}

torch::Tensor text_tensor(const std::string& s) {
  torch::Tensor t = torch::zeros({kTextBytes}, torch::kUInt8);
  std::memcpy(t.data_ptr<uint8_t>(), s.data(), std::min<size_t>(s.size(), kTextBytes - 1));
  return t;
}
// The text in a kTextBytes buffer a peer filled: up to the first NUL, never
// past the buffer (the peer need not send one).
std::string tensor_text(const torch::Tensor& t) {
  const auto* p = reinterpret_cast<const char*>(t.data_ptr<uint8_t>());
  const size_t n = std::min<size_t>(static_cast<size_t>(t.numel()), kTextBytes);
  return std::string(p, strnlen(p, n));
}

// Compares two kTextBytes buffers in time independent of where they differ
// (and of the secret's length: both are zero-padded to the full buffer).
bool same_secret(const torch::Tensor& a, const torch::Tensor& b) {
  const uint8_t* pa = a.data_ptr<uint8_t>();
  const uint8_t* pb = b.data_ptr<uint8_t>();
  volatile uint8_t diff = 0;
  for (int64_t i = 0; i < kTextBytes; ++i) diff = static_cast<uint8_t>(diff | (pa[i] ^ pb[i]));
  return diff == 0;
}

void exchange(Transport& tr, std::vector<torch::Tensor> send, int peer, int send_tag,
              std::vector<torch::Tensor> recv, int recv_tag, std::chrono::milliseconds timeout) {
  auto r = recv.empty() ? nullptr : tr.recv(recv, peer, recv_tag);
  auto s = send.empty() ? nullptr : tr.send(send, peer, send_tag);
  if (s) s->wait(timeout);
  if (r) r->wait(timeout);
}

double seconds(ExecClock::time_point t, ExecClock::time_point origin) {
  return std::chrono::duration<double>(t - origin).count();
}

}  // namespace

std::string shared_token(const std::string& flag_value) {
  std::string token = flag_value;
  if (token.empty()) {
    if (const char* env = std::getenv("SPLITSIM_TOKEN"); env != nullptr) token = env;
  }
  if (token.size() > kMaxTokenBytes)
    throw InputError(flag_value.empty() ? "SPLITSIM_TOKEN" : "token",
                     "the token is " + std::to_string(token.size()) + " bytes; the limit is " +
                         std::to_string(kMaxTokenBytes));
  return token;
}

std::string stable_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void handshake(Transport& tr, const RunIdentity& me, std::chrono::milliseconds timeout) {
  if (me.token.size() >= static_cast<size_t>(kTextBytes)) {
    throw HandshakeError("the token is " + std::to_string(me.token.size()) +
                         " bytes; the limit is " + std::to_string(kMaxTokenBytes));
  }
  const std::string mine = me.version + "\n" + stable_hash(me.variant_json) + "\n" + me.label;
  const torch::Tensor my_token = text_tensor(me.token);
  auto describe = [](const std::string& id) {
    const auto a = id.find('\n'), b = id.find('\n', a + 1);
    return "variant \"" + id.substr(b + 1) + "\" (scenario hash " + id.substr(a + 1, b - a - 1) +
           ", splitsim " + id.substr(0, a) + ")";
  };
  if (tr.rank() != 0) {
    torch::Tensor verdict = torch::zeros({kTextBytes}, torch::kUInt8);
    exchange(tr, {text_tensor(mine), my_token}, 0, kTagHello, {verdict}, kTagVerdict, timeout);
    const std::string v = tensor_text(verdict);
    if (v != "ok") throw HandshakeError(v);
    return;
  }
  std::string verdict = "ok";
  bool token_refused = false;
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor hello = torch::zeros({kTextBytes}, torch::kUInt8);
    torch::Tensor token = torch::zeros({kTextBytes}, torch::kUInt8);
    tr.recv({hello, token}, r, kTagHello)->wait(timeout);
    const std::string theirs = tensor_text(hello);
    if (!same_secret(token, my_token)) {
      // Nothing about this side is told to a peer without the secret: a
      // token refusal replaces any other verdict, which would describe rank 0.
      if (!token_refused)
        verdict = "handshake refused: rank " + std::to_string(r) +
                  " presented a wrong or missing token; give both sides the same --token or "
                  "SPLITSIM_TOKEN";
      token_refused = true;
    } else if (theirs != mine && verdict == "ok")
      verdict = "handshake refused: rank 0 (server) runs " + describe(mine) + ", rank " +
                std::to_string(r) + " runs " + describe(theirs) +
                "; start both sides with the same scenario file, --variant, --iterations and "
                "splitsim version";
  }
  for (int r = 1; r < tr.world_size(); ++r)
    tr.send({text_tensor(verdict)}, r, kTagVerdict)->wait(timeout);
  if (verdict != "ok") throw HandshakeError(verdict);
}

int64_t agree_resume_step(Transport& tr, const std::vector<int64_t>& mine,
                          std::chrono::milliseconds timeout) {
  auto text_of = [](const std::vector<int64_t>& steps) {
    std::string t;
    const size_t from = steps.size() > 64 ? steps.size() - 64 : 0;
    for (size_t i = from; i < steps.size(); ++i)
      t += (t.empty() ? "" : ",") + std::to_string(steps[i]);
    return t;
  };
  auto steps_of = [](const std::string& text) {
    std::vector<int64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
    return out;
  };
  if (tr.rank() != 0) {
    torch::Tensor verdict = torch::zeros({kTextBytes}, torch::kUInt8);
    exchange(tr, {text_tensor(text_of(mine))}, 0, kTagSteps, {verdict}, kTagResume, timeout);
    const std::string v = tensor_text(verdict);
    if (v.rfind("step ", 0) != 0) throw InputError("resume", v);
    return std::stoll(v.substr(5));
  }
  std::vector<std::vector<int64_t>> all = {mine};
  std::vector<std::string> names = {"rank 0 (server)"};
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor steps = torch::zeros({kTextBytes}, torch::kUInt8);
    tr.recv({steps}, r, kTagSteps)->wait(timeout);
    try {
      all.push_back(steps_of(tensor_text(steps)));
    } catch (const std::exception&) {
      all.push_back({});  // malformed: as none, which the verdict then names
    }
    names.push_back("rank " + std::to_string(r));
  }
  std::string verdict;
  int64_t step = 0;
  try {
    step = common_checkpoint_step(all, names);
    verdict = "step " + std::to_string(step);
  } catch (const InputError& e) {
    verdict = e.message();
  }
  for (int r = 1; r < tr.world_size(); ++r)
    tr.send({text_tensor(verdict)}, r, kTagResume)->wait(timeout);
  if (verdict.rfind("step ", 0) != 0) throw InputError("resume", verdict);
  return step;
}

ExecClock::time_point synchronise(Transport& tr, std::chrono::milliseconds timeout,
                                  std::vector<double>* offsets_s) {
  offsets_s->clear();
  ExecClock::time_point start;
  torch::Tensor go = torch::zeros({1}, torch::kFloat64);
  if (tr.rank() == 0) {
    std::vector<std::shared_ptr<Transfer>> sends;
    for (int r = 1; r < tr.world_size(); ++r) sends.push_back(tr.send({go}, r, kTagGo));
    start = ExecClock::now();
    for (auto& s : sends) s->wait(timeout);
    offsets_s->assign(static_cast<size_t>(tr.world_size()), 0.0);
    for (int r = 1; r < tr.world_size(); ++r) {
      double best_rtt = 1e30;
      for (int i = 0; i < kPings; ++i) {
        torch::Tensor ping = torch::zeros({1}, torch::kFloat64),
                      pong = torch::zeros({1}, torch::kFloat64);
        auto rv = tr.recv({pong}, r, kTagPong + 16 * i);
        const double t1 = seconds(ExecClock::now(), start);
        tr.send({ping}, r, kTagPing + 16 * i)->wait(timeout);
        rv->wait(timeout);
        const double t2 = seconds(ExecClock::now(), start);
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          (*offsets_s)[static_cast<size_t>(r)] = pong.item<double>() - (t1 + t2) / 2;
        }
      }
      // On one host both read one steady clock: the offset is the
      // difference of the time origins, exactly, where the ping-pong's is
      // off by up to half a round trip (on a shaped veth 50-100 us, a
      // third of a small transfer's time).
      torch::Tensor theirs = torch::zeros({3}, torch::kInt64);
      tr.recv({theirs}, r, kTagClock)->wait(timeout);
      const torch::Tensor mine = clock_tensor(start);
      const auto* t = theirs.data_ptr<int64_t>();
      const auto* m = mine.data_ptr<int64_t>();
      if ((m[0] != 0 || m[1] != 0) && t[0] == m[0] && t[1] == m[1])
        (*offsets_s)[static_cast<size_t>(r)] = static_cast<double>(m[2] - t[2]) * 1e-9;
    }
    return start;
  }
  tr.recv({go}, 0, kTagGo)->wait(timeout);
  start = ExecClock::now();
  for (int i = 0; i < kPings; ++i) {
    torch::Tensor ping = torch::zeros({1}, torch::kFloat64);
    tr.recv({ping}, 0, kTagPing + 16 * i)->wait(timeout);
    torch::Tensor pong = torch::full({1}, seconds(ExecClock::now(), start), torch::kFloat64);
    tr.send({pong}, 0, kTagPong + 16 * i)->wait(timeout);
  }
  tr.send({clock_tensor(start)}, 0, kTagClock)->wait(timeout);
  return start;
}

}  // namespace splitsim
