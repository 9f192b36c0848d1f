// splitsim._core: the C++ libraries as the Python package calls them
// (python/splitsim/). Values cross as JSON text, Plan handles and bytes;
// every figure is computed here, none in Python. Each long call releases
// the GIL and calls back between steps, where a pending Ctrl-C
// (KeyboardInterrupt) stops it. InputError becomes splitsim.InputError, a
// ValueError carrying `where` (the JSON path or argument it names).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "splitsim/calibrate/calibrate.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/library_logs.h"
#include "splitsim/costmodel/model_report.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/explore/exploration.h"
#include "splitsim/explore/report.h"
#include "splitsim/explore/space_flags.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/validate/validate_command.h"

namespace py = pybind11;

namespace splitsim {
namespace {

// Progress to Python: callback(phase, done, total, note), None for none.
// Called without the GIL held; takes it, raises a pending signal's exception
// (Ctrl-C) as a C++ exception that unwinds the work, then calls back.
class Reporter {
 public:
  explicit Reporter(py::object callback) : callback_(std::move(callback)) {}
  void operator()(const std::string& phase, size_t done, size_t total,
                  const std::string& note = "") const {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!callback_.is_none()) callback_(phase, done, total, note);
  }
  Progress notes(const std::string& phase) const {
    return [this, phase](const std::string& line) { (*this)(phase, 0, 0, line); };
  }

 private:
  py::object callback_;
};

int default_jobs(int jobs) {
  return jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::vector<std::pair<std::string, std::string>> scenario_variants(const ScenarioSource& source) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ScenarioVariant& v : load_scenario_source(source, ScenarioNeeds::kModel))
    out.emplace_back(v.label, v.json.dump());
  return out;
}

// Every selected variant's Plan, each planned with `calibration` (a file; ""
// for none) as the command's calibration, as `splitsim plan` does.
std::vector<Plan> plan_variants(const ScenarioSource& source, const std::string& variant,
                                const std::string& calibration, const Reporter& report) {
  std::shared_ptr<const Calibration> cal;
  if (!calibration.empty())
    cal = std::make_shared<const Calibration>(load_calibration_file(calibration));
  Workspace ws(source, report.notes("measure"));
  ws.select(variant);
  std::vector<Plan> plans;
  const size_t n = ws.variants().size();
  for (ScenarioVariant v : ws.variants()) {
    report("plan", plans.size(), n);
    v.scenario.command_calibration = cal;
    plans.push_back(ws.plan(v));
  }
  report("plan", n, n);
  return plans;
}

// The plans simulated, `jobs` at once, in pieces so that progress and Ctrl-C
// are seen between them: each one's CSV record (csv_record), or with
// `metrics` its whole metrics object, as a JSON array.
std::string simulate_plans(const std::vector<Plan>& plans, int jobs,
                           const std::string& server_order, bool metrics, const Reporter& report) {
  SimOptions options;
  options.server_order = parse_server_order(server_order, "server_order");
  jobs = default_jobs(jobs);
  const size_t piece = std::max<size_t>(64, 16 * static_cast<size_t>(jobs));
  nlohmann::json whole = nlohmann::json::array();
  nlohmann::ordered_json records = nlohmann::ordered_json::array();  // the CSV's column order
  for (size_t first = 0; first < plans.size(); first += piece) {
    report("simulate", first, plans.size());
    const std::vector<Plan> part(plans.begin() + first,
                                 plans.begin() + std::min(plans.size(), first + piece));
    for (const Metrics& m : simulate_metrics(part, options, jobs)) {
      if (metrics)
        whole.push_back(m);
      else
        records.push_back(csv_record(m));
    }
  }
  report("simulate", plans.size(), plans.size());
  return metrics ? whole.dump() : records.dump();
}

// `simulate(plans)` -> the metrics' JSON array, a Python callable (the Dask
// path), as the explorer's simulate function.
std::function<std::vector<Metrics>(const std::vector<Plan>&)> python_simulate(
    const py::object& simulate) {
  if (simulate.is_none()) return nullptr;
  // A handle, not an object: copies of this function are made without the
  // GIL, so they must not count references. The caller keeps it alive.
  const py::handle fn = simulate;
  return [fn](const std::vector<Plan>& plans) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    const std::string text = fn(plans).cast<std::string>();
    return nlohmann::json::parse(text).get<std::vector<Metrics>>();
  };
}

