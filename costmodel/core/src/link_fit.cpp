#include "splitsim/costmodel/link_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace splitsim {
namespace {

// What the step makes wait at the rate: the packets before the last one,
// less the bucket.
double step_paced(const TransferSample& s, double packet, double bucket) {
  return htb_paced_bytes(s.total_bytes(), s.last_tensor_bytes(), packet, bucket);
}

// Weighted least squares of T on up to three basis functions, weights
// 1 / T^2 (relative error). Returns false when the system is singular.
template <size_t N>
bool solve(const std::vector<TransferSample>& samples,
           std::array<double, N> (*basis)(double bytes, double brk), double brk,
           std::array<double, N>* coef) {
  std::array<std::array<double, N + 1>, N> a{};
  for (const TransferSample& s : samples) {
    const double w = 1 / (s.seconds * s.seconds);
    const std::array<double, N> x = basis(s.total_bytes(), brk);
    for (size_t i = 0; i < N; ++i) {
      for (size_t j = 0; j < N; ++j) a[i][j] += w * x[i] * x[j];
      a[i][N] += w * x[i] * s.seconds;
    }
  }
  for (size_t c = 0; c < N; ++c) {  // Gaussian elimination, partial pivoting
    size_t p = c;
    for (size_t r = c + 1; r < N; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (std::fabs(a[p][c]) < 1e-300) return false;
    std::swap(a[c], a[p]);
    for (size_t r = 0; r < N; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k <= N; ++k) a[r][k] -= f * a[c][k];
    }
  }
  for (size_t i = 0; i < N; ++i) (*coef)[i] = a[i][N] / a[i][i];
  return true;
}

std::array<double, 2> line(double bytes, double) { return {1.0, bytes}; }
std::array<double, 3> stick(double bytes, double brk) {
  return {1.0, std::min(bytes, brk), std::max(0.0, bytes - brk)};
}

double rms_rel(const std::vector<TransferSample>& samples, const LinkFit& fit) {
  double sum = 0;
  for (const TransferSample& s : samples) {
    const double e =
        (fitted_transfer_s(fit, s.total_bytes(), s.last_tensor_bytes()) - s.seconds) / s.seconds;
    sum += e * e;
  }
  return std::sqrt(sum / static_cast<double>(samples.size()));
}

// The two-slope fit breaking at `brk`; invalid unless the slope before the
// break is the faster and the fixed cost is not negative.
LinkFit two_slopes(const std::vector<TransferSample>& samples, double brk) {
  std::array<double, 3> c{};
  if (!solve(samples, &stick, brk, &c) || !(c[0] >= 0 && c[1] > 0 && c[2] > c[1])) return {};
  LinkFit f;
  f.latency_s = c[0];
  f.peak_Bps = 1 / c[1];
  f.rate_Bps = 1 / c[2];
  // The bucket that runs dry at the break: b + r * (brk / P) = brk.
  f.burst_bytes = std::llround(brk * (1 - f.rate_Bps / f.peak_Bps));
  f.rms_rel_error = rms_rel(samples, f);
  return f;
}

// The step with packets of `packet` and a bucket of `bucket` bytes: L and
// r by least squares; invalid unless both are positive (L >= 0).
LinkFit stepped(const std::vector<TransferSample>& samples, double packet, double bucket) {
  double sw = 0, swx = 0, swxx = 0, swy = 0, swxy = 0;
  for (const TransferSample& s : samples) {
    const double w = 1 / (s.seconds * s.seconds);
    const double x = step_paced(s, packet, bucket);
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swy += w * s.seconds;
    swxy += w * x * s.seconds;
  }
  const double det = sw * swxx - swx * swx;
  if (!(det > 0)) return {};
  const double latency = (swxx * swy - swx * swxy) / det;
  const double per_byte = (sw * swxy - swx * swy) / det;
  if (!(latency >= 0 && per_byte > 0)) return {};
  LinkFit f;
  f.latency_s = latency;
  f.rate_Bps = f.peak_Bps = 1 / per_byte;
  f.burst_bytes = static_cast<int64_t>(bucket);
  f.packet_bytes = static_cast<int64_t>(packet);
  f.rms_rel_error = rms_rel(samples, f);
  return f;
}

}  // namespace

double htb_paced_bytes(double bytes, double last_tensor, double packet, double tokens,
                       bool queued) {
  // Tensors before the last that need more than one packet are still in
  // TCP's queue when the last is written (the shaper holds their later
  // packets), so it joins their last packet, as a queued message does.
  const double last = queued || bytes - last_tensor > packet ? bytes : last_tensor;
  const double before_last = bytes - last + packet * std::max(0.0, std::ceil(last / packet) - 1);
  return std::max(0.0, before_last - tokens);
}

