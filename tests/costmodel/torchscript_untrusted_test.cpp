// TorchScript files as someone else made them: a forward that loops, raises
// or allocates without end, a tensor longer than its record, and the child
// process that tries every file first (costmodel/torch/src/models/isolated.h).
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "expect_input_error.h"
#include "model_test_util.h"
#include "models/isolated.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

// encoder (a parameter [4, 8]) then decoder running `decoder_body`; [B,4] in.
torch::jit::Module net_with_decoder(const std::string& decoder_body) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module encoder("Encoder", cu);
  encoder.register_parameter("weight", torch::randn({4, 8}).requires_grad_(), false);
  encoder.define("def forward(self, x):\n  return torch.matmul(x, self.weight)\n");
  torch::jit::Module decoder("Decoder", cu);
  decoder.register_parameter("weight", torch::randn({8, 3}).requires_grad_(), false);
  decoder.define("def forward(self, x):\n" + decoder_body);
  torch::jit::Module net("Net", cu);
  net.register_module("encoder", encoder);
  net.register_module("decoder", decoder);
  net.define("def forward(self, x):\n  return self.decoder.forward(self.encoder.forward(x))\n");
  return net;
}

class ModelFile {
 public:
  explicit ModelFile(const std::string& stem)
      : path_((std::filesystem::temp_directory_path() /
               ("splitsim_untrusted_" + stem + "_" + std::to_string(::getpid()) + ".pt"))
                  .string()) {}
  ~ModelFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }
  ModelSpec spec() const {
    ModelSpec s = spec_of("torchscript");
    s.path = path_;
    s.input_shape = {4};
    return s;
  }

 private:
  std::string path_;
};

