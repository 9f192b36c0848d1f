#pragma once
// Chrome trace-event JSON of a Timeline (opens in Perfetto and chrome://tracing).
#include <iosfwd>

#include "splitsim/sim/timeline.h"

namespace splitsim {

// Writes {"traceEvents": [...], "displayTimeUnit": "ms"}: process 1
// "parties" holds one track (thread) per party with its compute events;
// process 2 "links" one track per link direction ("client->server") with
// its transfers. Events are complete events ("ph": "X", microseconds) named
// by event_name(), with batch, client, microbatch and bytes as arguments.
// Overlapping events of one track go to extra lanes ("client->server #2").
// Deterministic: equal timelines give byte-identical output.
void write_chrome_trace(const Timeline& timeline, std::ostream& os);

}  // namespace splitsim
