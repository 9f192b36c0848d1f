// print_metrics_table: the table of `splitsim simulate` (see metrics_table.h).
#include "splitsim/sim/metrics_table.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "splitsim/costmodel/format.h"

namespace splitsim {
namespace {

// The table's short forms (format.h): "1.23M", "12.300 ms", "26%".
std::string si(double v) { return format_si(v); }
std::string seconds(double s) { return format_seconds(s); }
std::string percent(double f) { return format_percent(f); }

// The parties shown in the table: with several clients, client0 stands for
// every client ("client0 (each)"); every other party as itself.
std::string party_bytes(const Metrics& m) {
  std::string out;
  bool client_shown = false;
  for (const auto& p : m.parties) {
    if (p.client && client_shown) continue;
    std::string name = p.name;
    if (p.client && m.clients > 1) name += " (each)";
    client_shown |= p.client;
    out += (out.empty() ? "" : "  ") + name + " " + si(p.bytes_sent_per_batch) + "B/" +
           si(p.bytes_received_per_batch) + "B";
  }
  return out;
}

void print_title(std::ostream& os, const std::vector<Metrics>& all) {
  const Metrics& first = all.front();
  bool same_schedule = true, same_window = true;
  for (const auto& m : all) {
    same_schedule &= m.schedule == first.schedule;
    same_window &= m.batches == first.batches && m.warmup_batches == first.warmup_batches;
  }
  os << "== " << first.scenario << ": " << all.size() << " variant(s)";
  if (same_window)
    os << ", steady state over batches " << first.warmup_batches << ".." << first.batches - 1;
  if (same_schedule) os << ", schedule " << first.schedule;
  if (first.clients > 1) os << ", " << first.clients << " clients";
  os << "\n";
}

// Words of `text` (split at spaces) in lines of at most `width` characters;
// a longer word is cut into pieces of `width`.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines(1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    for (size_t at = start; at < end; at += width) {
      const std::string piece = text.substr(at, std::min(width, end - at));
      if (!lines.back().empty() && lines.back().size() + 1 + piece.size() > width)
        lines.emplace_back();
      lines.back() += (lines.back().empty() ? "" : " ") + piece;
    }
    start = end + 1;
  }
  return lines;
}

const PartyMetrics* first_client(const Metrics& m) {
  for (const auto& p : m.parties)
    if (p.client) return &p;
  return nullptr;
}

void print_client_groups(std::ostream& os, const Metrics& m) {
  char line[512];
  for (const ClientGroupMetrics& g : m.client_groups) {
    std::snprintf(line, sizeof line,
                  "  %s: %lld client(s), time/batch %s (%s..%s), busy %s, sent/received %s/%s B "
                  "each\n",
                  g.name.c_str(), static_cast<long long>(g.clients),
                  seconds(g.time_per_batch.median_s).c_str(),
                  seconds(g.time_per_batch.min_s).c_str(), seconds(g.time_per_batch.max_s).c_str(),
                  seconds(g.busy_s_per_batch).c_str(), si(g.bytes_sent_per_batch).c_str(),
                  si(g.bytes_received_per_batch).c_str());
    os << line;
  }
  if (!m.client_groups.empty())
    os << "  round wait for the last client: " << seconds(m.round_wait_spread.median_s) << " ("
       << seconds(m.round_wait_spread.min_s) << ".." << seconds(m.round_wait_spread.max_s)
       << ")\n";
}

}  // namespace