void expect_refused(const ModelFile& f, const std::string& phrase) {
  expect_error([&] { build_model(f.spec()); }, "$.model.path", phrase);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(UntrustedTorchScript, AForwardWithoutEndIsStoppedAtTheTimeLimit) {
  ModelFile f("loop");
  net_with_decoder("  while bool(x.sum() > -1e30):\n    x = x + 1.0\n  return x\n").save(f.path());
  ScopedEnv limit("SPLITSIM_MODEL_CHECK_S", "1.5");
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(f, "did not finish running unit decoder on one sample within 1.5 s");
  EXPECT_LT(seconds_since(t0), 10);
}

TEST(UntrustedTorchScript, AnAllocationPastTheMemoryLimitIsRefused) {
  ModelFile f("alloc");
  // 800 MB at once, over a limit of 256 MiB (and fine without one).
  net_with_decoder("  return torch.matmul(x, self.weight) + torch.ones(200000000).sum()\n")
      .save(f.path());
  ScopedEnv limit("SPLITSIM_MODEL_CHECK_MIB", "256");
  expect_refused(f, "needs more than 256 MiB running unit decoder on one sample");
}

TEST(UntrustedTorchScript, AForwardThatRaisesIsRefusedNamingTheUnit) {
  ModelFile f("raises");
  // A view that cannot be: [1, 3] as rows of 5.
  net_with_decoder("  return torch.matmul(x, self.weight).view(-1, 5)\n").save(f.path());
  expect_refused(f, "unit decoder of the TorchScript model");
}

TEST(UntrustedTorchScript, AStorageLongerThanItsRecordNeverReachesLibTorch) {
  // The encoder's weight says 255 floats where its record holds 32: the
  // element count ends the storage's persistent id in data.pkl (BININT1 32,
  // TUPLE, BINPERSID).
  std::ostringstream saved;
  net_with_decoder("  return torch.matmul(x, self.weight)\n").save(saved);
  std::string bytes = saved.str();
  const std::string numel = std::string("K") + static_cast<char>(32) + "tQ";
  const size_t at = bytes.find(numel);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = static_cast<char>(255);
  ModelFile f("oob");
  std::ofstream(f.path(), std::ios::binary) << bytes;
  expect_refused(f, "255 elements of 4 bytes, but the record holds 128 bytes");
}

TEST(UntrustedTorchScript, AFifoIsRefusedWithoutBlocking) {
  ModelFile f("fifo");
  ASSERT_EQ(::mkfifo(f.path().c_str(), 0600), 0);
  expect_refused(f, "is not a regular file");
}

TEST(UntrustedTorchScript, LimitsFromTheEnvironmentAreChecked) {
  ScopedEnv bad("SPLITSIM_MODEL_CHECK_S", "soon");
  expect_error([] { models::isolation_limits(); }, "SPLITSIM_MODEL_CHECK_S", "not a positive");
}

// A refusal's text: no LibTorch backtrace, one line, no control characters
// (names from a mutated file reach the terminal).
void expect_one_clean_line(const std::string& what, int mutation) {
  for (const char* raw : {"frame #", "Exception raised from", "terminate called"})
    EXPECT_EQ(what.find(raw), std::string::npos) << "mutation " << mutation << ": " << what;
  for (char c : what)
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << "mutation " << mutation << ": " << what;
}

// Whether the file loads; a refusal must be at $.model.path in one clean line.
bool loads_or_is_refused_cleanly(const ModelFile& f, int mutation) {
  try {
    build_model(f.spec());
    return true;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.model.path") << e.what();
    expect_one_clean_line(e.what(), mutation);
    return false;
  }
}

// A fixed-seed fuzz of a saved model's archive: bytes flipped, runs cut out
// or repeated, the end cut off. Each file loads or is refused with exit 2's
// InputError at $.model.path on one line without LibTorch's backtrace; a
// crash in LibTorch's loader would be the child's (isolated.h), never this
// process's.
TEST(UntrustedTorchScript, MutatedArchivesLoadOrAreRefusedInOneLine) {
  std::ostringstream saved;
  net_with_decoder("  return torch.matmul(x, self.weight)\n").save(saved);
  const std::string original = saved.str();
  std::mt19937 rng(39);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  ModelFile f("fuzz");
  int loaded = 0, refused = 0;
  for (int i = 0; i < 120; ++i) {
    std::string bytes = original;
    switch (i % 4) {
      case 0:
        for (int k = 0; k < 4; ++k) bytes[pick(bytes.size())] ^= static_cast<char>(1 + pick(255));
        break;
      case 1: bytes.erase(pick(bytes.size()), 1 + pick(64)); break;
      case 2: {
        const size_t at = pick(bytes.size());
        bytes.insert(at, bytes.substr(at, 1 + pick(64)));
        break;
      }
      default: bytes.resize(pick(bytes.size()));
    }
    std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << bytes;
    if (loads_or_is_refused_cleanly(f, i)) {
      ++loaded;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 60);  // most mutations break the zip or a pickle
  RecordProperty("loaded", loaded);
}

// The archive again with data.pkl replaced, CRCs right (LibTorch's writer).
std::string with_data_pkl(const std::string& archive, const std::string& pickle) {
  std::istringstream in(archive);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  for (const std::string& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version") continue;  // the writer adds it
    if (name == "data.pkl") {
      writer.writeRecord(name, pickle.data(), pickle.size());
      continue;
    }
    auto [data, size] = reader.getRecord(name);
    writer.writeRecord(name, data.get(), size);
  }
  writer.writeEndOfFile();
  return out;
}

// The same for the pickle inside, whose CRC stays right: opcodes and their
// arguments flipped, sizes and counts replaced. What the archive check
// passes, the child loads.
TEST(UntrustedTorchScript, MutatedPicklesLoadOrAreRefusedInOneLine) {
  std::ostringstream saved;
  net_with_decoder("  return torch.matmul(x, self.weight)\n").save(saved);
  const std::string original = saved.str();
  std::istringstream in(original);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  auto [data, size] = reader.getRecord("data.pkl");
  const std::string pickle(static_cast<const char*>(data.get()), size);
  std::mt19937 rng(3939);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  ModelFile f("pickle_fuzz");
  std::ofstream(f.path(), std::ios::binary) << with_data_pkl(original, pickle);
  EXPECT_NO_THROW(build_model(f.spec()));  // repacked as is, it loads
  int loaded = 0, refused = 0;
  for (int i = 0; i < 80; ++i) {
    std::string p = pickle;
    if (i % 2 == 0) {
      p[2 + pick(p.size() - 3)] ^= static_cast<char>(1 + pick(255));
    } else {  // a BININT1 (a size, stride, offset or count) given another value
      size_t at = 2 + pick(p.size() - 4);
      while (at < p.size() - 2 && p[at] != 'K') ++at;
      p[at + 1] = static_cast<char>(pick(256));
    }
    std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << with_data_pkl(original, p);
    if (loads_or_is_refused_cleanly(f, i)) {
      ++loaded;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 20);
  RecordProperty("loaded", loaded);
}

// run_isolated itself: what the child's end becomes.
TEST(Isolated, ACrashInTheChildIsItsSignalAndLastStep) {
  const models::IsolatedOutcome out = models::run_isolated(
      [](const models::ReportStep& step) {
        step("reading the bad part");
        ::raise(SIGSEGV);
      },
      models::IsolationLimits{});
  EXPECT_EQ(out.kind, models::IsolatedOutcome::kSignal);
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_EQ(out.step, "reading the bad part");
}

TEST(Isolated, ErrorsAndTimeoutsComeBack) {
  auto input = models::run_isolated(
      [](const models::ReportStep&) { throw InputError("$.x", "bad x"); },
      models::IsolationLimits{});
  EXPECT_EQ(input.kind, models::IsolatedOutcome::kInputError);
  EXPECT_EQ(input.where, "$.x");
  EXPECT_EQ(input.message, "bad x");

  models::IsolationLimits quick;
  quick.seconds = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  auto slow = models::run_isolated(
      [](const models::ReportStep&) { std::this_thread::sleep_for(std::chrono::seconds(30)); },
      quick);
  EXPECT_EQ(slow.kind, models::IsolatedOutcome::kTimeout);
  EXPECT_LT(seconds_since(t0), 5);

  auto fine = models::run_isolated([](const models::ReportStep&) {}, quick);
  EXPECT_EQ(fine.kind, models::IsolatedOutcome::kOk);
}

}  // namespace
}  // namespace splitsim
