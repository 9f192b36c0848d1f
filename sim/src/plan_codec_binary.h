#pragma once
// Private to plan_codec.cpp, and to tests/sim/plan_codec_test.cpp: the
// binary codec's visitor of plan_schema.h's field lists. encode_fields(s) and
// decode_fields<S>(...) take any S with a plan_schema::fields overload
// declared before this header.
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim::sim_internal {

class PlanWriter {
 public:
  static constexpr bool kReads = false;
  std::string out;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&out, &v, sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    out += s;
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint64_t>(v.size()));
    append(&out, v.data(), v.size() * sizeof(T));
  }
  void size(size_t n) { pod(static_cast<uint64_t>(n)); }

 private:
  static void append(std::string* out, const void* p, size_t n) {
    out->append(static_cast<const char*>(p), n);
  }
};

class PlanReader {
 public:
  static constexpr bool kReads = true;
  PlanReader(const char* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  void pod(T& v) {
    take(&v, sizeof v);
  }
  void str(std::string& s) {
    s.resize(count(1));
    take(s.data(), s.size());
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    v.resize(count(sizeof(T)));
    take(v.data(), v.size() * sizeof(T));
  }
  // A count of items of at least one byte each.
  void size(size_t& n) { n = count(1); }
  bool done() const { return pos_ == n_; }

 private:
  size_t count(size_t item) {
    uint64_t k = 0;
    pod(k);
    if (k > (n_ - pos_) / item) throw std::runtime_error("malformed plan");
    return static_cast<size_t>(k);
  }
  void take(void* dst, size_t n) {
    if (n > n_ - pos_) throw std::runtime_error("malformed plan");
    if (n > 0) std::memcpy(dst, p_ + pos_, n);
    pos_ += n;
  }
  const char* p_;
  size_t n_, pos_ = 0;
};

// Walks plan_schema.h's lists, writing (PlanWriter) or reading
// (PlanReader) every stored member in their order; the values a plan file
// repeats (totals, counts) are not stored.
template <class IO>
class Binary {
 public:
  explicit Binary(IO* io) : io_(io) {}

  template <class T, class... Rest>
  void required(const char*, T& m, Rest&&...) {
    value(m);
  }
  template <class T, class... Rest>
  void optional(const char*, T& m, Rest&&...) {
    value(m);
  }
  template <class T, class... Rest>
  void per_microbatch(const char*, T& m, Rest&&...) {
    value(m);
  }
  template <class T, class... Rest>
  void per_microbatch_if_any(const char*, T& m, Rest&&...) {
    value(m);
  }
  template <class... Rest>
  void total(const char*, Rest&&...) {}
  template <class... Rest>
  void count_of(const char*, Rest&&...) {}
  void complement(const char*, int64_t&, int64_t& part) { value(part); }
  template <class... Rest>
  void sum_of(const char*, int64_t& m, Rest&&...) {
    value(m);
  }
  template <class S, class... Rest>
  void nested(const char*, S& m, Rest&&...) {
    value(m);
  }
  template <class S>
  void objects(const char*, std::vector<S>& m, const char*) {
    value(m);
  }
  template <class S>
  void objects_if_any(const char*, std::vector<S>& m) {
    value(m);
  }
  void schedule(const char*, Schedule& m, const char*) { value(m); }
  template <class S>
  void scenario_object(const char*, S& m, const char*) {
    value(m);
  }
  template <class T>
  void checked(const char*, T& m, const char*) {
    value(m);
  }
  template <class T>
  void checked_if_any(const char*, T& m) {
    value(m);
  }
  template <class T>
  void binary(T& m) {
    value(m);
  }

 private:
  // Plain values as their bytes; strings and lists of them with their
  // length; the Plan's structs by their field lists.
  template <class T>
  void value(T& m) {
    if constexpr (std::is_trivially_copyable_v<T>)
      io_->pod(m);
    else
      plan_schema::fields(*this, m);
  }
  void value(std::string& m) { io_->str(m); }
  template <class T>
  void value(std::vector<T>& m) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      io_->vec(m);
    } else {
      size_t n = m.size();
      io_->size(n);
      if constexpr (IO::kReads) m.resize(n);
      for (T& e : m) value(e);
    }
  }
  void value(std::map<std::string, PartyHostWork>& m) {
    size_t n = m.size();
    io_->size(n);
    if constexpr (IO::kReads) {
      for (size_t i = 0; i < n; ++i) {
        std::string name;
        value(name);
        value(m[name]);
      }
    } else {
      for (auto& [name, work] : m) {
        std::string key = name;
        value(key);
        value(work);
      }
    }
  }
  IO* io_;
};

// Every stored member of `s`, as encode_plan writes a Plan.
template <class S>
std::string encode_fields(const S& s) {
  PlanWriter w;
  Binary<PlanWriter> b(&w);
  plan_schema::fields(b, const_cast<S&>(s));  // NOLINT: the writer only reads
  return w.out;
}

// Throws std::runtime_error("malformed plan") for bytes encode_fields<S> did
// not write.
template <class S>
S decode_fields(const char* data, size_t size) {
  PlanReader r(data, size);
  Binary<PlanReader> b(&r);
  S s;
  plan_schema::fields(b, s);
  if (!r.done()) throw std::runtime_error("malformed plan");
  return s;
}

}  // namespace splitsim::sim_internal
