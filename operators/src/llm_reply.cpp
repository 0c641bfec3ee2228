#include "kevo/operators/llm_reply.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <regex>

namespace kevo::operators::llm {
namespace {

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// A line with leading/trailing blanks dropped and inner runs of blanks made one.
std::string squash(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : trim(s)) {
    if (c == ' ' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      break;
    }
    out.emplace_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// The C type of one parameter declaration with the name and restrict
// qualifiers removed and spacing normalised ("const float*").
std::string param_type(std::string p) {
  for (const char* q : {"__restrict__", "__restrict", "restrict"}) {
    for (auto pos = p.find(q); pos != std::string::npos; pos = p.find(q)) p.erase(pos, std::string(q).size());
  }
  std::string t = squash(p);
  // Drop the trailing identifier (the parameter name), if any.
  std::size_t e = t.size();
  while (e > 0 && (std::isalnum(static_cast<unsigned char>(t[e - 1])) || t[e - 1] == '_')) --e;
  if (e > 0 && e < t.size()) t = t.substr(0, e);
  std::string out;
  for (char c : t)
    if (c != ' ' || (!out.empty() && out.back() != '*')) out += c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (auto pos = out.find(" *"); pos != std::string::npos; pos = out.find(" *")) out.erase(pos, 1);
  for (auto pos = out.find("std::"); pos != std::string::npos; pos = out.find("std::")) out.erase(pos, 5);
  if (out == "int") out = "int32_t";
  if (out == "const int") out = "const int32_t";
  if (out == "long long" || out == "long") out = "int64_t";
  // nv_bfloat16 is cuda_bf16.h's public alias of the signature's __nv_bfloat16.
  if (const auto pos = out.find("nv_bfloat16"); pos != std::string::npos && (pos == 0 || out[pos - 1] == ' '))
    out.replace(pos, 11, "__nv_bfloat16");
  return out;
}

// What std::regex (ECMAScript, the classic locale) calls \w and \s.
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool space_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::size_t skip_spaces(std::string_view s, std::size_t at) {
  while (at < s.size() && space_char(s[at])) ++at;
  return at;
}

// Tasks loaded from a manifest name their function with a C identifier; the
// scans above are exact for those. Anything else keeps the regexes.
bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), word_char);
}

// A torch task's candidate is Python: it defines `class ModelNew` at the
// start of a line (module level; an indented one is nested in something).
const std::regex& model_new_class() {
  static const std::regex r("(^|\\n)class[ \\t]+ModelNew\\b");
  return r;
}

bool defines_model_new(const std::string& code) { return std::regex_search(code, model_new_class()); }

// The info strings a Python block may carry: ```python, ```py, ```python3 or none.
bool python_fence(const std::string& lang) {
  std::string l;
  for (char c : lang) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l.empty() || l == "python" || l == "py" || l == "python3";
}

// The leading blanks of a line.
std::string indentation_of(std::string_view line) {
  std::size_t k = 0;
  while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
  return std::string(line.substr(0, k));
}

// The REPLACE part of a block whose SEARCH part matched line-wise at other
// indentation than the source's (a Python edit quoted without its leading
// blanks): every line shifted by the same difference, so that it lands at
// the depth of the lines it replaces.
std::string reindent(const std::string& replace, const std::string& search_indent, const std::string& source_indent) {
  if (search_indent == source_indent) return replace;
  std::string out;
  auto lines = split_lines(replace);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();   // the text's final newline
  for (const auto& line : lines) {
    if (trim(line).empty()) {
      out += line + "\n";
      continue;
    }
    const std::string have = indentation_of(line);
    const std::string rest = line.substr(have.size());
    if (have.rfind(search_indent, 0) == 0) out += source_indent + have.substr(search_indent.size()) + rest + "\n";
    else out += source_indent + line + "\n";   // shallower than the SEARCH part: keep its own depth under the source's
  }
  return out;
}

