#include "splitsim/costmodel/timing.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <new>
#include <thread>

#include <torch/torch.h>

#include "splitsim/costmodel/codec_module.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/heap.h"
#include "splitsim/costmodel/median.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/optimizer.h"

namespace splitsim {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ProfileOptions::load_cpus: training steps of the model on those CPUs
// until destroyed.
class CompanionLoad {
 public:
  CompanionLoad(const ModelSpec& spec, int64_t batch, int threads, std::vector<int> cpus) {
    if (cpus.empty()) return;
    thread_ = std::thread([this, spec, batch, threads, cpus] { run(spec, batch, threads, cpus); });
  }
  ~CompanionLoad() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  CompanionLoad(const CompanionLoad&) = delete;
  CompanionLoad& operator=(const CompanionLoad&) = delete;

 private:
  void run(const ModelSpec& spec, int64_t batch, int threads, const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // unpinned if refused
    torch::set_num_threads(threads);  // OpenMP: this thread's team only
    try {
      SplitModel model = build_model(spec, /*seed=*/1);
      model.train(true);
      const torch::Tensor x = model.make_input(batch, 2), y = model.make_target(batch, 2);
      const auto params = model.parameters(0, model.size() - 1);
      while (!stop_) {
        torch::Tensor loss = model.loss(model.forward(x), y);
        if (loss.requires_grad()) loss.backward();
        for (auto p : params) p.mutable_grad() = torch::Tensor();
      }
    } catch (const std::exception&) {
      // A load generator only: the timings beside it stand, if taken with
      // the other CPUs idle.
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

double measure_peak_flops() {
  torch::NoGradGuard no_grad;
  const int64_t n = 1024;
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  double mm_best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto c = torch::mm(a, b);
    mm_best = std::min(mm_best, since(t0));
  }
  // LibTorch's convolutions (oneDNN) may beat its GEMM (OpenBLAS): the peak is
  // the faster of the two, so that fitted efficiencies stay <= 1.
  auto x = torch::randn({8, 64, 56, 56}), w = torch::randn({64, 64, 3, 3});
  double conv_best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto y = torch::conv2d(x, w, {}, 1, 1);
    conv_best = std::min(conv_best, since(t0));
  }
  const double conv_macs = 8.0 * 56 * 56 * 64 * 64 * 9;
  return std::max(2.0 * n * n * n / mm_best, 2.0 * conv_macs / conv_best);
}

double measure_memory_bandwidth() {
  torch::NoGradGuard no_grad;
  auto src = torch::randn({16 << 20});
  auto dst = torch::empty_like(src);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    dst.copy_(src);
    best = std::min(best, since(t0));
  }
  return 2.0 * src.numel() * 4 / best;
}

CodecTiming time_codec(const CodecSpec& codec, const std::vector<int64_t>& shape, int64_t batch,
                       int threads, int repeats) {
  hold_freed_heap_memory();
  torch::set_num_threads(threads);
  CodecTiming t;
  t.codec = codec_to_json(codec).dump();
  t.shape = shape;
  t.batch = batch;
  auto enc = make_encoder(codec, shape, /*seed=*/1);
  auto dec = make_decoder(codec, shape, /*seed=*/1);
  std::vector<int64_t> full{batch};
  full.insert(full.end(), shape.begin(), shape.end());
  const torch::Tensor x = torch::randn(full);
  const int rounds = 1 + std::max(1, repeats);  // the first a warm-up
  {
    std::vector<double> encode, decode;
    torch::NoGradGuard no_grad;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = Clock::now();
      const std::vector<torch::Tensor> wire = enc->pack(enc->carry(x));
      const double e = since(t0);
      t0 = Clock::now();
      const torch::Tensor back = dec->expand(dec->unpack(wire, batch));
      const double d = since(t0);
      if (back.numel() == 0) throw std::logic_error("time_codec: the codec decoded nothing");
      if (r == 0) continue;
      encode.push_back(e);
      decode.push_back(d);
    }
    t.encode_s = median(encode);
    t.decode_s = median(decode);
  }
  // A trainable insert's backward, as exec's runs it: the sender's through
  // carry (its input came from a unit, so it needs the input's gradient
  // besides the weights'), the receiver's through expand (its input's
  // gradient is what goes back on the wire).
  if (enc->parameters().empty() && dec->parameters().empty()) return t;
  const torch::Tensor input = x.detach().requires_grad_(true);
  std::vector<double> sender, receiver;
  for (int r = 0; r < rounds; ++r) {
    const torch::Tensor y = enc->carry(input);
    const torch::Tensor y_hat = y.detach().requires_grad_(true);
    const torch::Tensor x_hat = dec->expand(y_hat);
    const torch::Tensor grad = torch::ones_like(x_hat);
    auto t0 = Clock::now();
    x_hat.backward(grad);
    const double rb = since(t0);
    t0 = Clock::now();
    if (y.requires_grad()) y.backward(y_hat.grad());
    const double sb = since(t0);
    if (r == 0) continue;
    receiver.push_back(rb);
    sender.push_back(sb);
  }
  t.sender_backward_s = median(sender);
  t.receiver_backward_s = median(receiver);
  return t;
}

