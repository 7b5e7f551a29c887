// The timing lane of a GPU: an exclusive lock (flock) on a file named after the GPU's PCI bus id,
// $TMPDIR/sparserl-timing-<bus id>.lock. Every GPU worker of every evaluator on the host holds its
// GPU's lane from the choice of the baseline's path to the last timed run (reward/gpu), so timed
// kernels never share a GPU with each other; a sampler that runs on a GPU the evaluator times on
// holds the same lane while its kernels run (the RL stage with train.overlap_generation), so they
// do not share it with the policy either. The kernel releases a lock when its holder dies.
#pragma once

#include <filesystem>
#include <string_view>

namespace sparserl::reward {

// The lane's file for a GPU: its PCI bus id ("0000:00:06.0"; characters other than letters and
// digits become '-'), or "device<N>" where CUDA gives no bus id.
std::filesystem::path timing_lane_path(std::string_view pci_bus_id);

// A lane's file, opened (created) once and locked and unlocked as often as needed.
class TimingLaneLock {
 public:
  // std::runtime_error naming the file when it cannot be opened.
  explicit TimingLaneLock(const std::filesystem::path& path);
  ~TimingLaneLock();
  TimingLaneLock(const TimingLaneLock&) = delete;
  TimingLaneLock& operator=(const TimingLaneLock&) = delete;

  void lock();      // waits until no other holder has it
  bool try_lock();  // takes it if free; false if another holder has it
  void unlock();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool held_ = false;
};

// Holds a lane for a scope (a null lane: nothing is held).
class TimingLaneTurn {
 public:
  explicit TimingLaneTurn(TimingLaneLock* lane) : lane_(lane) {
    if (lane_ != nullptr) lane_->lock();
  }
  ~TimingLaneTurn() {
    if (lane_ != nullptr) lane_->unlock();
  }
  TimingLaneTurn(const TimingLaneTurn&) = delete;
  TimingLaneTurn& operator=(const TimingLaneTurn&) = delete;

 private:
  TimingLaneLock* lane_;
};

}  // namespace sparserl::reward
