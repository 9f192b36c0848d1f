#include "splitsim/costmodel/memory_account.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace splitsim {

struct MemoryAccount::Reporter : c10::MemoryReportingInfoBase {
  mutable std::mutex mutex;
  std::unordered_map<void*, int64_t> live;
  bool net = false;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;

  void reportMemoryUsage(void* ptr, int64_t alloc_size, int64_t, int64_t,
                         c10::Device device) override {
    if (!device.is_cpu()) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (alloc_size > 0) {
      live[ptr] = alloc_size;
      live_bytes += alloc_size;
      peak_bytes = std::max(peak_bytes, live_bytes);
      return;
    }
    auto it = live.find(ptr);
    if (it == live.end()) {  // allocated before the account, or elsewhere
      if (net) live_bytes += alloc_size;
      return;
    }
    live_bytes -= it->second;
    live.erase(it);
  }
  bool memoryProfilingEnabled() const override { return true; }
};

MemoryAccount::MemoryAccount(bool net) : reporter_(std::make_shared<Reporter>()) {
  reporter_->net = net;
}
MemoryAccount::~MemoryAccount() = default;

MemoryAccount::Join::Join(MemoryAccount& account)
    : guard_(std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE,
                                                   account.reporter_)) {}
MemoryAccount::Join::~Join() = default;

int64_t MemoryAccount::live_bytes() const {
  std::lock_guard<std::mutex> lock(reporter_->mutex);
  return reporter_->live_bytes;
}

int64_t MemoryAccount::peak_bytes() const {
  std::lock_guard<std::mutex> lock(reporter_->mutex);
  return reporter_->peak_bytes;
}

// ---- StorageAccount --------------------------------------------------------

struct StorageAccount::State {
  // Every storage seen, held weakly: a weak reference keeps a StorageImpl's
  // object (not its memory) alive, so no new storage can take the address of
  // one seen before. `created`: those first seen as an op's output.
  std::unordered_map<const c10::StorageImpl*, c10::weak_intrusive_ptr<c10::StorageImpl>> seen;
  std::vector<const c10::StorageImpl*> created;
  // net: those first seen as an outermost op's input, with their bytes then.
  bool net = false;
  std::vector<std::pair<const c10::StorageImpl*, int64_t>> earlier;
  int depth = 0;     // ops started and not ended
  int64_t peak = 0;  // the most live_bytes() after any op

  int64_t live_bytes() const {
    int64_t bytes = 0;
    for (const c10::StorageImpl* p : created) {
      const c10::intrusive_ptr<c10::StorageImpl> st = seen.at(p).lock();
      if (st) bytes += static_cast<int64_t>(st->nbytes());
    }
    for (const auto& [p, nbytes] : earlier)
      if (!seen.at(p).lock()) bytes -= nbytes;
    return bytes;
  }

  // True when `st` is seen for the first time.
  bool see(const c10::Storage& st) {
    return seen.try_emplace(st.unsafeGetStorageImpl(), st.getWeakStorageImpl()).second;
  }
};

namespace {

thread_local StorageAccount::State* storage_state = nullptr;

template <class F>
void for_each_storage(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.has_storage()) f(t.storage());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList().vec())
      if (t.defined() && t.has_storage()) f(t.storage());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) for_each_storage(e, f);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) for_each_storage(e, f);
  }
}

// An ATen op; not the autograd engine's record of a node it runs
// ("autograd::engine::evaluate_function: ..."), whose ops are the outermost.
bool is_op(const at::RecordFunction& fn) { return std::strncmp(fn.name(), "aten::", 6) == 0; }

// Only the outermost op's inputs are taken as there before: inside a
// kernel, ops read and fill the outputs it allocated without an op
// (structured kernels: mm's resolve_conj, sum's fill_, addmm's copy_ of the
// bias), and those were not there before.
std::unique_ptr<at::ObserverContext> storage_on_start(const at::RecordFunction& fn) {
  StorageAccount::State* s = storage_state;
  if (s == nullptr || !is_op(fn)) return nullptr;
  if (s->depth++ == 0)
    for (const c10::IValue& v : fn.inputs())
      for_each_storage(v, [&](const c10::Storage& st) {
        if (s->see(st) && s->net)
          s->earlier.emplace_back(st.unsafeGetStorageImpl(), static_cast<int64_t>(st.nbytes()));
      });
  return nullptr;
}

void storage_on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  StorageAccount::State* s = storage_state;
  if (s == nullptr || !is_op(fn)) return;
  --s->depth;
  for (const c10::IValue& v : fn.outputs())
    for_each_storage(v, [&](const c10::Storage& st) {
      if (s->see(st)) s->created.push_back(st.unsafeGetStorageImpl());
    });
  s->peak = std::max(s->peak, s->live_bytes());
}

}  // namespace

StorageAccount::StorageAccount(bool net) : state_(std::make_unique<State>()) {
  state_->net = net;
  assert(storage_state == nullptr && "one StorageAccount per thread");
  storage_state = state_.get();
  handle_ =
      at::addThreadLocalCallback(at::RecordFunctionCallback(&storage_on_start, &storage_on_end)
                                     .needsInputs(true)
                                     .needsOutputs(true)
                                     .scopes({at::RecordScope::FUNCTION}));
}

void StorageAccount::exclude(const at::Tensor& existing) {
  if (existing.defined() && existing.has_storage()) state_->see(existing.storage());
}

StorageAccount::~StorageAccount() {
  at::removeCallback(handle_);
  storage_state = nullptr;
}

int64_t StorageAccount::live_bytes() const { return state_->live_bytes(); }

int64_t StorageAccount::peak_bytes() const { return std::max(state_->peak, state_->live_bytes()); }

}  // namespace splitsim