// Whether an exact match at `pos` is whole lines quoted without their
// indentation (only blanks before it on its line, and it ends a line):
// where indentation is syntax, such a match goes the line-wise way, which
// moves the REPLACE part to the matched lines' depth.
bool after_indentation(const std::string& text, std::size_t pos, const DiffBlock& b, Indentation indentation) {
  if (indentation != Indentation::significant || b.search.empty() || b.search.back() != '\n') return false;
  std::size_t k = pos;
  while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
  return k < pos && (k == 0 || text[k - 1] == '\n');
}

}  // namespace

// The regexes these two scans replace, compiled for every reply, cost more
// than the rest of an LLM operator's work (issue 19).
std::size_t find_call(std::string_view s, std::string_view name, std::size_t from) {
  for (std::size_t at = s.find(name, from); at != std::string_view::npos; at = s.find(name, at + 1)) {
    if (at > 0 && word_char(s[at - 1])) continue;   // \b before a word character
    const std::size_t open = skip_spaces(s, at + name.size());
    if (open < s.size() && s[open] == '(') return at;
  }
  return std::string_view::npos;
}

// Each part after "extern" is a run of blanks before a fixed non-blank text,
// so the greedy scan from a given start finds the match there if there is one.
std::size_t find_extern_c(std::string_view s, std::string_view name) {
  for (std::size_t at = s.find("extern"); at != std::string_view::npos; at = s.find("extern", at + 1)) {
    std::size_t k = skip_spaces(s, at + 6);
    if (s.compare(k, 3, "\"C\"") != 0) continue;
    k = skip_spaces(s, k + 3);
    if (s.compare(k, 4, "void") != 0) continue;
    const std::size_t after_void = k + 4;
    k = skip_spaces(s, after_void);
    if (k == after_void || s.compare(k, name.size(), name) != 0) continue;
    k = skip_spaces(s, k + name.size());
    if (k < s.size() && s[k] == '(') return k + 1;
  }
  return std::string_view::npos;
}

std::vector<CodeBlock> fenced_blocks(std::string_view reply) {
  std::vector<CodeBlock> out;
  std::optional<CodeBlock> open;
  // Line by line ('\n' ends a line; the text after the last one is a line
  // too), without copying lines that are not code.
  for (std::size_t start = 0; start <= reply.size();) {
    std::size_t nl = reply.find('\n', start);
    if (nl == std::string_view::npos) nl = reply.size();
    const std::string_view raw = reply.substr(start, nl - start);
    start = nl + 1;
    std::string_view t = raw;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    if (t.substr(0, 3) == "```") {
      if (!open) {
        open = CodeBlock{trim(t.substr(3)), {}};
      } else {
        out.push_back(std::move(*open));
        open.reset();
      }
      continue;
    }
    if (open) {
      open->code.append(raw);
      open->code += '\n';
    }
  }
  // An unterminated fence (a reply cut at max_tokens) is not a block.
  return out;
}