// One plan's timeline, column by column.
std::string timeline_columns(const Plan& plan, const std::string& server_order) {
  SimOptions options;
  options.server_order = parse_server_order(server_order, "server_order");
  const Timeline t = simulate(plan, options);
  nlohmann::json c;
  for (const TimelineEvent& e : t.events) {
    c["kind"].push_back(event_kind_name(e.kind));
    c["name"].push_back(event_name(e));
    c["party"].push_back(t.parties.at(e.party));
    c["peer"].push_back(e.peer >= 0 ? t.parties.at(e.peer) : "");
    c["stage"].push_back(e.stage);
    c["boundary"].push_back(e.boundary);
    c["backward"].push_back(e.backward != 0);
    c["client"].push_back(e.client);
    c["batch"].push_back(e.batch);
    c["microbatch"].push_back(e.microbatch);
    c["bytes"].push_back(e.bytes);
    c["start_s"].push_back(e.start_s);
    c["end_s"].push_back(e.end_s);
  }
  return c.dump();
}

// What `splitsim explore --json --top N` prints, N the number ranked, for
// the first selected variant.
std::string explore_variant(const ScenarioSource& source, const std::string& variant,
                            const SpaceFlags& space, int top, int jobs, int max_simulations,
                            double spread_pct, const py::object& simulate, const Reporter& report) {
  Workspace ws(source, report.notes("measure"), ScenarioNeeds::kModel);
  if (!variant.empty()) ws.select_one(variant, "explore searches around");
  const ScenarioVariant& v = ws.variants().front();
  ExploreOptions options;
  options.jobs = default_jobs(jobs);
  options.max_simulations = max_simulations;
  options.spread_top = static_cast<size_t>(top);
  if (spread_pct >= 0) options.spread = spread_pct / 100;
  options.simulate = python_simulate(simulate);
  options.progress = [&report](const ExploreProgress& p) {
    report("simulate", p.simulated, p.to_simulate,
           std::to_string(p.candidates) + " feasible candidates");
  };
  const Exploration e = run_exploration(v.scenario, ws.model(v), ws.devices(v),
                                        make_space(space, v.scenario), options);
  // The whole ranking (the command prints its first `top`; those are the
  // ones simulated again at the ends of the spread).
  std::ostringstream out;
  write_explore_json(out, v.scenario.name, e, e.ranking.size(), nullptr);
  return out.str();
}

// `splitsim plan --list-cuts --json` (what = "cuts") or `--units --json`
// ("units") of the first variant's model.
std::string model_report(const ScenarioSource& source, const std::string& what,
                         const Reporter& report) {
  Workspace ws(source, report.notes("measure"), ScenarioNeeds::kModel);
  const ScenarioVariant& v = ws.variants().front();
  std::ostringstream out;
  if (what == "cuts")
    print_cuts(out, ws.model(v), true);
  else
    print_units(out, ws.model(v), v.scenario.optimizer, true);
  return out.str();
}

