// `splitsim profile`: measure this machine on a model and write a device
// profile (profile_this_machine,
// costmodel/torch/include/splitsim/costmodel/timing.h).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/timing.h"

namespace splitsim {
namespace {

struct ProfileArgs {
  ProfileRequest request;
  std::string output;
};

int run_profile(const ProfileArgs& args) {
  check_output_path(args.output, "-o");  // before the measurement
  const MeasuredDevice m = profile_this_machine(
      args.request, [](const std::string& line) { std::cerr << "profile: " << line << "\n"; });
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
  auto* model = sub->add_option("--model", args->request.model,
                                "model name (mobilenet_v2, mobilenet_v2_cifar, resnet20, "
                                "roberta_base, bert_small)");
  sub->add_option("--scenario", args->request.scenario,
                  "take the model and optimizer from this scenario file instead")
      ->excludes(model);
  sub->add_option("--image-size", args->request.image_size, "image models: input H = W")
      ->check(int_range(limits::kMinImageSize, limits::kMaxImageSize));
  sub->add_option("--seq-len", args->request.seq_len, "transformers: sequence length")
      ->check(int_range(1, limits::kMaxSeqLen));
  sub->add_option("--num-classes", args->request.num_classes, "classes / labels")
      ->check(int_range(1, limits::kMaxNumClasses));
  sub->add_option("--batch", args->request.options.batch, "batch size to time")
      ->capture_default_str()
      ->check(int_range(1, 4096));
  sub->add_option("--threads", args->request.options.threads, "LibTorch compute threads")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  sub->add_option("--repeats", args->request.options.repeats, "timed rounds (median)")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--in-flight", args->request.options.in_flight,
                  "micro-batches held at once: each round runs their forwards, then their "
                  "backwards in reverse, as a GPipe stage does")
      ->capture_default_str()
      ->check(int_range(1, limits::kMaxChunks));
  sub->add_option("--warmup", args->request.options.warmup, "untimed rounds first")
      ->capture_default_str()
      ->check(int_range(0, 1000));
  sub->add_option("--name", args->request.name, "device name written in the profile")
      ->capture_default_str();
  sub->add_option("-o,--output", args->output, "device profile JSON to write")->required();
  return {sub, [args] { return run_profile(*args); }};
}

}  // namespace splitsim
