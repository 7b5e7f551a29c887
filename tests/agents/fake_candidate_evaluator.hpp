// A deterministic stand-in for the GPU behind the template search (kernels::CandidateEvaluator),
// shared by the search's tests: each design has a fixed time (a hash of its id, or what `time`
// plants for a task), some designs answer wrong, and every call is recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/kernels/template_search.hpp"

namespace sparserl::testing {

// The design id of a rendered program (its first line is "// Design: ID (op, dtype)").
inline std::string design_of(const std::string& program) {
  const std::string head = "// Design: ";
  const std::size_t end = program.find(" (", head.size());
  return program.substr(head.size(), end - head.size());
}

class FakeEvaluator : public kernels::CandidateEvaluator {
 public:
  bool gpu = true;
  std::string device_name = "Fake GPU";
  std::set<std::string> wrong;                     // designs that always answer wrong
  std::set<std::string> wrong_in_full;             // designs wrong only under the full protocol
  std::vector<std::pair<std::string, int>> calls;  // (design, timed_runs)
  int batches = 0;
  // When set: the time of a design on a task (else time_of(id)).
  std::function<double(const std::string& id, const datasets::Task& task)> time;

  static double time_of(const std::string& id) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return 10.0 + static_cast<double>(h % 10000) / 100.0;  // 10 .. 110 us
  }

  bool gpu_available() override { return gpu; }
  std::string device() override { return gpu ? device_name : ""; }
  std::vector<reward::EvalResult> evaluate(const datasets::Task& task,
                                           const std::vector<std::string>& programs,
                                           const reward::GpuProtocol& protocol) override {
    ++batches;
    std::vector<reward::EvalResult> out;
    for (const std::string& p : programs) {
      const std::string id = design_of(p);
      calls.push_back({id, protocol.timed_runs});
      reward::EvalResult r;
      r.compiled = true;
      r.gpu_available = gpu;
      r.stage = reward::Stage::compile;
      if (gpu) {
        const bool full = protocol.timed_runs >= 50;
        if (wrong.count(id) || (full && wrong_in_full.count(id))) {
          r.stage = reward::Stage::run;
          r.error = reward::ErrorKind::wrong_answer;
          r.message = "planted wrong answer";
        } else {
          r.stage = reward::Stage::time;
          r.correct = r.timed = true;
          r.timing.median_us = time ? time(id, task) : time_of(id);
          r.timing.p10_us = 0.95 * r.timing.median_us;
          r.timing.p90_us = 1.05 * r.timing.median_us;
          r.timing.baseline_median_us = 50.0;
          r.timing.baseline_algorithm = "COO_ALG1";
          r.timing.speedup = 50.0 / r.timing.median_us;
          r.timing.bandwidth_fraction = 0.5;
        }
      }
      out.push_back(r);
    }
    return out;
  }
};

}  // namespace sparserl::testing