// `splitsim calibrate`: the plans fitted to the measured files' rows, as
// [the calibration file's JSON, the printed fit].
std::pair<std::string, std::string> calibrate_plans(const std::vector<Plan>& plans,
                                                    const std::vector<std::string>& measured,
                                                    bool leave_one_out, int jobs,
                                                    const Reporter& report) {
  std::vector<MeasuredRow> rows;
  for (const std::string& f : measured) {
    const std::vector<MeasuredRow> more = read_measured(f);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  CalibrateOptions o;
  o.jobs = default_jobs(jobs);
  o.leave_one_out = leave_one_out;
  o.progress = report.notes("calibrate");
  const CalibrationFit fit = calibrate(plans, rows, o);
  std::ostringstream out;
  print_calibration_fit(out, fit);
  return {calibration_file_json(fit).dump(2) + "\n", out.str()};
}

// `splitsim validate --matrix --json`: [whether every run succeeded, the
// report]. Real runs of `splitsim exec` ($SPLITSIM_EXEC_BIN, which the
// package sets to the splitsim beside it).
std::pair<bool, std::string> validate_files(ValidateRequest request, const Reporter& report) {
  request.matrix = true;
  request.json = true;
  std::ostringstream out;
  const bool ok = validate(request, out, report.notes("validate"));
  return {ok, out.str()};
}

ScenarioSource source_of(std::string text, std::string dir, std::string name) {
  return {std::move(text), std::move(dir), std::move(name)};
}

// splitsim.InputError, a ValueError with `where`, for every InputError.
void bind_errors(py::module_& m) {
  static py::handle input_error =
      PyErr_NewException("splitsim.InputError", PyExc_ValueError, nullptr);
  m.attr("InputError") = input_error;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(input_error)(e.what());
      error.attr("where") = e.where();
      PyErr_SetObject(input_error.ptr(), error.ptr());
    }
  });
}

// The value types that cross: a Plan (as a handle) and the explorer's flags.
void bind_types(py::module_& m) {
  py::class_<Plan>(m, "PlanHandle")
      .def_property_readonly("variant", [](const Plan& p) { return p.variant; })
      .def("to_json", [](const Plan& p) { return nlohmann::json(p).dump(); })
      .def("to_bytes", [](const Plan& p) { return py::bytes(plan_to_bytes(p)); });
  m.def(
      "plan_from_bytes", [](const py::bytes& b) { return plan_from_bytes(std::string(b)); },
      "a Plan from PlanHandle.to_bytes() of this build", py::arg("data"));

  py::class_<SpaceFlags>(m, "SpaceFlags")
      .def(py::init<>())
      .def_readwrite("space_file", &SpaceFlags::space_file)
      .def_readwrite("objective", &SpaceFlags::objective)
      .def_readwrite("kinds", &SpaceFlags::kinds)
      .def_readwrite("chunks", &SpaceFlags::chunks)
      .def_readwrite("bandwidths", &SpaceFlags::bandwidths)
      .def_readwrite("stages", &SpaceFlags::stages)
      .def_readwrite("client_memory_bytes", &SpaceFlags::client_memory_bytes)
      .def_readwrite("max_client_mac_share", &SpaceFlags::max_client_mac_share)
      .def_readwrite("calibration", &SpaceFlags::calibration);
}

// Scenarios to plans: variants, plans, the model's cuts and units.
void bind_planning(py::module_& m) {
  m.def(
      "variants",
      [](std::string text, std::string dir, std::string name) {
        return scenario_variants(source_of(std::move(text), std::move(dir), std::move(name)));
      },
      "[(label, variant JSON)] of a scenario's sweep", py::arg("text"), py::arg("dir"),
      py::arg("name"));
  m.def(
      "plan",
      [](std::string text, std::string dir, std::string name, std::string variant,
         std::string calibration, py::object progress) {
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return plan_variants(source_of(std::move(text), std::move(dir), std::move(name)), variant,
                             calibration, report);
      },
      "the selected variants' Plans", py::arg("text"), py::arg("dir"), py::arg("name"),
      py::arg("variant"), py::arg("calibration"), py::arg("progress"));
  m.def(
      "model_report",
      [](std::string text, std::string dir, std::string name, std::string what,
         py::object progress) {
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return model_report(source_of(std::move(text), std::move(dir), std::move(name)), what,
                            report);
      },
      "plan --list-cuts/--units --json of the first variant's model", py::arg("text"),
      py::arg("dir"), py::arg("name"), py::arg("what"), py::arg("progress"));
  m.def(
      "plan_file",
      [](const std::string& file) -> std::optional<std::vector<Plan>> {
        nlohmann::json j;
        try {
          j = parse_json_file(file, "scenario or plan file");
        } catch (const InputError&) {
          return std::nullopt;  // not readable JSON: the scenario reader says why
        }
        if (!is_plan_json(j)) return std::nullopt;
        return load_plan_file(file);
      },
      "the Plans of a plan file (what plan --json writes), None for any other file, as "
      "simulate tells them apart",
      py::arg("file"));
  m.def(
      "plan_from_json",
      [](const std::string& text) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
          throw InputError("plan", std::string("not JSON: ") + e.what());
        }
        return parse_plan(j);
      },
      "a Plan from its JSON (schema splitsim.plan/1)", py::arg("text"));
  m.def(
      "apply_calibration",
      [](const Plan& plan, const std::string& file) {
        return apply_calibration(plan, load_calibration_file(file));
      },
      "the plan with a calibration file applied", py::arg("plan"), py::arg("file"));
}

