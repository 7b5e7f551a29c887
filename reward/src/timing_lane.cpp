// A GPU's timing lane (timing_lane.hpp): its file's name, and a lock on it.
#include "sparserl/reward/timing_lane.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sparserl::reward {

std::filesystem::path timing_lane_path(std::string_view pci_bus_id) {
  std::string lane(pci_bus_id);
  for (char& c : lane) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  return std::filesystem::temp_directory_path() / ("sparserl-timing-" + lane + ".lock");
}

TimingLaneLock::TimingLaneLock(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    throw std::runtime_error("timing lane " + path_.string() + ": " + std::strerror(errno));
  }
}

TimingLaneLock::~TimingLaneLock() {
  if (held_) unlock();
  ::close(fd_);
}

void TimingLaneLock::lock() {
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      throw std::runtime_error("timing lane " + path_.string() + ": " + std::strerror(errno));
    }
  }
  held_ = true;
}

bool TimingLaneLock::try_lock() {
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    if (errno != EINTR) {
      throw std::runtime_error("timing lane " + path_.string() + ": " + std::strerror(errno));
    }
  }
  held_ = true;
  return true;
}

void TimingLaneLock::unlock() {
  ::flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace sparserl::reward
