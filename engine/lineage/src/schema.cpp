#include "kevo/lineage/schema.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kevo::lineage {
namespace {

constexpr std::array<std::string_view, kEventKindCount> kEventNames = {
    "start", "stop", "resume", "migration_in", "migration_out", "checkpoint", "note", "llm"};

}  // namespace

std::string_view to_string(EventKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kEventNames.size() ? kEventNames[i] : std::string_view("?");
}

std::string_view Row::op_name() const {
  std::size_t n = 0;
  while (n < kOpBytes && op[n] != '\0') ++n;
  return {op, n};
}

std::string rank_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%04d.h5", rank);
  return buf;
}

}  // namespace kevo::lineage
