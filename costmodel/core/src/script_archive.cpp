// The checks of a TorchScript archive before LibTorch reads it
// (script_archive.h): the layout, and the pickles run on a small machine that
// keeps only what the checks need. The zip's directory: zip_directory.cpp.
#include "splitsim/costmodel/script_archive.h"

#include "script_archive_bytes.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

namespace splitsim {
namespace {

// Text from the file as a message may show it: bytes outside printable
// ASCII as \xNN, at most 80 of them.
std::string printable(std::string_view text, size_t most = 80) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < most; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return text.size() > most ? out + "..." : out;
}

// ---- the pickles ---------------------------------------------------------------------

// What the pickle machine keeps of a value. Containers keep their children
// (to measure nesting at the end); tensors and storages their fields. Every
// value lives in the machine's arena and is referred to by pointer, so that
// freeing a hostile pickle's deep chain of values never recurses.
struct Value {
  enum Kind { kLeaf, kInt, kString, kGlobal, kContainer, kStorage, kTensorRebuild };
  Kind kind = kLeaf;
  int64_t number = 0;
  std::string text;  // a string; a global's "module name"
  std::vector<Value*> children;
  PickledStorage storage;
};
using Ref = Value*;

// Globals a TorchScript pickle may name.
bool allowed_global(const std::string& module, const std::string& name) {
  if (module == "__torch__" || module.rfind("__torch__.", 0) == 0) return true;
  if (module == "torch.jit._pickle") return true;
  if (module == "torch._utils") return name == "_rebuild_tensor_v2" || name == "_rebuild_qtensor";
  if (module == "collections") return name == "OrderedDict";
  if (module == "torch") return name == "device" || storage_item_bytes(name) > 0;
  if (module == "builtins") return name == "complex";
  return false;
}

class PickleMachine {
 public:
  explicit PickleMachine(std::string_view p) : p_(p) {}

  PickleContents run() {
    for (;;) {
      if (pos_ >= p_.size()) fail("ends without STOP");
      const uint64_t at = pos_;
      const auto op = static_cast<unsigned char>(p_[pos_++]);
      if (op == '.') break;
      step(op, at);
    }
    if (stack_.size() != 1 || !marks_.empty()) fail("does not end with exactly one value");
    check_nesting(stack_.back());
    return std::move(out_);
  }

