#include "visible_devices.hpp"

#include <cstdlib>

namespace kevo::cuda::worker {

std::vector<std::string> visible_device_list(const std::string& value) {
  std::vector<std::string> list;
  std::string item;
  for (const char c : value + ",") {
    if (c == ',') {
      if (!item.empty()) list.push_back(item);
      item.clear();
    } else if (c != ' ' && c != '\t') {
      item += c;
    }
  }
  return list;
}

int narrow_visible_devices(int device) {
  if (device < 0) return device;
  std::string entry;
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::vector<std::string> list = visible_device_list(cvd);
    if (device >= static_cast<int>(list.size())) return device;
    entry = list[static_cast<std::size_t>(device)];
  } else {
    entry = std::to_string(device);
  }
  ::setenv("CUDA_VISIBLE_DEVICES", entry.c_str(), 1);
  ::setenv("KEVO_DEVICE_INDEX", "0", 1);
  return 0;
}

}  // namespace kevo::cuda::worker
