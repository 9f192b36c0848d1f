#include "splitsim/exec/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

constexpr char kMagic[8] = {'S', 'P', 'L', 'T', 'C', 'K', 'P', 'T'};
constexpr int64_t kPrefixBytes = 24;  // magic, H, P
constexpr int64_t kCrcBytes = 4;
constexpr int64_t kMaxHeaderBytes = int64_t{64} << 20;

void put_u64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  return v;
}

uint32_t crc_of(const char* data, size_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(data), n));
}

std::string system_reason(int err) { return std::strerror(err); }

// write(2) of all of `data`, or the errno.
int write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

nlohmann::json header_json(const CheckpointFile& f) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const CheckpointTensor& t : f.tensors)
    tensors.push_back({{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", t.shape},
                       {"offset", t.offset},
                       {"bytes", t.bytes}});
  return {{"schema", kCheckpointSchema}, {"step", f.step},         {"stage", f.stage},
          {"client", f.client},          {"identity", f.identity}, {"records", f.records},
          {"tensors", tensors}};
}

// The fields of a header whose bytes passed the checksum; InputError(path, ...) otherwise.
CheckpointFile parse_header(const std::string& path, const std::string& text,
                            int64_t payload_bytes) {
  auto refuse = [&](const std::string& why) -> InputError {
    return InputError(path, "not a usable checkpoint: " + why);
  };
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw refuse(std::string("its header is not JSON (") + e.what() + ")");
  }
  CheckpointFile f;
  try {
    if (!h.is_object()) throw refuse("its header is not an object");
    if (h.at("schema") != kCheckpointSchema)
      throw refuse("schema " + h.at("schema").dump() + ", expected " + kCheckpointSchema);
    f.step = h.at("step").get<int64_t>();
    f.stage = h.at("stage").get<int>();
    f.client = h.at("client").get<int>();
    f.identity = h.at("identity").get<std::string>();
    f.records = h.at("records");
    if (f.step < 0 || f.stage < 0 || f.client < 0) throw refuse("a negative step, stage or client");
    int64_t next = 0;
    for (const auto& j : h.at("tensors")) {
      CheckpointTensor t;
      t.name = j.at("name").get<std::string>();
      t.dtype = j.at("dtype").get<std::string>();
      t.shape = j.at("shape").get<std::vector<int64_t>>();
      t.offset = j.at("offset").get<int64_t>();
      t.bytes = j.at("bytes").get<int64_t>();
      const int64_t element = checkpoint_dtype_bytes(t.dtype);
      if (element == 0) throw refuse("tensor \"" + t.name + "\" has an unknown dtype " + t.dtype);
      int64_t n = element;
      for (int64_t d : t.shape) {
        if (d < 0 || (d > 0 && n > payload_bytes / d))
          throw refuse("tensor \"" + t.name + "\" has a shape larger than the payload");
        n *= d;
      }
      if (t.offset != next || t.bytes != n || t.bytes > payload_bytes - next)
        throw refuse("tensor \"" + t.name + "\" does not fit its place in the payload");
      next += t.bytes;
      f.tensors.push_back(std::move(t));
    }
    if (next != payload_bytes) throw refuse("its tensors do not cover the payload");
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw refuse(std::string("a header field is missing or of the wrong type (") + e.what() + ")");
  }
  return f;
}

// "step-00000040.stage-2.client-0.ckpt" -> {40, 2, 0}; false for other names.
bool parse_name(const std::string& name, int64_t* step, int* stage, int* client) {
  long long s = 0;
  int k = 0, c = 0, used = 0;
  if (std::sscanf(name.c_str(), "step-%lld.stage-%d.client-%d.ckpt%n", &s, &k, &c, &used) != 3)
    return false;
  if (static_cast<size_t>(used) != name.size()) return false;
  *step = s;
  *stage = k;
  *client = c;
  return true;
}

}  // namespace

void check_checkpoint_options(const CheckpointOptions& c) {
  if (c.every < 0) throw InputError("checkpoint_every", "must not be negative");
  if (c.dir.empty() && (c.every > 0 || c.resume))
    throw InputError(c.resume ? "resume" : "checkpoint_every", "needs --checkpoint-dir DIR");
  if (!c.dir.empty() && c.every == 0 && !c.resume)
    throw InputError("checkpoint_dir", "needs --checkpoint-every N (batches), or --resume");
}

std::vector<int64_t> prepare_checkpoint_dir(const CheckpointOptions& o,
                                            const std::vector<std::pair<int, int>>& instances) {
  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  if (!std::filesystem::is_directory(o.dir))
    throw InputError("checkpoint_dir", o.dir + " is not a directory and cannot be made one" +
                                           (ec ? " (" + ec.message() + ")" : std::string()));
  for (const auto& i : instances) {
    const std::vector<int64_t> held = complete_checkpoint_steps(o.dir, {i});
    if (!o.resume && !held.empty())
      throw InputError("checkpoint_dir",
                       o.dir + " holds checkpoints (stage " + std::to_string(i.first) + ", step " +
                           std::to_string(held.back()) +
                           "): pass --resume to continue from them, or another directory");
  }
  return complete_checkpoint_steps(o.dir, instances);
}

