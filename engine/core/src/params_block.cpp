// Reading a candidate's parameter block back into a search-space point.
#include "kevo/core/search_space.hpp"

#include <sstream>

namespace kevo {

std::vector<std::pair<std::string, std::string>> block_assignment(std::string_view source) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in{split_params_block(source).block};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string directive, name, value;
    if (!(words >> directive >> name) || directive != "#define") continue;
    std::getline(words, value);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r");
    if (first == std::string::npos) continue;
    value = value.substr(first, last - first + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    out.emplace_back(name, value);
  }
  return out;
}

std::optional<Point> point_from_source(const SearchSpace& space, std::string_view source) {
  if (space.empty()) return std::nullopt;
  const auto all = block_assignment(source);
  // String parameters also define NAME_value markers: keep the real names only.
  std::vector<std::pair<std::string, std::string>> assignment;
  for (const auto& p : space.params())
    for (const auto& [name, value] : all)
      if (name == p.name) assignment.emplace_back(name, value);
  if (assignment.size() != space.params().size()) return std::nullopt;
  return space.find(assignment);
}

}  // namespace kevo
