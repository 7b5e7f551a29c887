// Checkpoint folders written through a temporary folder and a rename, listed from their meta.json,
// and pruned to the last N plus the best (checkpoints.hpp).
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/checkpoints.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/run_info.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

constexpr std::string_view kTempPrefix = ".tmp-";

std::optional<std::int64_t> step_of_folder(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() <= 5) return std::nullopt;
  const std::string digits = name.substr(5);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18)
    return std::nullopt;
  return std::stoll(digits);
}

bool better(double a, double b, bool higher_is_better) { return higher_is_better ? a > b : a < b; }

}  // namespace

std::optional<double> CheckpointInfo::metric(std::string_view name) const {
  for (const auto& [n, v] : metrics) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::string checkpoint_folder_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06lld", static_cast<long long>(step));
  return buf;
}

CheckpointInfo read_checkpoint(const fs::path& dir) {
  const fs::path meta = dir / "meta.json";
  const std::optional<std::string> text = datasets::read_file_bytes(meta);
  if (!text) throw CheckpointError(meta.string() + ": cannot open (" + std::strerror(errno) + ")");
  CheckpointInfo info;
  info.dir = dir;
  try {
    const Json json = parse_json(*text, meta.string());
    if (!json.is_object()) throw CheckpointError(meta.string() + ": expected a JSON object");
    const Json* step = find_member(json, "step");
    if (step == nullptr) throw CheckpointError(meta.string() + ": missing member 'step'");
    info.step = as_integer(*step);
    if (const Json* t = find_member(json, "time")) info.time = as_number(*t);
    if (const Json* m = find_member(json, "metrics")) {
      for (const auto& [name, value] : as_object(*m)) {
        if (value.is_number() || value.is_null()) info.metrics.emplace_back(name, as_number(value));
      }
    }
  } catch (const JsonError& e) {
    throw CheckpointError(meta.string() + ": " + e.what());
  }
  return info;
}

CheckpointStore::CheckpointStore(fs::path dir, CheckpointPolicy policy)
    : dir_(std::move(dir)), policy_(std::move(policy)) {
  if (policy_.keep_last < 0) throw CheckpointError("checkpoints: keep_last must be >= 0");
}

CheckpointInfo CheckpointStore::save(std::int64_t step, const Statistics& metrics,
                                     const std::function<void(const fs::path& dir)>& write_files) {
  if (step < 0)
    throw CheckpointError(dir_.string() + ": checkpoint step " + std::to_string(step) +
                          " is negative");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw CheckpointError(dir_.string() + ": cannot create the checkpoint folder (" + ec.message() +
                          ")");
  const std::string name = checkpoint_folder_name(step);
  const fs::path temp = dir_ / (std::string(kTempPrefix) + name + "-" + std::to_string(::getpid()));
  datasets::remove_tree(temp, ec);
  fs::create_directory(temp, ec);
  if (ec) throw CheckpointError(temp.string() + ": cannot create (" + ec.message() + ")");

  CheckpointInfo info;
  info.step = step;
  info.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  info.metrics = metrics;
  try {
    if (write_files) write_files(temp);
    Json meta = Json::object();
    meta["step"] = step;
    meta["time"] = info.time;
    meta["saved_at"] = iso_utc(std::chrono::system_clock::now());
    Json m = Json::object();
    for (const auto& [n, v] : metrics) {
      if (!m.contains(n)) m[n] = v;
    }
    meta["metrics"] = std::move(m);
    write_file_atomically(temp / "meta.json", dump_json(meta, 2) + "\n");
  } catch (...) {
    datasets::remove_tree(temp, ec);
    throw;
  }

  const fs::path final_dir = dir_ / name;
  if (fs::exists(final_dir, ec)) {
    // A resumed run saving the same step again: swap the old one out before the new one goes in, so
    // some complete copy exists at every moment.
    const fs::path old =
        dir_ / (std::string(kTempPrefix) + "old-" + name + "-" + std::to_string(::getpid()));
    datasets::remove_tree(old, ec);
    fs::rename(final_dir, old, ec);
    if (ec) throw CheckpointError(final_dir.string() + ": cannot replace (" + ec.message() + ")");
    fs::rename(temp, final_dir, ec);
    if (ec)
      throw CheckpointError(final_dir.string() + ": cannot rename the new checkpoint into place (" +
                            ec.message() + ")");
    datasets::remove_tree(old, ec);
  } else {
    fs::rename(temp, final_dir, ec);
    if (ec)
      throw CheckpointError(final_dir.string() + ": cannot rename the new checkpoint into place (" +
                            ec.message() + ")");
  }
  info.dir = final_dir;
  prune();
  return info;
}

std::vector<CheckpointInfo> CheckpointStore::list() const {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_directory(ec)) continue;
    const auto step = step_of_folder(e.path().filename().string());
    if (!step || !fs::exists(e.path() / "meta.json", ec)) continue;
    CheckpointInfo info = read_checkpoint(e.path());
    info.step = *step;  // the folder name is what resume and pruning go by
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointInfo> CheckpointStore::latest() const {
  auto all = list();
  if (all.empty()) return std::nullopt;
  return std::move(all.back());
}

std::optional<CheckpointInfo> CheckpointStore::best() const {
  if (policy_.best_metric.empty()) return std::nullopt;
  std::optional<CheckpointInfo> best;
  double best_value = 0;
  for (CheckpointInfo& c : list()) {
    const auto v = c.metric(policy_.best_metric);
    if (!v || !std::isfinite(*v)) continue;
    if (!best || better(*v, best_value, policy_.higher_is_better)) {
      best_value = *v;
      best = std::move(c);
    }
  }
  return best;
}

void CheckpointStore::prune() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().filename().string().rfind(kTempPrefix, 0) == 0) datasets::remove_tree(e.path(), ec);
  }
  const std::vector<CheckpointInfo> all = list();
  std::set<std::int64_t> keep;
  const std::size_t n = static_cast<std::size_t>(policy_.keep_last);
  for (std::size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i)
    keep.insert(all[i].step);
  if (const auto b = best()) keep.insert(b->step);
  // Never delete everything: with keep_last = 0 and no best yet the newest stays, or resume has
  // nothing.
  if (keep.empty() && !all.empty()) keep.insert(all.back().step);
  for (const CheckpointInfo& c : all) {
    if (keep.count(c.step) == 0) datasets::remove_tree(c.dir, ec);
  }
}

}  // namespace sparserl::experiments
