// `splitsim profile`: measure this machine on a model and write a device
// profile (measure_this_machine,
// costmodel/torch/include/splitsim/costmodel/timing.h).
#include <algorithm>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/timing.h"

namespace splitsim {
namespace {

struct ProfileArgs {
  std::string model;
  std::string scenario;
  int64_t image_size = 0, seq_len = 0, num_classes = 0;
  std::string output;
  std::string name = "cpu_this_machine";
  ProfileOptions opts;
};

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

int run_profile(ProfileArgs& args) {
  check_output_path(args.output, "-o");  // before the measurement
  ModelSpec spec;
  if (!args.scenario.empty()) {
    const auto variants = load_scenario_file(args.scenario);
    spec = variants.front().scenario.model;
    args.opts.optimizer = variants.front().scenario.optimizer;
  } else {
    if (args.model.empty()) throw InputError("--model", "give --model NAME or --scenario FILE");
    spec.name = args.model;
    spec.image_size = args.image_size;
    spec.seq_len = args.seq_len;
    spec.num_classes = args.num_classes;
    try {
      spec = resolve_model_defaults(spec, "$");
    } catch (const InputError& e) {
      // "$.image_size" -> "--image-size": name the flag the user typed.
      std::string flag = e.where().substr(std::min<size_t>(2, e.where().size()));
      if (flag == "name") flag = "model";
      for (char& c : flag) c = c == '_' ? '-' : c;
      throw InputError("--" + flag, e.message());
    }
  }
  MeasuredDevice m;
  try {
    m = measure_this_machine(spec, args.opts, args.name, [](const std::string& line) {
      std::cerr << "profile: " << line << "\n";
    });
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    throw InputError("--batch", "batch " + std::to_string(args.opts.batch) +
                                    " is too large for this machine's memory (the model's "
                                    "tensors could not be allocated); give a smaller --batch");
  }
  write_output_file(args.output, measured_device_json(m).dump(2) + "\n", "-o");
  print_measured_device(std::cout, m);
  std::cout << "wrote " << args.output << "\n";
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* sub = app.add_subcommand(
      "profile",
      "Measure per-unit forward, backward and optimizer-step seconds of a model on this machine "
      "(warm-up, then the median of repeats), fit per-op-class efficiencies (least squares) and "
      "write a device profile JSON usable in scenarios' \"devices\".");
  auto* model = sub->add_option("--model", args->model,
                                "model name (mobilenet_v2, mobilenet_v2_cifar, resnet20, "
                                "roberta_base, bert_small)");
  sub->add_option("--scenario", args->scenario,
                  "take the model and optimizer from this scenario file instead")
      ->excludes(model);
  sub->add_option("--image-size", args->image_size, "image models: input H = W")
      ->check(int_range(limits::kMinImageSize, limits::kMaxImageSize));
  sub->add_option("--seq-len", args->seq_len, "transformers: sequence length")
      ->check(int_range(1, limits::kMaxSeqLen));
  sub->add_option("--num-classes", args->num_classes, "classes / labels")
      ->check(int_range(1, limits::kMaxNumClasses));
  sub->add_option("--batch", args->opts.batch, "batch size to time")
      ->capture_default_str()
      ->check(int_range(1, 4096));
  sub->add_option("--threads", args->opts.threads, "LibTorch compute threads")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  sub->add_option("--repeats", args->opts.repeats, "timed rounds (median)")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--in-flight", args->opts.in_flight,
                  "micro-batches held at once: each round runs their forwards, then their "
                  "backwards in reverse, as a GPipe stage does")
      ->capture_default_str()
      ->check(int_range(1, limits::kMaxChunks));
  sub->add_option("--warmup", args->opts.warmup, "untimed rounds first")
      ->capture_default_str()
      ->check(int_range(0, 1000));
  sub->add_option("--name", args->name, "device name written in the profile")
      ->capture_default_str();
  sub->add_option("-o,--output", args->output, "device profile JSON to write")->required();
  return {sub, [args] { return run_profile(*args); }};
}

}  // namespace splitsim