double fitted_transfer_s(const LinkFit& fit, double bytes, double last_tensor) {
  if (!fit.valid()) return NAN;
  const double r = fit.rate_Bps, p = fit.peak_Bps, b = static_cast<double>(fit.burst_bytes);
  if (fit.packet_bytes > 0)
    return fit.latency_s + htb_paced_bytes(bytes, last_tensor > 0 ? last_tensor : bytes,
                                           static_cast<double>(fit.packet_bytes), b) /
                               r;
  const double knee = p > r && b > 0 ? p * b / (p - r) : 0;
  if (bytes <= knee) return fit.latency_s + bytes / p;
  return fit.latency_s + knee / p + (bytes - knee) / r;
}

namespace {

// The straight line: a plain wire.
LinkFit best_line(const std::vector<TransferSample>& samples) {
  std::array<double, 2> c{};
  if (!solve(samples, &line, 0, &c) || !(c[1] > 0)) return {};
  LinkFit f;
  f.latency_s = std::max(0.0, c[0]);
  f.rate_Bps = f.peak_Bps = 1 / c[1];
  f.rms_rel_error = rms_rel(samples, f);
  return f;
}

bool better(const LinkFit& f, const LinkFit& than) {
  return f.valid() && (!than.valid() || f.rms_rel_error < than.rms_rel_error);
}

// The two slopes, breaking anywhere from the smallest size to the third
// largest (two sizes beyond the break): a grid of `step` per octave, then a
// ternary search around the grid's best.
LinkFit best_two_slopes(const std::vector<TransferSample>& samples,
                        const std::vector<int64_t>& sizes, double step) {
  const double lo = static_cast<double>(sizes.front());
  const double hi = static_cast<double>(sizes[sizes.size() - 3]);
  LinkFit best;
  double best_break = 0;
  for (double brk = lo; brk <= hi * (1 + 1e-9); brk *= step) {
    const LinkFit f = two_slopes(samples, brk);
    if (better(f, best)) {
      best = f;
      best_break = brk;
    }
  }
  if (best_break == 0) return best;
  const auto error_at = [&](double brk) {
    const LinkFit f = two_slopes(samples, brk);
    return f.valid() ? f.rms_rel_error : INFINITY;
  };
  double a = std::max(lo, best_break / step), b = std::min(hi, best_break * step);
  for (int i = 0; i < 60; ++i) {
    const double m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
    if (error_at(m1) <= error_at(m2))
      b = m2;
    else
      a = m1;
  }
  const LinkFit refined = two_slopes(samples, (a + b) / 2);
  return better(refined, best) ? refined : best;
}

// The step: packets from the smallest size to half the largest, buckets
// from none to the largest size, `step` per octave.
LinkFit best_step(const std::vector<TransferSample>& samples, const std::vector<int64_t>& sizes,
                  double step) {
  const double lo = static_cast<double>(sizes.front());
  const double largest = static_cast<double>(sizes.back());
  LinkFit best;
  for (double packet = lo; packet <= largest / 2 * (1 + 1e-9); packet *= step)
    for (double bucket = 0; bucket <= largest; bucket = bucket > 0 ? bucket * step : lo / 4) {
      const LinkFit f = stepped(samples, std::round(packet), std::round(bucket));
      if (better(f, best)) best = f;
    }
  return best;
}

}  // namespace

LinkFit fit_link(const std::vector<TransferSample>& samples) {
  std::vector<TransferSample> usable;
  std::set<int64_t> distinct;
  for (const TransferSample& s : samples)
    if (s.bytes > 0 && s.seconds > 0 && std::isfinite(s.seconds)) {
      usable.push_back(s);
      distinct.insert(s.bytes);
    }
  if (distinct.size() < 3) return {};
  const std::vector<int64_t> sizes(distinct.begin(), distinct.end());
  const double step = std::pow(2.0, 1.0 / 16);
  LinkFit best = best_line(usable);
  for (const LinkFit& f : {best_two_slopes(usable, sizes, step), best_step(usable, sizes, step)})
    if (better(f, best)) best = f;
  return best;
}

nlohmann::json link_fit_json(const LinkFit& fit) {
  return {{"latency_s", fit.latency_s},       {"rate_Bps", fit.rate_Bps},
          {"peak_Bps", fit.peak_Bps},         {"burst_bytes", fit.burst_bytes},
          {"packet_bytes", fit.packet_bytes}, {"rms_rel_error", fit.rms_rel_error}};
}

void apply_link_fit(const LinkFit& fit, NetworkSpec* network) {
  if (!fit.valid()) return;
  network->per_message_overhead_s = fit.latency_s;
  network->burst_bytes = fit.burst_bytes;
  network->burst_packet_bytes = fit.packet_bytes;
  network->burst_peak_bit_per_s =
      fit.burst_bytes > 0 && fit.packet_bytes == 0 ? 8 * fit.peak_Bps : 0;
}

}  // namespace splitsim
