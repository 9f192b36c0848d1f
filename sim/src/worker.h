#pragma once
// The simulation worker (sim/README.md "Many simulations"). SimGrid allows
// one Engine per process, so a simulation runs in a process of its own. A
// worker is a small process that never creates an Engine: it reads requests
// (a Plan and what to return) from a socket and answers each by forking a
// child that runs simulate_in_process and, when asked, compute_metrics.
// Forking a small worker costs a fraction of a millisecond where forking a
// process that loaded LibTorch costs several; a failing simulation still
// takes down only its own child.
//
// The stream carries frames: an 8-byte length, then that many bytes.
// Request:  want byte, server-order byte, the Plan as raw bytes (plan_codec.h:
//           what the simulation and its metrics read).
// Response: status byte (kOk, kInputError, kFailure), then
//   kOk: the Timeline as raw bytes (kTimeline) or the Metrics' JSON as CBOR (kMetrics);
//   kInputError: where, message; kFailure: message (strings length-prefixed).
#include <string>

#include "splitsim/costmodel/plan.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/sim/timeline.h"

namespace splitsim::sim_internal {

enum class Want : char { kTimeline = 0, kMetrics = 1 };
enum Status : char { kOk = 0, kInputError = 1, kFailure = 2 };

std::string encode_request(const Plan& plan, const SimOptions& options, Want want);

// Decodes a response; throws what the simulation threw (InputError, or
// std::runtime_error naming `variant`).
Timeline decode_timeline(const std::string& response, const std::string& variant);
Metrics decode_metrics(const std::string& response, const std::string& variant);
// A kFailure response carrying `message`.
std::string failure_response(const std::string& message);

// Blocking frame I/O. read_frame returns false at end of file before a
// frame; both throw std::runtime_error on an I/O error or a cut frame.
bool read_frame(int fd, std::string* frame);
void write_frame(int fd, const std::string& frame);

// simulate_in_process without sorting the events (simulator.cpp): the
// metrics do not depend on their order.
Timeline simulate_unsorted(const Plan& plan, const SimOptions& options);

// Serves requests on `fd` until end of file, one at a time. Never returns
// on a broken socket (the process ends).
void serve_simulations(int fd);

}  // namespace splitsim::sim_internal