std::vector<WakePoint> measure_wake_cost(const ModelSpec& spec, int64_t batch, int threads,
                                         const std::function<void(const std::string&)>& progress,
                                         const std::vector<double>& gaps, int repeats) {
  hold_freed_heap_memory();
  torch::set_num_threads(threads);
  SplitModel model = build_model(spec, /*seed=*/0);
  model.train(true);
  const torch::Tensor input = model.make_input(batch, 1);
  // The probe is a computation as a stage runs one: the forward of the
  // model's first units, as many as make 0.3 ms (each touches weights of
  // its own), repeated when the whole model takes less.
  constexpr double kProbeS = 3e-4;
  int last = 0;
  const auto op_s = [&](int times) {
    const auto t0 = Clock::now();
    for (int i = 0; i < times; ++i) model.forward(input, 0, last);
    return since(t0);
  };
  op_s(3);  // warm-up
  while (last + 1 < model.size() && op_s(1) < kProbeS) {
    ++last;
    op_s(1);  // the new unit's warm-up
  }
  const int times =
      static_cast<int>(std::clamp(std::ceil(kProbeS / std::max(op_s(1), 1e-7)), 1.0, 1e4));
  std::vector<double> hot;
  std::vector<std::vector<double>> cold(gaps.size()), slept(gaps.size());
  for (int r = 0; r < repeats; ++r) {
    op_s(times);
    hot.push_back(op_s(times));
    for (size_t g = 0; g < gaps.size(); ++g) {
      const auto t0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(gaps[g]));
      slept[g].push_back(since(t0));
      cold[g].push_back(op_s(times));
    }
  }
  std::vector<WakePoint> points;
  const double base = median(hot);
  for (size_t g = 0; g < gaps.size(); ++g) {
    const double gap = median(slept[g]);
    if (!points.empty() && !(gap > points.back().gap_s)) continue;
    points.push_back({gap, std::max(0.0, median(cold[g]) - base)});
  }
  std::string units = model.names.front();
  if (last > 0) units += ".." + model.names[static_cast<size_t>(last)];
  std::string line = "wake cost (" + units + " forward" +
                     (times > 1 ? " x" + std::to_string(times) : "") + ", " + format_seconds(base) +
                     " back to back):";
  for (const WakePoint& w : points)
    line += " " + format_seconds(w.seconds) + " after " + format_seconds(w.gap_s);
  progress(line);
  return points;
}

