#pragma once
// Checkpoint files: one per (stage, client) instance and step, written by
// the process that runs the instance (exec/TRAINING.md "Checkpoints and
// resume"). A file is the stage's tensors (its units' parameters and
// buffers, its codecs' trainable inserts, its optimizer's state) as raw
// bytes behind a JSON header, with a CRC-32 over the whole file:
//
//   "SPLTCKPT"  header bytes H (u64 LE)  payload bytes P (u64 LE)
//   header JSON (H bytes)  payload (P bytes)  CRC-32 of all before (u32 LE)
//
// Written atomically (a temporary file, fsync, rename, fsync of the
// directory), so a file that exists is whole; read back only after its
// size, checksum, schema and every tensor's extent are checked. No LibTorch
// in this header.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace splitsim {

// What `exec`/`train` do with checkpoints. dir "" : none.
struct CheckpointOptions {
  std::string dir;
  int64_t every = 0;    // batches between checkpoints (> 0 with a dir)
  bool resume = false;  // start from the newest step every party has
};

// One tensor of a checkpoint: its bytes are payload[offset, offset + bytes).
struct CheckpointTensor {
  std::string name;   // e.g. "unit.3.weight", "optimizer.2.momentum_buffer"
  std::string dtype;  // c10's name: "Float", "Half", "BFloat16", "Double", "Long", ...
  std::vector<int64_t> shape;
  int64_t offset = 0, bytes = 0;
};

struct CheckpointFile {
  int64_t step = 0;  // batches done (and updated) before it was taken
  int stage = 0, client = 0;
  std::string identity;    // the run's identity hash: a file of another run is refused
  nlohmann::json records;  // the instance's training records so far (its batch losses, evaluations)
  std::vector<CheckpointTensor> tensors;
  std::string payload;
};

// A checkpoint that could not be written (disk full, no permission): the
// message names the file and the system's reason.
class CheckpointWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr const char* kCheckpointSchema = "splitsim.checkpoint/1";

// Throws InputError naming the flag for options that do not go together:
// --checkpoint-every or --resume without --checkpoint-dir, a directory
// with neither, a negative interval.
void check_checkpoint_options(const CheckpointOptions& options);

// The directory made ready for this process's `instances` ((stage,
// client) pairs): created if missing; without resume it must not hold
// their checkpoints (a fresh run would mix its files with another's:
// InputError("checkpoint_dir")). Returns the steps all of them hold whole.
std::vector<int64_t> prepare_checkpoint_dir(const CheckpointOptions& options,
                                            const std::vector<std::pair<int, int>>& instances);

// Bytes per element of a checkpoint dtype; 0 for a name it does not know.
int64_t checkpoint_dtype_bytes(const std::string& dtype);

// DIR/step-00000040.stage-2.client-0.ckpt
std::string checkpoint_path(const std::string& dir, int64_t step, int stage, int client);

// Writes `file` to `path` atomically (path + ".tmp", fsync, rename, fsync
// of the directory). Throws CheckpointWriteError, leaving no temporary file
// and whatever `path` held before untouched.
void write_checkpoint_file(const std::string& path, const CheckpointFile& file);

// Reads and checks `path`: a regular file of at most `max_bytes`, the
// magic, the sizes the file really has, the CRC-32, the schema, and every
// tensor's dtype, shape and extent (consecutive, covering the payload).
// Throws InputError naming the file and what is wrong; nothing of a
// refused file is used.
CheckpointFile read_checkpoint_file(const std::string& path, int64_t max_bytes);

// The steps of `dir` for which every instance in `instances` ((stage,
// client) pairs) has a file, ascending. Temporary files are ignored; files
// are not read.
std::vector<int64_t> complete_checkpoint_steps(const std::string& dir,
                                               const std::vector<std::pair<int, int>>& instances);

// Removes the files of instance (stage, client) older than `keep_from`.
void remove_checkpoints_before(const std::string& dir, int stage, int client, int64_t keep_from);

// The step to resume from, given each party's complete steps: the newest
// step all of them have; 0 when none has any. Throws InputError("resume")
// when some have steps but none is common, naming what each has.
int64_t common_checkpoint_step(const std::vector<std::vector<int64_t>>& steps_by_party,
                               const std::vector<std::string>& party_names);

}  // namespace splitsim