int64_t checkpoint_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes = {
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Long", 8},
      {"Int", 4},   {"Short", 2},  {"Char", 1}, {"Byte", 1},     {"Bool", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::string checkpoint_path(const std::string& dir, int64_t step, int stage, int client) {
  char name[96];
  std::snprintf(name, sizeof name, "step-%08lld.stage-%d.client-%d.ckpt",
                static_cast<long long>(step), stage, client);
  return (std::filesystem::path(dir) / name).string();
}

void write_checkpoint_file(const std::string& path, const CheckpointFile& file) {
  const std::string header = header_json(file).dump();
  std::string prefix(kMagic, sizeof kMagic);
  put_u64(&prefix, header.size());
  put_u64(&prefix, file.payload.size());
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (const std::string* part : std::array<const std::string*, 3>{&prefix, &header, &file.payload})
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(part->data()), part->size());
  std::string trailer;
  for (int i = 0; i < 4; ++i) trailer.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));

  const std::string tmp = path + ".tmp";
  auto failed = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return CheckpointWriteError("checkpoint " + path + ": " + what + ": " + system_reason(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw failed("cannot create " + tmp, errno);
  int err = 0;
  for (const std::string* part :
       std::array<const std::string*, 4>{&prefix, &header, &file.payload, &trailer})
    if (err == 0) err = write_all(fd, part->data(), part->size());
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) throw failed("cannot write " + tmp, err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw failed("cannot rename " + tmp, errno);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // the rename itself on disk
    ::fsync(dfd);
    ::close(dfd);
  }
}

CheckpointFile read_checkpoint_file(const std::string& path, int64_t max_bytes) {
  auto refuse = [&](const std::string& why) {
    return InputError(path, "not a usable checkpoint: " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path, "cannot read: " + system_reason(errno));
  if (!S_ISREG(st.st_mode)) throw refuse("not a regular file");
  if (st.st_size > max_bytes)
    throw refuse(std::to_string(st.st_size) + " bytes, more than this stage's checkpoint can be (" +
                 std::to_string(max_bytes) + ")");
  std::ifstream in(path, std::ios::binary);
  std::string all(static_cast<size_t>(st.st_size), '\0');
  if (!in.read(all.data(), static_cast<std::streamsize>(all.size())))
    throw InputError(path, "cannot read the whole file");
  const int64_t size = static_cast<int64_t>(all.size());
  if (size < kPrefixBytes + kCrcBytes || std::memcmp(all.data(), kMagic, sizeof kMagic) != 0)
    throw refuse("it does not start with a splitsim checkpoint's magic bytes");
  const uint64_t h = get_u64(all, 8), p = get_u64(all, 16);
  const uint64_t body = static_cast<uint64_t>(size - kPrefixBytes - kCrcBytes);
  if (h > static_cast<uint64_t>(kMaxHeaderBytes) || h > body || p != body - h)
    throw refuse("its sizes (header " + std::to_string(h) + " B, payload " + std::to_string(p) +
                 " B) do not match the file's " + std::to_string(size) + " B: torn or truncated");
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i)
    stored |= uint32_t{static_cast<unsigned char>(all[static_cast<size_t>(size - 4 + i)])}
              << (8 * i);
  if (crc_of(all.data(), static_cast<size_t>(size - kCrcBytes)) != stored)
    throw refuse("its CRC-32 does not match its bytes: corrupted");
  CheckpointFile f = parse_header(path, all.substr(kPrefixBytes, h), static_cast<int64_t>(p));
  f.payload = all.substr(static_cast<size_t>(kPrefixBytes + static_cast<int64_t>(h)), p);
  return f;
}

std::vector<int64_t> complete_checkpoint_steps(const std::string& dir,
                                               const std::vector<std::pair<int, int>>& instances) {
  std::map<int64_t, std::set<std::pair<int, int>>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    int64_t step = 0;
    int stage = 0, client = 0;
    if (parse_name(entry.path().filename().string(), &step, &stage, &client))
      found[step].insert({stage, client});
  }
  std::vector<int64_t> out;
  for (const auto& [step, have] : found)
    if (std::all_of(instances.begin(), instances.end(),
                    [&](const std::pair<int, int>& i) { return have.count(i) != 0; }))
      out.push_back(step);
  return out;
}

void remove_checkpoints_before(const std::string& dir, int stage, int client, int64_t keep_from) {
  std::error_code ec;
  std::vector<std::filesystem::path> old;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    int64_t s = 0;
    int k = 0, c = 0;
    if (parse_name(entry.path().filename().string(), &s, &k, &c) && k == stage && c == client &&
        s < keep_from)
      old.push_back(entry.path());
  }
  for (const auto& p : old) std::filesystem::remove(p, ec);
}

int64_t common_checkpoint_step(const std::vector<std::vector<int64_t>>& steps_by_party,
                               const std::vector<std::string>& party_names) {
  bool any = false;
  std::set<int64_t> common;
  for (size_t i = 0; i < steps_by_party.size(); ++i) {
    const std::set<int64_t> mine(steps_by_party[i].begin(), steps_by_party[i].end());
    any = any || !mine.empty();
    if (i == 0) {
      common = mine;
      continue;
    }
    std::set<int64_t> both;
    for (int64_t s : common)
      if (mine.count(s) != 0) both.insert(s);
    common = both;
  }
  if (!common.empty()) return *common.rbegin();
  if (!any) return 0;
  std::string have;
  for (size_t i = 0; i < steps_by_party.size(); ++i) {
    have += (i > 0 ? "; " : "") + party_names.at(i) + " has ";
    if (steps_by_party[i].empty()) have += "none";
    for (size_t j = 0; j < steps_by_party[i].size(); ++j)
      have += (j > 0 ? ", " : "") + std::to_string(steps_by_party[i][j]);
  }
  throw InputError("resume", "no checkpoint step that every party has (" + have +
                                 "): the parties' checkpoint directories are of different runs "
                                 "or one lost its files");
}

}  // namespace splitsim
