#pragma once
// Private to plan.cpp, and to tests/costmodel/plan_schema_test.cpp: the
// visitor of plan_schema.h's field lists that writes a plan file's objects.
// JsonWriter::write(s) writes any S with a plan_schema::fields overload
// declared before this header.
#include <nlohmann/json.hpp>
#include <numeric>
#include <type_traits>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim::plan_fields {

class JsonWriter {
 public:
  nlohmann::json j = nlohmann::json::object();

  template <class T>
  void required(const char* key, const T& m, plan_json::JsonCodec<T> c, const char*) {
    put(key, m, c);
  }
  template <class T>
  void optional(const char* key, const T& m, plan_json::JsonCodec<T> c) {
    put(key, m, c);
  }
  template <class E>
  void per_microbatch(const char* key, const std::vector<E>& m, plan_json::JsonCodec<E> c,
                      const char*) {
    nlohmann::json list = nlohmann::json::array();
    for (const E& e : m) {
      nlohmann::json one;
      put_value(one, e, c);
      list.push_back(one);
    }
    j[key] = list;
  }
  template <class E>
  void per_microbatch_if_any(const char* key, const std::vector<E>& m, plan_json::JsonCodec<E> c) {
    if (!m.empty()) per_microbatch(key, m, c, "");
  }
  void total(const char* key, const std::vector<double>& parts) {
    j[key] = std::accumulate(parts.begin(), parts.end(), 0.0);
  }
  void count_of(const char* key, int64_t value, const char*) { j[key] = value; }
  void complement(const char* key, const int64_t& whole, const int64_t& part) {
    j[key] = whole - part;
  }
  void sum_of(const char* key, const int64_t& m, const std::vector<int64_t>&, const char*) {
    j[key] = m;
  }
  template <class S>
  void nested(const char* key, const S& m, const char*) {
    j[key] = write(m);
  }
  template <class S>
  void objects(const char* key, const std::vector<S>& m, const char* = nullptr) {
    nlohmann::json list = nlohmann::json::array();
    for (const S& s : m) list.push_back(write(s));
    j[key] = list;
  }
  template <class S>
  void objects_if_any(const char* key, const std::vector<S>& m) {
    if (!m.empty()) objects(key, m);
  }
  template <class T>
  void checked(const char* key, const T& m, const char*) {
    j[key] = m;
  }
  template <class T>
  void checked_if_any(const char* key, const T& m) {
    if (!m.empty()) j[key] = m;
  }
  void schedule(const char* key, Schedule s, const char*) { j[key] = schedule_name(s); }
  // In the scenario format's JSON (plan.cpp).
  void scenario_object(const char* key, const NetworkSpec& n, const char*);
  void scenario_object(const char* key, const PlatformSpec& p, const char*);
  template <class T>
  void binary(const T&) {}

  template <class S>
  static nlohmann::json write(const S& s) {
    JsonWriter w;
    plan_schema::fields(w, const_cast<S&>(s));  // NOLINT: writers only read
    return w.j;
  }
  // A transfer repeats its codec's method and description.
  static nlohmann::json write(const PlanTransfer& t) {
    JsonWriter w;
    plan_schema::fields(w, const_cast<PlanTransfer&>(t));  // NOLINT: writers only read
    w.j["method"] = method_name(t.codec.method);
    w.j["description"] = describe(t.codec);
    return w.j;
  }

 private:
  template <class T>
  static void put_value(nlohmann::json& out, const T& m, plan_json::JsonCodec<T> c) {
    if constexpr (std::is_constructible_v<nlohmann::json, const T&>) {
      if (c.write == nullptr) {
        out = m;
        return;
      }
    }
    c.write(out, m);
  }
  template <class T>
  void put(const char* key, const T& m, plan_json::JsonCodec<T> c) {
    put_value(j[key], m, c);
  }
};

}  // namespace splitsim::plan_fields