DeviceProfile profile_this_machine(const ModelSpec& spec, const ProfileOptions& opts,
                                   const std::function<void(const std::string&)>& progress) {
  hold_freed_heap_memory();
  torch::set_num_threads(opts.threads);
  SplitModel model = build_model(spec, /*seed=*/0);
  model.train(true);
  const int n = model.size();
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  for (int i = 0; i < n; ++i) {
    optimizers.push_back(make_optimizer(opts.optimizer, model.parameters(i, i)));
  }
  const torch::Tensor input = model.make_input(opts.batch, 1);
  const torch::Tensor target = model.make_target(opts.batch, 1);

  std::vector<std::vector<double>> fwd(n), bwd(n), upd(n);
  CompanionLoad load(spec, opts.batch, opts.threads, opts.load_cpus);
  const int rounds = opts.warmup + opts.repeats;
  const int64_t m = std::max<int64_t>(1, opts.in_flight);
  for (int r = 0; r < rounds; ++r) {
    const bool timed = r >= opts.warmup;
    std::vector<std::vector<torch::Tensor>> ins(m, std::vector<torch::Tensor>(n)),
        outs(m, std::vector<torch::Tensor>(n));
    for (int64_t j = 0; j < m; ++j) {
      torch::Tensor x = input;
      // A unit's input asks for its gradient only where a run computes it:
      // some unit before it trains (a frozen first part sends none back).
      bool earlier_trains = false;
      for (int i = 0; i < n; ++i) {
        ins[j][i] =
            (i == 0 || !x.is_floating_point()) ? x : x.detach().requires_grad_(earlier_trains);
        for (const auto& p : model.units[i]->parameters()) earlier_trains |= p.requires_grad();
        const auto t0 = Clock::now();
        outs[j][i] = model.units[i]->forward(ins[j][i]);
        if (timed) fwd[i].push_back(since(t0));
        x = outs[j][i];
      }
    }
    for (int64_t j = m - 1; j >= 0; --j) {
      for (int i = n - 1; i >= 0; --i) {
        const auto t0 = Clock::now();
        if (i == n - 1) model.loss(outs[j][i], target).backward();
        else if (outs[j][i].requires_grad()) outs[j][i].backward(ins[j][i + 1].grad());  // else frozen
        if (timed) bwd[i].push_back(since(t0));
      }
      ins[j].clear();  // this micro-batch's activations are free now, as in a stage
      outs[j].clear();
    }
    for (int i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      if (optimizers[i]) {
        optimizers[i]->step();
        optimizers[i]->zero_grad();
      }
      if (timed) upd[i].push_back(since(t0));
    }
    progress("round " + std::to_string(r + 1) + "/" + std::to_string(rounds) +
             (r < opts.warmup ? " (warm-up)" : ""));
  }

  DeviceProfile d;
  d.measured_model = model.spec.name;
  d.measured_input_shape = std::vector<int64_t>(input.sizes().begin() + 1, input.sizes().end());
  d.measured_batch = opts.batch;
  d.measured_in_flight = m;
  d.threads = opts.threads;
  // Each timed round's forwards and backwards of every unit: what one
  // batch of the whole model took, round after round.
  std::vector<double> round_s(static_cast<size_t>(opts.repeats), 0.0);
  for (int i = 0; i < n; ++i) {
    d.timings.push_back({model.names[i], median(fwd[i]), median(bwd[i]), median(upd[i])});
    for (size_t k = 0; k < fwd[i].size() && k < bwd[i].size(); ++k)
      round_s[k / static_cast<size_t>(m)] += fwd[i][k] + bwd[i][k];
  }
  d.timing_spread = timing_spread_of({round_s});
  return d;
}

namespace {

// True iff `e` is an allocation failure: std::bad_alloc, or LibTorch's
// c10::Error from its CPU allocator ("DefaultCPUAllocator: can't allocate
// memory", "not enough memory").
bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  const std::string what = e.what();
  return what.find("can't allocate memory") != std::string::npos ||
         what.find("not enough memory") != std::string::npos ||
         what.find("out of memory") != std::string::npos;
}

// The request's model with its defaults; errors name the request's field
// ("$.image_size" -> "image_size", "$.name" -> "model").
ModelSpec requested_model(const ProfileRequest& r) {
  if (r.model.empty()) throw InputError("model", "give --model NAME or --scenario FILE");
  ModelSpec spec;
  spec.name = r.model;
  spec.image_size = r.image_size;
  spec.seq_len = r.seq_len;
  spec.num_classes = r.num_classes;
  try {
    return resolve_model_defaults(spec, "$");
  } catch (const InputError& e) {
    const std::string field = e.where().substr(std::min<size_t>(2, e.where().size()));
    throw InputError(field == "name" ? "model" : field, e.message());
  }
}

}  // namespace

MeasuredDevice profile_this_machine(const ProfileRequest& r,
                                    const std::function<void(const std::string&)>& progress) {
  ModelSpec spec;
  ProfileOptions options = r.options;
  if (!r.scenario.empty()) {
    const auto variants = load_scenario_file(r.scenario);
    spec = variants.front().scenario.model;
    options.optimizer = variants.front().scenario.optimizer;
  } else {
    spec = requested_model(r);
  }
  try {
    return measure_this_machine(spec, options, r.name, progress);
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    throw InputError("batch", "batch " + std::to_string(options.batch) +
                                  " is too large for this machine's memory (the model's "
                                  "tensors could not be allocated); give a smaller --batch");
  }
}

}  // namespace splitsim
