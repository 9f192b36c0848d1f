#pragma once
// Private to plan_parse.cpp, and to tests/costmodel/plan_schema_test.cpp:
// the visitors of plan_schema.h's field lists that read a plan file's
// objects. keys_of<S>() and read_fields(j, path, m, &s) take any S with a
// plan_schema::fields overload declared before this header.
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "json_read.h"
#include "plan_fields.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim::plan_fields {

// The keys of a plan file's object, from plan_schema.h's list.
class KeyCollector {
 public:
  std::vector<std::string> keys;
  template <class T, class... Rest>
  void required(const char* key, T&, Rest&&...) {
    keys.push_back(key);
  }
  template <class T, class... Rest>
  void optional(const char* key, T&, Rest&&...) {
    keys.push_back(key);
  }
  template <class T, class... Rest>
  void per_microbatch(const char* key, T&, Rest&&...) {
    keys.push_back(key);
  }
  template <class T, class... Rest>
  void per_microbatch_if_any(const char* key, T&, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void total(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void count_of(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void complement(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void sum_of(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void nested(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void objects(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void objects_if_any(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void schedule(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void checked(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void checked_if_any(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class... Rest>
  void scenario_object(const char* key, Rest&&...) {
    keys.push_back(key);
  }
  template <class T>
  void binary(T&) {}
};

template <class S>
std::vector<std::string> keys_of() {
  S s;
  KeyCollector c;
  plan_schema::fields(c, s);
  return c.keys;
}

// Three passes over one object's list: every required key there, then each
// value read, then the totals that repeat other values checked.
enum class Pass { kRequire, kRead, kCheck };

template <class S>
void read_fields(const json& j, const std::string& path, size_t m, S* s);
// A transfer object at `path` (plan_parse.cpp): its list and the two keys
// that repeat its codec.
void read_object(const json& j, const std::string& path, size_t m, PlanTransfer* t);

class FieldReader {
 public:
  FieldReader(Pass pass, const json& j, const std::string& path, size_t m)
      : pass_(pass), j_(j), path_(path), m_(m) {}

  template <class T>
  void required(const char* key, T& v, plan_json::JsonCodec<T> c, const char* need) {
    if (pass_ == Pass::kRequire) json_read::require_key(j_, path_, key, need);
    if (pass_ == Pass::kRead) v = c.read(j_.at(key), at(key));
  }
  template <class T>
  void optional(const char* key, T& v, plan_json::JsonCodec<T> c) {
    if (pass_ == Pass::kRead && j_.contains(key)) v = c.read(j_.at(key), at(key));
  }
  template <class E>
  void per_microbatch(const char* key, std::vector<E>& v, plan_json::JsonCodec<E> c,
                      const char* need) {
    if (pass_ == Pass::kRequire) json_read::require_key(j_, path_, key, need);
    if (pass_ == Pass::kRead) v = plan_fields::per_microbatch<E>(j_, path_, key, m_, c.read);
  }
  template <class E>
  void per_microbatch_if_any(const char* key, std::vector<E>& v, plan_json::JsonCodec<E> c) {
    if (pass_ == Pass::kRead && j_.contains(key))
      v = plan_fields::per_microbatch<E>(j_, path_, key, m_, c.read);
  }
  void total(const char* key, const std::vector<double>& parts) {
    if (pass_ == Pass::kCheck) check_seconds_total(j_, path_, key, parts);
  }
  void count_of(const char* key, int64_t value, const char* from) {
    if (pass_ == Pass::kCheck) check_count_total(j_, path_, key, value, from);
  }
  void complement(const char* key, int64_t& whole, int64_t& part) {
    if (pass_ != Pass::kRead) return;
    const int64_t rest = j_.contains(key) ? read_count(j_.at(key), at(key)) : whole;
    part = std::max<int64_t>(0, whole - rest);
  }
  void sum_of(const char* key, int64_t& v, const std::vector<int64_t>& parts, const char* from) {
    if (pass_ != Pass::kCheck) return;
    v = std::accumulate(parts.begin(), parts.end(), int64_t{0});
    check_count_total(j_, path_, key, v, from);
  }
  template <class S>
  void nested(const char* key, S& v, const char* need) {
    if (pass_ == Pass::kRequire) json_read::require_key(j_, path_, key, need);
    if (pass_ == Pass::kRead) read_object(j_.at(key), at(key), m_, &v);
  }
  // Required here (checked, objects) or not (the _if_any); the owner reads
  // them.
  template <class T>
  void checked(const char* key, T&, const char* need) {
    if (pass_ == Pass::kRequire) json_read::require_key(j_, path_, key, need);
  }
  template <class S>
  void objects(const char* key, std::vector<S>& v, const char* need) {
    checked(key, v, need);
  }
  template <class T>
  void checked_if_any(const char*, T&) {}
  template <class S>
  void objects_if_any(const char*, std::vector<S>&) {}
  void schedule(const char* key, Schedule& s, const char* need);
  void scenario_object(const char* key, NetworkSpec& n, const char* need);
  void scenario_object(const char* key, PlatformSpec& p, const char* need);
  template <class T>
  void binary(T&) {}

 private:
  std::string at(const char* key) const { return json_read::member_path(path_, key); }
  Pass pass_;
  const json& j_;
  const std::string& path_;
  size_t m_;
};

// An object of type S at `path` by its field list (PlanStage, PlanTransfer,
// PlanBoundary, PlanStageCosts); `m`: the micro-batch count.
template <class S>
void read_fields(const json& j, const std::string& path, size_t m, S* s) {
  for (Pass pass : {Pass::kRequire, Pass::kRead, Pass::kCheck}) {
    FieldReader r(pass, j, path, m);
    plan_schema::fields(r, *s);
  }
}

}  // namespace splitsim::plan_fields