void print_metrics_table(std::ostream& os, const std::vector<Metrics>& all) {
  print_title(os, all);
  // Everything but the variant takes 85 columns (a bottleneck as long as
  // "link clients->server (100%)"); the labels get the rest of
  // kTableColumns and wrap at spaces beyond it.
  const size_t label_width = kTableColumns - 85;
  size_t width = 7;
  for (const auto& m : all) width = std::max(width, m.variant.size());
  width = std::min(width, label_width);
  char line[1024];
  std::snprintf(line, sizeof line, "%-*s %10s %10s %16s %16s  %s\n", static_cast<int>(width),
                "variant", "time/batch", "compute", "avg up/down B/s", "peak up/down B/s",
                "bottleneck (utilisation)");
  os << line;
  for (const auto& m : all) {
    const PartyMetrics* client = first_client(m);
    const std::string avg = client ? si(client->bandwidth_avg_send_Bps) + "/" +
                                         si(client->bandwidth_avg_recv_Bps)
                                   : "-";
    const std::string peak =
        si(m.bandwidth_peak_client_Bps) + "/" + si(m.bandwidth_peak_server_Bps);
    const std::string busiest = m.busiest_resource + " (" + percent(m.busiest_utilisation) + ")";
    const std::vector<std::string> label = wrap(m.variant, width);
    std::snprintf(line, sizeof line, "%-*s %10s %10s %16s %16s  %s\n", static_cast<int>(width),
                  label[0].c_str(), seconds(m.time_per_batch_s).c_str(),
                  seconds(m.computation_time_s).c_str(), avg.c_str(), peak.c_str(),
                  busiest.c_str());
    os << line;
    for (size_t i = 1; i < label.size(); ++i) os << "  " << label[i] << "\n";
    print_client_groups(os, m);
  }
  os << "avg = bytes the client (the party of stage 0) sends / receives over the computation "
        "time (the reports'\ndefinition); peak = the fastest single transfer sent by a client / "
        "received by the server; --wide adds\nthe spread, bubble, stash per stage and bytes per "
        "party\n";
}

void print_wide_metrics_table(std::ostream& os, const std::vector<Metrics>& all) {
  print_title(os, all);
  size_t width = 7;
  for (const auto& m : all) width = std::max(width, m.variant.size());
  char line[1024];
  std::snprintf(line, sizeof line, "%-*s %11s %21s %11s %13s %13s %22s %6s  %-28s %s  %s\n",
                static_cast<int>(width), "variant", "time/batch", "spread (min..max)", "compute",
                "avg send B/s", "avg recv B/s", "peak client/server B/s", "bubble",
                "busiest (utilisation)", "peak stash per stage (B)",
                "bytes sent/received per batch");
  os << line;
  for (const auto& m : all) {
    const PartyMetrics* client = first_client(m);
    std::string stash;
    for (const auto& s : m.stages) stash += (stash.empty() ? "" : "/") + si(s.peak_stash_bytes);
    const std::string spread =
        seconds(m.time_per_batch_spread.min_s) + ".." + seconds(m.time_per_batch_spread.max_s);
    const std::string peak =
        si(m.bandwidth_peak_client_Bps) + "/" + si(m.bandwidth_peak_server_Bps);
    const std::string busiest = m.busiest_resource + " (" + percent(m.busiest_utilisation) + ")";
    std::snprintf(line, sizeof line, "%-*s %11s %21s %11s %13s %13s %22s %6s  %-28s %s  %s\n",
                  static_cast<int>(width), m.variant.c_str(), seconds(m.time_per_batch_s).c_str(),
                  spread.c_str(), seconds(m.computation_time_s).c_str(),
                  client ? si(client->bandwidth_avg_send_Bps).c_str() : "-",
                  client ? si(client->bandwidth_avg_recv_Bps).c_str() : "-", peak.c_str(),
                  percent(m.bubble_fraction).c_str(), busiest.c_str(), stash.c_str(),
                  party_bytes(m).c_str());
    os << line;
    // With several clients: each group's clients (stragglers show in the
    // spread of their own times per batch) and the rounds' wait for the last.
    for (const ClientGroupMetrics& g : m.client_groups) {
      std::snprintf(line, sizeof line,
                    "  %-*s %5lld client(s): time/batch %s (%s..%s), busy %s, sent/received "
                    "%s/%s B per client\n",
                    static_cast<int>(width), g.name.c_str(), static_cast<long long>(g.clients),
                    seconds(g.time_per_batch.median_s).c_str(),
                    seconds(g.time_per_batch.min_s).c_str(),
                    seconds(g.time_per_batch.max_s).c_str(), seconds(g.busy_s_per_batch).c_str(),
                    si(g.bytes_sent_per_batch).c_str(), si(g.bytes_received_per_batch).c_str());
      os << line;
    }
    if (!m.client_groups.empty())
      os << "  round wait for the last client: " << seconds(m.round_wait_spread.median_s) << " ("
         << seconds(m.round_wait_spread.min_s) << ".." << seconds(m.round_wait_spread.max_s)
         << ")\n";
  }
  os << "avg = bytes of the client (the party of stage 0) / computation time (the reports' "
        "definition); peak = the fastest single transfer sent by a client / received by the "
        "server (any other party)\n";
}

}  // namespace splitsim
