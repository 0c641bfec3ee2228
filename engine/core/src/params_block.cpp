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

// A Python block line "NAME = value" (a trailing "# comment" ignored), as
// views; an empty name when the line is not one.
std::pair<std::string_view, std::string_view> python_assignment(std::string_view line) {
  const auto eq = line.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  const std::string_view name = trim(line.substr(0, eq));
  std::string_view value = trim(line.substr(eq + 1));
  if (name.empty() || value.empty() || value.front() == '=') return {};   // "==" is no assignment
  if (value.front() == '"' || value.front() == '\'') {
    const auto close = value.find(value.front(), 1);
    if (close == std::string_view::npos) return {};
    value = value.substr(1, close - 1);
  } else {
    value = trim(value.substr(0, value.find('#')));
  }
  return {name, value};
}

// The assignments of the params block of `source`, as views into it. Parsed
// by hand (no streams, no copies): the null backend reads a block per
// candidate, and so does the island.
std::vector<std::pair<std::string_view, std::string_view>> block_defines(std::string_view source,
                                                                         SourceSyntax syntax) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  const auto [begin, end] = params_block_span(source, syntax);
  if (begin == std::string_view::npos) return out;
  std::string_view rest = source.substr(begin, end - begin);
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    std::string_view line = trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (syntax == SourceSyntax::python) {
      if (line.empty() || line.front() == '#') continue;
      const auto assignment = python_assignment(line);
      if (!assignment.first.empty()) out.push_back(assignment);
      continue;
    }
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

std::vector<std::pair<std::string, std::string>> block_assignment(std::string_view source, SourceSyntax syntax) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : block_defines(source, syntax)) out.emplace_back(std::string(name), std::string(value));
  return out;
}

std::optional<Point> point_from_source(const SearchSpace& space, std::string_view source) {
  if (space.empty()) return std::nullopt;
  const auto all = block_defines(source, space.syntax());
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
  const auto [begin, end] = params_block_span(source, SourceSyntax::python);
  SourceHashes h;
  if (begin == std::string_view::npos) {
    h.body = fnv1a64(normalise_python_source(source));
    h.full = h.body;
    return h;
  }
  std::string body(source.substr(0, begin));
  body += source.substr(end);
  h.body = fnv1a64(normalise_python_source(body));
  h.full = fnv1a64(normalise_python_source(source.substr(begin, end - begin)), h.body);
  return h;
}

}  // namespace kevo
