// Turning an LLM reply into a candidate source: fenced code blocks,
// SEARCH/REPLACE diff blocks (applied whitespace-tolerantly), the kernel
// signature check, and JSON parameter hints. Every rejection is a value with
// a reason that goes into the lineage.
#pragma once

#include "kevo/core/task.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::operators::llm {

struct CodeBlock {
  std::string lang;     // the info string after the fence ("cpp", "" ...)
  std::string code;
};

// Every ``` fenced block of the reply, in order.
std::vector<CodeBlock> fenced_blocks(std::string_view reply);

// The result of a parse: source on success, else the reason.
struct Parsed {
  std::optional<std::string> source;
  std::string error;
};

// The kernel source of a full-rewrite reply: the one fenced block that
// defines task.function (several that do are ambiguous), with the task's C
// signature (parameter types and order) unchanged. A torch task's reply is
// Python: the one ```python, ```py or unlabelled block that defines
// `class ModelNew` at the start of a line (blocks in other languages are
// not the candidate).
Parsed parse_code_reply(std::string_view reply, const Task& task);

// "" when `source` defines task.function with the task's parameter types
// (a torch task: defines class ModelNew at module level), else the reason.
std::string check_signature(std::string_view source, const Task& task);

// For a function name that is a C identifier (exposed for tests): where the
// regex \bname\s*\( first matches `s` from `from` on (npos: nowhere), and
// the end (just past the '(') of the leftmost match of the regex
// extern\s*"C"\s*void\s+name\s*\( (npos: none); \s and \b as std::regex
// has them in the classic locale.
std::size_t find_call(std::string_view s, std::string_view name, std::size_t from = 0);
std::size_t find_extern_c(std::string_view s, std::string_view name);

struct DiffBlock {
  std::string search, replace;
};
// The SEARCH/REPLACE blocks of a reply:
//   <<<<<<< SEARCH
//   old lines
//   =======
//   new lines
//   >>>>>>> REPLACE
// A malformed block (no divider or end marker) yields an error.
struct DiffParse {
  std::vector<DiffBlock> blocks;
  std::string error;
};
DiffParse parse_diff_blocks(std::string_view reply);

// How a line-wise match treats the REPLACE part's leading blanks: kept as
// the reply wrote them (C-like sources), or, where indentation is syntax
// (Python), shifted by the difference between the SEARCH part's first line
// and the source line it matched.
enum class Indentation { free, significant };

// Applies the blocks in order. Exact match first; else a line-wise match
// that ignores leading/trailing whitespace and runs of blanks, which must be
// unique. A block that matches nowhere fails the whole edit with its index.
Parsed apply_diff(std::string_view source, const std::vector<DiffBlock>& blocks,
                  Indentation indentation = Indentation::free);

// The first JSON object in the reply (a ```json block, else the outermost
// braces); nullopt-like empty string when none parses.
std::string extract_json_object(std::string_view reply);

}  // namespace kevo::operators::llm