std::string check_signature(std::string_view source, const Task& task) {
  if (task.is_torch())   // a PyTorch program: ModelNew is its interface (its methods are checked by the judge)
    return defines_model_new(std::string(source))
               ? std::string()
               : "the code does not define class ModelNew at module level (class ModelNew(nn.Module) with Model's "
                 "interface)";
  if (!task.signature.empty())   // a command task: its declaration, as written
    return contains_signature(source, task.signature)
               ? std::string()
               : fmt::format("the code does not contain the task's signature {} (changed or missing)", task.signature);
  const std::string_view src = source;
  std::size_t open = std::string_view::npos;
  if (identifier(task.function)) {
    open = find_extern_c(src, task.function);
  } else {
    const std::string text(source);
    const std::regex decl("extern\\s*\"C\"\\s*void\\s+" + task.function + "\\s*\\(");
    std::smatch m;
    if (std::regex_search(text, m, decl)) open = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  if (open == std::string_view::npos)
    return fmt::format("the code does not define extern \"C\" void {}(...)", task.function);
  const std::size_t close = src.find(')', open);
  if (close == std::string::npos) return "unterminated parameter list of " + task.function;
  std::vector<std::string> got;
  const std::string list(src.substr(open, close - open));
  std::size_t start = 0;
  while (true) {
    const auto comma = list.find(',', start);
    got.push_back(param_type(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (got.size() == 1 && (got[0].empty() || got[0] == "void")) got.clear();
  std::vector<std::string> want;
  for (const auto& a : task.args)
    want.push_back((a.role == Role::in ? "const " : "") + std::string(c_type(a.dtype)) + (a.is_buffer() ? "*" : ""));
  if (got != want) {
    std::string g, w;
    for (const auto& x : got) g += (g.empty() ? "" : ", ") + x;
    for (const auto& x : want) w += (w.empty() ? "" : ", ") + x;
    return fmt::format("changed kernel signature: {}({}) instead of {}({})", task.function, g, task.function, w);
  }
  return {};
}

namespace {

// A torch task's reply: the one Python block (```python, ```py or
// unlabelled) that defines class ModelNew at the start of a line. Blocks in
// other languages (a CUDA kernel shown apart) are not the candidate.
Parsed parse_python_reply(const std::vector<CodeBlock>& blocks) {
  std::vector<const CodeBlock*> defining;
  std::size_t python = 0;
  for (const auto& b : blocks) {
    if (!python_fence(b.lang)) continue;
    ++python;
    if (defines_model_new(b.code)) defining.push_back(&b);
  }
  if (defining.size() > 1)
    return {std::nullopt, fmt::format("ambiguous reply: {} Python code blocks define class ModelNew", defining.size())};
  if (defining.empty()) {
    if (python == 0)
      return {std::nullopt, fmt::format("no Python code block in the reply ({} block{} in other languages; the "
                                        "candidate is one ```python block defining class ModelNew)",
                                        blocks.size(), blocks.size() == 1 ? "" : "s")};
    if (python == 1)
      return {std::nullopt, "the code block does not define class ModelNew at module level (class ModelNew(nn.Module) "
                            "with Model's interface)"};
    return {std::nullopt, fmt::format("none of the {} Python code blocks defines class ModelNew at module level", python)};
  }
  return {defining[0]->code, {}};
}

}  // namespace

Parsed parse_code_reply(std::string_view reply, const Task& task) {
  const auto blocks = fenced_blocks(reply);
  if (blocks.empty()) return {std::nullopt, "no code block in the reply"};
  if (task.is_torch()) return parse_python_reply(blocks);
  const bool plain = identifier(task.function);
  std::optional<std::regex> defines;
  if (!plain) defines.emplace("\\b" + task.function + "\\s*\\(");
  auto mentions_call = [&](const std::string& code) {
    return plain ? find_call(code, task.function) != std::string_view::npos : std::regex_search(code, *defines);
  };
  std::vector<const CodeBlock*> defining;
  for (const auto& b : blocks)
    if (mentions_call(b.code) &&
        (!task.signature.empty() || b.code.find("extern") != std::string::npos))
      defining.push_back(&b);
  if (defining.empty()) {
    if (blocks.size() == 1) {
      const auto why = check_signature(blocks[0].code, task);
      return {std::nullopt, why.empty() ? "code block does not define the kernel" : why};
    }
    return {std::nullopt, fmt::format("none of the {} code blocks defines {}", blocks.size(), task.function)};
  }
  if (defining.size() > 1)
    return {std::nullopt, fmt::format("ambiguous reply: {} code blocks define {}", defining.size(), task.function)};
  if (auto why = check_signature(defining[0]->code, task); !why.empty()) return {std::nullopt, why};
  return {defining[0]->code, {}};
}

DiffParse parse_diff_blocks(std::string_view reply) {
  DiffParse out;
  const auto lines = split_lines(reply);
  enum { outside, search, replace } state = outside;
  DiffBlock cur;
  for (const auto& raw : lines) {
    const std::string t = trim(raw);
    const bool start = t.rfind("<<<<<<<", 0) == 0 && t.find("SEARCH") != std::string::npos;
    const bool mid = t.size() >= 7 && t.find_first_not_of('=') == std::string::npos;
    const bool end = t.rfind(">>>>>>>", 0) == 0 && t.find("REPLACE") != std::string::npos;
    if (state == outside) {
      if (start) {
        state = search;
        cur = {};
      }
    } else if (state == search) {
      if (mid) state = replace;
      else if (start || end) {
        out.error = fmt::format("diff block {} has no ======= divider", out.blocks.size());
        return out;
      } else cur.search += raw + "\n";
    } else {
      if (end) {
        out.blocks.push_back(std::move(cur));
        state = outside;
      } else if (start) {
        out.error = fmt::format("diff block {} has no >>>>>>> REPLACE end", out.blocks.size());
        return out;
      } else cur.replace += raw + "\n";
    }
  }
  if (state != outside) out.error = fmt::format("diff block {} is not terminated", out.blocks.size());
  return out;
}

Parsed apply_diff(std::string_view source, const std::vector<DiffBlock>& blocks, Indentation indentation) {
  if (blocks.empty()) return {std::nullopt, "no SEARCH/REPLACE block in the reply"};
  std::string text(source);
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const auto& b = blocks[k];
    if (trim(b.search).empty()) return {std::nullopt, fmt::format("diff block {} has an empty SEARCH part", k)};
    if (auto pos = text.find(b.search); pos != std::string::npos && !after_indentation(text, pos, b, indentation)) {
      text.replace(pos, b.search.size(), b.replace);
      continue;
    }
    // Whitespace-tolerant, line-wise: blank lines at the ends of the SEARCH
    // part are ignored, every other line must match after squashing.
    auto want = split_lines(b.search);
    while (!want.empty() && trim(want.back()).empty()) want.pop_back();
    while (!want.empty() && trim(want.front()).empty()) want.erase(want.begin());
    for (auto& w : want) w = squash(w);
    auto have = split_lines(text);
    std::vector<std::size_t> hits;
    for (std::size_t i = 0; i + want.size() <= have.size(); ++i) {
      bool same = true;
      for (std::size_t j = 0; j < want.size() && same; ++j) same = squash(have[i + j]) == want[j];
      if (same) hits.push_back(i);
    }
    if (hits.empty())
      return {std::nullopt, fmt::format("diff block {} does not match the parent source (SEARCH starts '{}')", k,
                                        want.empty() ? "" : want.front().substr(0, 60))};
    if (hits.size() > 1)
      return {std::nullopt, fmt::format("diff block {} matches {} places in the parent source", k, hits.size())};
    std::string rebuilt;
    for (std::size_t i = 0; i < hits[0]; ++i) rebuilt += have[i] + "\n";
    if (indentation == Indentation::significant) {
      // The first SEARCH line with text decides how far the edit was off.
      std::string first;
      for (const auto& line : split_lines(b.search))
        if (!trim(line).empty()) {
          first = line;
          break;
        }
      rebuilt += reindent(b.replace, indentation_of(first), indentation_of(have[hits[0]]));
    } else {
      rebuilt += b.replace;
    }
    for (std::size_t i = hits[0] + want.size(); i < have.size(); ++i)
      rebuilt += have[i] + (i + 1 < have.size() ? "\n" : "");
    text = std::move(rebuilt);
  }
  return {text, {}};
}

std::string extract_json_object(std::string_view reply) {
  for (const auto& b : fenced_blocks(reply)) {
    auto j = nlohmann::json::parse(b.code, nullptr, false);
    if (!j.is_discarded() && j.is_object()) return b.code;
  }
  const auto a = reply.find('{');
  const auto z = reply.rfind('}');
  if (a == std::string_view::npos || z == std::string_view::npos || z < a) return {};
  std::string cand(reply.substr(a, z - a + 1));
  auto j = nlohmann::json::parse(cand, nullptr, false);
  return (!j.is_discarded() && j.is_object()) ? cand : std::string();
}

}  // namespace kevo::operators::llm
