#pragma once
// How a party process ends after its run failed: at once. A failed Gloo
// pair may block in its destructor, so the runs leave their transport alive
// (party.h) and the commands that run a party (exec, link-probe, train
// --role) end through here instead of returning.
#include <string>

namespace splitsim {

// Prints "error: <error>" on stderr, flushes stdout and stderr, and ends the
// process with exit code 1 without running destructors or atexit handlers.
[[noreturn]] void exit_after_failed_party(const std::string& error);

}  // namespace splitsim
