// Reading a candidate's parameter block back into a search-space point.
#include "kevo/core/search_space.hpp"

#include "kevo/core/hash.hpp"

namespace kevo {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// The "#define NAME value" lines of the params block of `source`, as views
// into it. Parsed by hand (no streams, no copies): the null backend reads a
// block per candidate, and so does the island.
std::vector<std::pair<std::string_view, std::string_view>> block_defines(std::string_view source) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  const auto [begin, end] = params_block_span(source);
  if (begin == std::string_view::npos) return out;
  std::string_view rest = source.substr(begin, end - begin);
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    std::string_view line = trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    constexpr std::string_view kDefine = "#define";
    if (line.substr(0, kDefine.size()) != kDefine) continue;
    line = trim(line.substr(kDefine.size()));
    const auto space = line.find_first_of(" \t");
    if (space == 0 || line.empty()) continue;
    const std::string_view name = line.substr(0, space);
    std::string_view value = space == std::string_view::npos ? std::string_view{} : trim(line.substr(space));
    if (value.empty()) continue;
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    out.emplace_back(name, value);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> block_assignment(std::string_view source) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : block_defines(source)) out.emplace_back(std::string(name), std::string(value));
  return out;
}

std::optional<Point> point_from_source(const SearchSpace& space, std::string_view source) {
  if (space.empty()) return std::nullopt;
  const auto all = block_defines(source);
  // String parameters also define NAME_value markers: keep the real names only.
  std::vector<std::pair<std::string, std::string>> assignment;
  assignment.reserve(space.params().size());
  for (const auto& p : space.params())
    for (const auto& [name, value] : all)
      if (name == p.name) assignment.emplace_back(std::string(name), std::string(value));
  if (assignment.size() != space.params().size()) return std::nullopt;
  return space.find(assignment);
}

SourceHashes source_hashes(std::string_view source) {
  const SplitSource split = split_params_block(source);
  SourceHashes h;
  h.body = source_hash(split.body);
  h.full = fnv1a64(normalise_source(split.block), h.body);
  return h;
}

std::string normalise_python_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  std::size_t start = 0;
  while (start < source.size()) {
    std::size_t end = source.find('\n', start);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = source.substr(start, end - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (!line.empty()) {
      out.append(line);
      out += '\n';
    }
    start = end + 1;
  }
  return out;
}

SourceHashes source_hashes(std::string_view source, SourceSyntax syntax) {
  if (syntax == SourceSyntax::c_like) return source_hashes(source);
  SourceHashes h;
  h.body = fnv1a64(normalise_python_source(source));
  h.full = h.body;
  return h;
}

}  // namespace kevo