 private:
  Ref make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ArchiveError("the pickle " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  std::string_view take(uint64_t n) {
    if (n > p_.size() - pos_) fail("has a value running past its end");
    std::string_view s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t number(int n) { return little_endian(take(n), 0, n); }
  std::string line() {
    const size_t end = p_.find('\n', pos_);
    if (end == std::string_view::npos) fail("has a GLOBAL without its line end");
    std::string s(p_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Ref pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      fail("takes a value from an empty stack");
    Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Ref& top() {
    if (stack_.empty()) fail("uses a value on an empty stack");
    return stack_.back();
  }
  // The values since the last MARK, which is removed.
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("closes a MARK it never opened");
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                           stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(Ref v) { stack_.push_back(std::move(v)); }
  void push_container(std::vector<Ref> children) {
    Ref v = make(Value::kContainer);
    v->children = std::move(children);
    push(v);
  }
  void add_to(const Ref& container, std::vector<Ref> items) {
    if (container->kind != Value::kContainer) fail("adds items to something not a container");
    for (Ref& item : items) container->children.push_back(std::move(item));
  }
  void push_int(int64_t v) {
    Ref r = make(Value::kInt);
    r->number = v;
    push(r);
  }
  void push_string(std::string_view s) {
    Ref r = make(Value::kString);
    r->text = std::string(s);
    push(r);
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("refers to memo entry " + std::to_string(key) + " never stored");
    push(it->second);
  }

  void step(unsigned char op, uint64_t at) {
    switch (op) {
      case 0x80: take(1); break;                                   // PROTO
      case 0x95: take(8); break;                                   // FRAME
      case '(':                                                    // MARK
        if (marks_.size() >= static_cast<size_t>(kMaxNesting))
          fail("opens more than " + std::to_string(kMaxNesting) + " MARKs at once");
        marks_.push_back(stack_.size());
        break;
      case '0': pop(); break;                                      // POP
      case '1': pop_mark(); break;                                 // POP_MARK
      case '2': push(top()); break;                                // DUP
      case 'J': push_int(static_cast<int32_t>(number(4))); break;  // BININT
      case 'K': push_int(static_cast<int64_t>(number(1))); break;  // BININT1
      case 'M': push_int(static_cast<int64_t>(number(2))); break;  // BININT2
      case 0x8a: {                                                 // LONG1
        const uint64_t n = number(1);
        std::string_view bytes = take(n);
        if (n == 0 || n > 8) {
          push(make(Value::kLeaf));  // 0, or wider than 64 bits: not a size
        } else {
          uint64_t u = little_endian(bytes, 0, static_cast<int>(n));
          if (n < 8 && (u >> (8 * n - 1)) != 0) u |= ~uint64_t{0} << (8 * n);  // sign
          push_int(static_cast<int64_t>(u));
        }
        break;
      }
      case 'N': case 0x88: case 0x89: push(make(Value::kLeaf)); break;  // NONE, TRUE, FALSE
      case 'G': take(8); push(make(Value::kLeaf)); break;              // BINFLOAT
      case 'X': push_string(take(number(4))); break;                   // BINUNICODE
      case 0x8c: push_string(take(number(1))); break;                  // SHORT_BINUNICODE
      case 0x8d: push_string(take(number(8))); break;                  // BINUNICODE8
      case 'U': push_string(take(number(1))); break;                   // SHORT_BINSTRING
      case 'T': push_string(take(number(4))); break;                   // BINSTRING
      case 'B': take(number(4)); push(make(Value::kLeaf)); break;      // BINBYTES
      case 'C': take(number(1)); push(make(Value::kLeaf)); break;      // SHORT_BINBYTES
      case 0x8e: take(number(8)); push(make(Value::kLeaf)); break;     // BINBYTES8
      case ')': case ']': case '}': push_container({}); break;         // EMPTY_TUPLE/LIST/DICT
      case 't': case 'l': case 'd': push_container(pop_mark()); break; // TUPLE, LIST, DICT
      case 0x85: case 0x86: case 0x87: {                               // TUPLE1..3
        std::vector<Ref> items(op - 0x84);
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        push_container(std::move(items));
        break;
      }
      case 'a': { Ref v = pop(); add_to(top(), {v}); break; }          // APPEND
      case 'e': { auto items = pop_mark(); add_to(top(), std::move(items)); break; }  // APPENDS
      case 's': {                                                      // SETITEM
        Ref v = pop(), k = pop();
        add_to(top(), {k, v});
        break;
      }
      case 'u': { auto items = pop_mark(); add_to(top(), std::move(items)); break; }  // SETITEMS
      case 'h': memo_get(number(1)); break;                            // BINGET
      case 'j': memo_get(number(4)); break;                            // LONG_BINGET
      case 'q': memo_put(number(1)); break;                            // BINPUT
      case 'r': memo_put(number(4)); break;                            // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;                        // MEMOIZE
      case 'c': {                                                      // GLOBAL
        std::string module = line();
        global(module, line());
        break;
      }
      case 0x93: {                                                     // STACK_GLOBAL
        Ref name = pop(), module = pop();
        if (name->kind != Value::kString || module->kind != Value::kString)
          fail("names a global with something other than two strings");
        global(module->text, name->text);
        break;
      }
      case 0x81: {                                                     // NEWOBJ
        Ref args = pop(), cls = pop();
        push_container({cls, args});
        break;
      }
      case 'R': reduce(); break;                                       // REDUCE
      case 'b': { Ref state = pop(); add_to(top(), {state}); break; }  // BUILD
      case 'Q': persistent_id(); break;                                // BINPERSID
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        pos_ = at;
        fail(std::string("holds opcode ") + hex + ", which TorchScript's pickler never writes");
      }
    }
  }

  void global(const std::string& module, const std::string& name) {
    if (!allowed_global(module, name))
      fail("names the Python global " + printable(module + "." + name) +
           ", which no TorchScript archive holds");
    Ref g = make(Value::kGlobal);
    g->text = module + " " + name;
    push(g);
  }

  // ('storage', torch.XStorage, key, location, numel) -> a storage.
  void persistent_id() {
    Ref id = pop();
    const auto& f = id->children;
    if (id->kind != Value::kContainer || f.size() != 5 || f[0]->kind != Value::kString ||
        f[0]->text != "storage" || f[1]->kind != Value::kGlobal || f[2]->kind != Value::kString ||
        f[4]->kind != Value::kInt)
      fail("has a persistent id that is not ('storage', type, key, location, numel)");
    Ref s = make(Value::kStorage);
    s->storage.storage_type = f[1]->text.substr(f[1]->text.find(' ') + 1);
    s->storage.key = f[2]->text;
    s->storage.numel = f[4]->number;
    if (storage_item_bytes(s->storage.storage_type) == 0)
      fail("names storage type " + printable(f[1]->text) + ", which is not a storage");
    if (s->storage.numel < 0) fail("has a storage of " + std::to_string(s->storage.numel) +
                                   " elements");
    out_.storages.push_back(s->storage);
    push(s);
  }

  void reduce() {
    Ref args = pop(), callable = pop();
    const bool rebuild = callable->kind == Value::kGlobal &&
                         (callable->text == "torch._utils _rebuild_tensor_v2" ||
                          callable->text == "torch._utils _rebuild_qtensor");
    if (rebuild) tensor(args);
    push_container({callable, args});
  }

  static bool ints(const Ref& v, std::vector<int64_t>& out) {
    if (v->kind != Value::kContainer) return false;
    for (const Ref& c : v->children) {
      if (c->kind != Value::kInt) return false;
      out.push_back(c->number);
    }
    return true;
  }

  // (storage, offset, sizes, strides, ...): the tensor must lie inside its storage.
  void tensor(const Ref& args) {
    const auto& a = args->children;
    PickledTensor t;
    if (args->kind != Value::kContainer || a.size() < 4 || a[0]->kind != Value::kStorage ||
        a[1]->kind != Value::kInt || !ints(a[2], t.sizes) || !ints(a[3], t.strides) ||
        t.sizes.size() != t.strides.size())
      fail("rebuilds a tensor from something other than (storage, offset, sizes, strides)");
    t.storage = a[0]->storage;
    t.offset = a[1]->number;
    if (t.sizes.size() > 64) fail("rebuilds a tensor of more than 64 dimensions");
    // The last element it reads: offset + sum((size - 1) * stride).
    bool empty = false;
    int64_t last = t.offset;
    bool overflow = t.offset < 0;
    for (size_t i = 0; i < t.sizes.size(); ++i) {
      if (t.sizes[i] < 0 || t.strides[i] < 0) overflow = true;
      if (t.sizes[i] == 0) empty = true;
      int64_t span = 0;
      if (t.sizes[i] > 0) {
        overflow = overflow || __builtin_mul_overflow(t.sizes[i] - 1, t.strides[i], &span) ||
                   __builtin_add_overflow(last, span, &last);
      }
    }
    if (overflow) fail("rebuilds a tensor with a negative or overflowing size, stride or offset");
    if (!empty && last >= t.storage.numel)
      fail("rebuilds a tensor reaching element " + std::to_string(last) + " of storage \"" +
           printable(t.storage.key) + "\", which holds " + std::to_string(t.storage.numel));
    out_.tensors.push_back(std::move(t));
  }

  // The deepest chain of containers from `root`, without recursion (a
  // hostile pickle nests as deep as its length allows); a value inside
  // itself is refused too.
  void check_nesting(const Ref& root) const {
    enum State { kOpen, kDone };
    std::unordered_map<const Value*, std::pair<State, int>> seen;
    std::vector<std::pair<const Value*, size_t>> path{{root, 0}};
    seen[root] = {kOpen, 0};
    while (!path.empty()) {
      auto& [v, next] = path.back();
      if (next < v->children.size()) {
        const Value* c = v->children[next++];
        auto it = seen.find(c);
        if (it == seen.end()) {
          if (path.size() >= static_cast<size_t>(kMaxNesting))
            throw ArchiveError("the pickle nests values more than " +
                               std::to_string(kMaxNesting) + " deep");
          seen[c] = {kOpen, 0};
          path.push_back({c, 0});
        } else if (it->second.first == kOpen) {
          throw ArchiveError("the pickle holds a value inside itself");
        } else if (path.size() + static_cast<size_t>(it->second.second) > kMaxNesting) {
          throw ArchiveError("the pickle nests values more than " +
                             std::to_string(kMaxNesting) + " deep");
        }
        continue;
      }
      int depth = 0;
      for (const Value* c : v->children) depth = std::max(depth, seen[c].second + 1);
      seen[v] = {kDone, depth};
      path.pop_back();
    }
  }

  std::string_view p_;
  uint64_t pos_ = 0;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
  PickleContents out_;
};

std::string_view stored_bytes(std::string_view archive, const ZipEntry& e) {
  if (e.method != 0)
    throw ArchiveError("\"" + e.name + "\" is compressed (torch.jit.save stores it as is)");
  return archive.substr(e.data_offset, e.uncompressed);
}

}  // namespace

int storage_item_bytes(const std::string& t) {
  static const std::map<std::string, int> bytes = {
      {"FloatStorage", 4},   {"DoubleStorage", 8},        {"HalfStorage", 2},
      {"BFloat16Storage", 2}, {"LongStorage", 8},         {"IntStorage", 4},
      {"ShortStorage", 2},   {"CharStorage", 1},          {"ByteStorage", 1},
      {"BoolStorage", 1},    {"ComplexFloatStorage", 8},  {"ComplexDoubleStorage", 16},
      {"QInt8Storage", 1},   {"QUInt8Storage", 1},        {"QInt32Storage", 4},
      {"ComplexHalfStorage", 4}, {"QUInt4x2Storage", 1},  {"QUInt2x4Storage", 1}};
  auto it = bytes.find(t);
  return it == bytes.end() ? 0 : it->second;
}

PickleContents scan_pickle(std::string_view pickle) { return PickleMachine(pickle).run(); }

namespace {

void check_archive(std::string_view bytes) {
  const std::vector<ZipEntry> entries = read_zip_directory(bytes);
  if (entries.empty()) throw ArchiveError("the zip is empty");
  const std::string& first = entries.front().name;
  const std::string top = first.substr(0, first.find('/') + 1);
  if (top.size() < 2) throw ArchiveError("\"" + first + "\" is not inside the archive's folder");
  std::map<std::string, const ZipEntry*> by_name;
  bool code = false;
  for (const ZipEntry& e : entries) {
    if (e.name.rfind(top, 0) != 0)
      throw ArchiveError("\"" + e.name + "\" lies outside the archive's folder \"" + top + "\"");
    const std::string rest = e.name.substr(top.size());
    by_name[rest] = &e;
    code = code || (rest.rfind("code/", 0) == 0 && rest.size() > 8 &&
                    rest.compare(rest.size() - 3, 3, ".py") == 0);
  }
  if (!by_name.count("data.pkl"))
    throw ArchiveError("the archive has no " + top + "data.pkl (torch.jit.save writes one)");
  if (!by_name.count("version") && !by_name.count(".data/version"))
    throw ArchiveError("the archive has no " + top + "version (torch.jit.save writes one)");
  if (!code) throw ArchiveError("the archive has no " + top + "code/*.py (its TorchScript code)");
  for (const char* archive : {"data", "constants"}) {
    auto pkl = by_name.find(std::string(archive) + ".pkl");
    if (pkl == by_name.end()) continue;
    PickleContents contents;
    try {
      contents = scan_pickle(stored_bytes(bytes, *pkl->second));
    } catch (const ArchiveError& e) {
      throw ArchiveError(top + archive + ".pkl: " + e.what());
    }
    for (const PickledStorage& s : contents.storages) {
      if (s.numel == 0) continue;  // the loader reads no record for it
      const std::string record = std::string(archive) + "/" + s.key;
      auto it = by_name.find(record);
      if (it == by_name.end())
        throw ArchiveError(top + archive + ".pkl names storage record " + top + record +
                           ", which the archive does not hold");
      const uint64_t item = static_cast<uint64_t>(storage_item_bytes(s.storage_type));
      const uint64_t numel = static_cast<uint64_t>(s.numel);
      if (numel > it->second->uncompressed / item)
        throw ArchiveError(top + archive + ".pkl gives storage " + top + record + " " +
                           std::to_string(s.numel) + " elements of " + std::to_string(item) +
                           " bytes, but the record holds " +
                           std::to_string(it->second->uncompressed) + " bytes");
    }
  }
}

}  // namespace

void check_script_archive(std::string_view bytes) {
  try {
    check_archive(bytes);
  } catch (const ArchiveError& e) {  // names from the file, shown safely
    throw ArchiveError(printable(e.what(), 400));
  }
}

}  // namespace splitsim