// Plans to figures: simulate, timeline, explore, calibrate, validate.
void bind_running(py::module_& m) {
  m.def(
      "simulate",
      [](const std::vector<Plan>& plans, int jobs, std::string server_order, bool metrics,
         py::object progress) {
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return simulate_plans(plans, jobs, server_order, metrics, report);
      },
      "the plans simulated: their CSV records (or metrics), a JSON array", py::arg("plans"),
      py::arg("jobs"), py::arg("server_order"), py::arg("metrics"), py::arg("progress"));
  m.def(
      "timeline",
      [](const Plan& plan, std::string server_order) {
        py::gil_scoped_release release;
        return timeline_columns(plan, server_order);
      },
      "one plan's simulated events, as columns", py::arg("plan"), py::arg("server_order"));
  m.def(
      "explore",
      [](std::string text, std::string dir, std::string name, std::string variant, SpaceFlags space,
         int top, int jobs, int max_simulations, double spread_pct, py::object simulate,
         py::object progress) {
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return explore_variant(source_of(std::move(text), std::move(dir), std::move(name)), variant,
                               space, top, jobs, max_simulations, spread_pct, simulate, report);
      },
      "explore --json's report; simulate: None, or a callable from a list of PlanHandles to "
      "their metrics' JSON array",
      py::arg("text"), py::arg("dir"), py::arg("name"), py::arg("variant"), py::arg("space"),
      py::arg("top"), py::arg("jobs"), py::arg("max_simulations"), py::arg("spread_pct"),
      py::arg("simulate"), py::arg("progress"));

  m.def(
      "calibrate",
      [](const std::vector<Plan>& plans, const std::vector<std::string>& measured,
         bool leave_one_out, int jobs, py::object progress) {
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return calibrate_plans(plans, measured, leave_one_out, jobs, report);
      },
      "(calibration file JSON, the fit as calibrate prints it)", py::arg("plans"),
      py::arg("measured"), py::arg("leave_one_out"), py::arg("jobs"), py::arg("progress"));

  m.def(
      "validate",
      [](std::vector<std::string> files, std::string variant, std::string link_rate,
         std::string calibration, bool quick, int repeat, int64_t iterations, double timeout_s,
         bool keep_going, bool platform_model, py::object progress) {
        ValidateRequest r;
        r.scenarios = std::move(files);
        r.variant = std::move(variant);
        r.link_rate = std::move(link_rate);
        r.calibration = std::move(calibration);
        r.quick = quick;
        r.validator.repeat = repeat;
        r.validator.iterations = iterations;
        r.validator.timeout_s = timeout_s;
        r.validator.keep_going = keep_going;
        r.no_platform_model = !platform_model;
        const Reporter report(std::move(progress));
        py::gil_scoped_release release;
        return validate_files(std::move(r), report);
      },
      "(every run succeeded, validate --matrix --json's report)", py::arg("files"),
      py::arg("variant"), py::arg("link_rate"), py::arg("calibration"), py::arg("quick"),
      py::arg("repeat"), py::arg("iterations"), py::arg("timeout_s"), py::arg("keep_going"),
      py::arg("platform_model"), py::arg("progress"));
}

}  // namespace
}  // namespace splitsim

PYBIND11_MODULE(_core, m) {
  m.doc() = "splitsim's C++ libraries; use the splitsim package, not this module";
  // LibTorch's glog warnings (as the command line does): only errors reach stderr.
  splitsim::quiet_library_logs();
  splitsim::bind_errors(m);
  splitsim::bind_types(m);
  splitsim::bind_planning(m);
  splitsim::bind_running(m);
}
