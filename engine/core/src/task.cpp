#include "kevo/core/task.hpp"

#include "task_shapes.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/strict_json.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace kevo {

namespace fs = std::filesystem;

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

std::string_view to_string(Role r) {
  switch (r) {
    case Role::in: return "in";
    case Role::out: return "out";
    case Role::inout: return "inout";
    case Role::scalar: return "scalar";
  }
  return "?";
}

std::string_view c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    // CUDA's type (<cuda_bf16.h>, which the entry adapter includes): bf16
    // is accepted for CUDA tasks only (load_task).
    case DType::bf16: return "__nv_bfloat16";
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::bf16: return 2;
  }
  return 0;
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16; }

std::uint16_t bf16_from_double(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0 : 0x7FC0;
  // To float rounding towards zero, with the inexact part kept as a sticky
  // low bit (round to odd): float has 16 more bits than bf16, so the one
  // rounding to bf16 below is then the correctly rounded one, ties included.
  float f = static_cast<float>(v);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if (static_cast<double>(f) != v) u |= 1u;
  u += 0x7FFFu + ((u >> 16) & 1u);   // round to nearest, ties to even; carries into the exponent (to inf)
  return static_cast<std::uint16_t>(u >> 16);
}

double bf16_to_double(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

Env Shape::env() const {
  std::map<std::string, Value> vars;
  for (const auto& [name, size] : dims) vars[name] = Value::integer(size);
  return env_from_map(vars);
}

bool contains_signature(std::string_view source, std::string_view signature) {
  auto squeeze = [](std::string_view s) {
    std::string out;
    for (char c : s)
      if (!std::isspace(static_cast<unsigned char>(c))) out += c;
    return out;
  };
  const std::string sig = squeeze(signature);
  return !sig.empty() && squeeze(source).find(sig) != std::string::npos;
}

std::string Task::c_signature() const {
  if (!signature.empty()) return signature;
  if (is_torch()) return "class ModelNew(nn.Module) with Model's __init__(*get_init_inputs()) and forward(*get_inputs())";
  std::string out = "extern \"C\" void " + function + "(";
  for (std::size_t k = 0; k < args.size(); ++k) {
    const Arg& a = args[k];
    if (k) out += ", ";
    if (a.role == Role::in) out += "const ";
    out += std::string(c_type(a.dtype));
    if (a.is_buffer()) out += "*";
    out += " " + a.name;
  }
  return out + ")";
}

std::vector<std::int64_t> Task::extents(const Arg& arg, const Shape& shape) const {
  std::vector<std::int64_t> out;
  const Env env = shape.env();
  for (const Expr& e : arg.shape) {
    try {
      out.push_back(e.eval(env).as_int());
    } catch (const std::invalid_argument& err) {
      throw Failure("task '" + name + "': extent '" + e.text() + "' of argument '" + arg.name +
                    "' at " + shape.label + ": " + err.what());
    }
  }
  return out;
}

std::int64_t Task::elements(const Arg& arg, const Shape& shape) const {
  std::int64_t n = 1;
  for (std::int64_t e : extents(arg, shape)) {
    if (e < 0 || (e > 0 && n > std::numeric_limits<std::int64_t>::max() / e))
      throw Failure("task '" + name + "': argument '" + arg.name + "' at " + shape.label +
                    " has a negative or overflowing element count");
    n *= e;
  }
  return n;
}

Value Task::scalar_value(const Arg& arg, const Shape& shape) const {
  try {
    const Value v = arg.value.eval(shape.env());
    if (is_floating(arg.dtype)) return Value::real(v.as_double());
    return Value::integer(v.as_int());
  } catch (const std::invalid_argument& err) {
    throw Failure("task '" + name + "': value '" + arg.value.text() + "' of argument '" + arg.name +
                  "' at " + shape.label + ": " + err.what());
  }
}

bool Task::allows_library(std::string_view library) const {
  return std::find(libraries.begin(), libraries.end(), library) != libraries.end();
}

void write_public_copy(const Task& task, const fs::path& dir) {
  if (task.is_torch()) throw std::logic_error("write_public_copy: a torch task");
  nlohmann::json m = task.manifest;
  if (auto sh = m.find("shapes"); sh != m.end() && sh->is_object()) {
    sh->erase("hidden");
    sh->erase("draw");
  }
  m.erase("baselines");
  fs::create_directories(dir);
  const auto source = [&](const char* key, const fs::path& from, const std::string& text) {
    const std::string name = std::string(key) + from.extension().string();
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw Failure("cannot write " + (dir / name).string());
    m[key] = name;
  };
  source("reference", task.reference_path, task.reference_source);
  source("seed", task.seed_path, task.seed_source);
  std::ofstream out(dir / "task.json", std::ios::trunc);
  out << m.dump(2) << "\n";
  if (!out) throw Failure("cannot write " + (dir / "task.json").string());
}

Task with_stress(const Task& task, const StressTrial& stress) {
  Task out = task;
  for (const auto& [arg, dist] : stress.inputs) out.args.at(arg).dist = dist;
  return out;
}

const std::vector<LibraryInfo>& known_libraries() {
  static const std::vector<LibraryInfo> libraries = {
      // The language runtime of every backend (host code, for CUDA).
      {"libc", "", true, false, {}, {}, "the C library"},
      {"libm", "", true, false, {}, {}, "the C maths library"},
      {"libstdc++", "", true, false, {}, {}, "the C++ standard library"},
      {"openmp", "cpu", true, false, {"gomp"}, {"omp.h"}, "the OpenMP runtime (#pragma omp, omp_* calls)"},
      {"blas", "cpu", false, false, {"blas"}, {"cblas.h"}, "a CBLAS (cblas_sgemm ...)"},
      {"cudart", "cuda", true, false, {"cudart"}, {"cuda_runtime.h", "cuda_runtime_api.h"},
       "the CUDA runtime (launches, cudaMalloc, streams, events)"},
      {"cublas", "cuda", false, false, {"cublas"}, {"cublas_v2.h", "cublas_api.h", "cublas.h"}, "cuBLAS"},
      {"cublasLt", "cuda", false, false, {"cublasLt"}, {"cublasLt.h"}, "cuBLASLt (matmuls with fused epilogues)"},
      {"cub", "cuda", false, true, {}, {"cub/"}, "CUB device-wide and block-wide primitives (header-only)"},
      {"thrust", "cuda", false, true, {}, {"thrust/"}, "Thrust algorithms (header-only)"},
      {"curand", "cuda", false, false, {"curand"}, {"curand.h", "curand_kernel.h"}, "cuRAND"},
      {"cufft", "cuda", false, false, {"cufft"}, {"cufft.h", "cufftXt.h"}, "cuFFT"},
      {"cusparse", "cuda", false, false, {"cusparse"}, {"cusparse.h", "cusparse_v2.h"}, "cuSPARSE"},
      {"cusolver", "cuda", false, false, {"cusolver"}, {"cusolverDn.h", "cusolverSp.h", "cusolver_common.h"},
       "cuSOLVER"},
      {"cudnn", "cuda", false, false, {"cudnn"}, {"cudnn.h"}, "cuDNN"},
  };
  return libraries;
}

std::vector<std::string> runtime_libraries(std::string_view backend) {
  std::vector<std::string> out;
  for (const LibraryInfo& l : known_libraries())
    if (l.runtime && (l.backend.empty() || l.backend == backend)) out.push_back(l.name);
  return out;
}

namespace detail {

std::string shape_label(const Task& task, const std::map<std::string, std::int64_t>& dims) {
  std::string label;
  for (const auto& dim : task.dims) {
    if (!label.empty()) label += ",";
    label += dim + "=" + std::to_string(dims.at(dim));
  }
  // A torch task may have no size globals: its one shape still needs a name.
  return label.empty() ? std::string("default") : label;
}

std::optional<ShapeProblem> shape_problem(const Task& task, const Shape& shape) {
  const Env env = shape.env();
  for (std::size_t i = 0; i < task.args.size(); ++i) {
    const Arg& arg = task.args[i];
    const std::string ap = "/args/" + std::to_string(i);
    if (!arg.is_buffer()) {
      try {
        const Value v = arg.value.eval(env);
        if (!v.is_number()) throw std::invalid_argument("got string \"" + v.s + "\"");
        if (!is_floating(arg.dtype)) {
          const std::int64_t x = v.as_int();
          if (arg.dtype == DType::i32 && (x < INT32_MIN || x > INT32_MAX))
            throw std::invalid_argument(std::to_string(x) + " does not fit int32");
        }
      } catch (const std::invalid_argument& e) {
        return ShapeProblem{ShapeProblem::Kind::value, ap + "/value", "a value of type " + std::string(to_string(arg.dtype)), e.what()};
      }
      continue;
    }
    const auto limit = std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(dtype_size(arg.dtype));
    std::int64_t count = 1;
    for (std::size_t k = 0; k < arg.shape.size(); ++k) {
      const std::string kp = ap + "/shape/" + std::to_string(k);
      std::int64_t n = 0;
      try {
        n = arg.shape[k].eval(env).as_int();
      } catch (const std::invalid_argument& e) {
        return ShapeProblem{ShapeProblem::Kind::extent, kp, "an integer extent", e.what()};
      }
      if (n < 1) return ShapeProblem{ShapeProblem::Kind::extent, kp, "a positive extent", "'" + arg.shape[k].text() + "' is " + std::to_string(n)};
      if (count > limit / n) return ShapeProblem{ShapeProblem::Kind::size, ap + "/shape", "a buffer size that fits 64 bits", ""};
      count *= n;
    }
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

bool is_c_identifier(const std::string& s) {
  static const std::set<std::string> keywords = {
      "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr", "continue",
      "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false", "float",
      "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new", "nullptr",
      "operator", "private", "protected", "public", "register", "restrict", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
      "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while",
      "main", "int32_t", "int64_t", "size_t"};
  if (s.empty() || keywords.count(s)) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_python_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_python_keyword(const std::string& s) {
  static const std::set<std::string> keywords = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
      "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
      "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};
  return keywords.count(s) != 0;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

std::string shown(const nlohmann::json& j) {
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string idx(std::size_t i) { return std::to_string(i); }

// The library baselines a manifest may name (docs/tasks.md#baselines).
constexpr const char* kBaselineKinds[] = {"torch"};

// `word` occurs in `text` as a whole identifier.
bool mentions_word(const std::string& text, const std::string& word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if ((at == 0 || !ident(text[at - 1])) && (end >= text.size() || !ident(text[end]))) return true;
  }
  return false;
}

std::string arg_names(const Task& t) {
  std::vector<std::string> names;
  for (const Arg& a : t.args) names.push_back(a.name);
  return join(names);
}

std::optional<std::size_t> arg_index(const Task& t, const std::string& name) {
  for (std::size_t i = 0; i < t.args.size(); ++i)
    if (t.args[i].name == name) return i;
  return std::nullopt;
}

bool is_dim(const Task& t, const std::string& name) {
  return std::find(t.dims.begin(), t.dims.end(), name) != t.dims.end();
}

std::string dims_text(const Task& t) { return t.dims.empty() ? std::string("(none)") : join(t.dims); }

std::string free_dims_text(const DrawSpace& d) {
  std::vector<std::string> names;
  for (const auto& r : d.free) names.push_back(r.dim);
  return join(names);
}

// Drawn sizes stay within int32 (the scalars of most tasks).
constexpr std::int64_t kMaxDrawnSize = 2147483647;
// "max_bytes" of a draw space when the manifest gives none: 16 MiB.
constexpr std::int64_t kDefaultDrawBytes = std::int64_t{16} << 20;

// Reads an expression given as a string ("M*2") or a number (512).
Expr read_expr(const nlohmann::json& j, const std::string& file, const std::string& pointer,
               const std::string& what) {
  std::string text;
  if (j.is_string()) text = j.get<std::string>();
  else if (j.is_number()) text = j.dump();
  else throw InputError(file, pointer, what + " (a string or a number), got " + shown(j));
  try {
    return Expr::parse(text);
  } catch (const std::invalid_argument& e) {
    throw InputError(file, pointer, what + "; '" + text + "': " + e.what());
  }
}

Distribution read_distribution(StrictObject d, DType dtype) {
  Distribution out;
  const std::string kind = d.choice("kind", {"uniform", "normal", "constant", "integers"}, "uniform");
  const bool integral = !is_floating(dtype);
  // The largest magnitude every value of the type can hold exactly.
  const double exact = dtype == DType::f32    ? 16777216.0
                       : dtype == DType::bf16 ? 256.0
                       : dtype == DType::i32  ? 2147483647.0
                                              : 9007199254740992.0;
  if (integral && (kind == "uniform" || kind == "normal"))
    d.fail("kind", "\"integers\" or \"constant\" for an " + std::string(to_string(dtype)) +
                       " argument, got \"" + kind + "\"");
  if (kind == "uniform") {
    out.kind = Distribution::Kind::uniform;
    out.a = d.number("low", -1.0);
    out.b = d.number("high", 1.0);
    if (!(out.a <= out.b)) d.fail("high", "a number >= low (" + Value::real(out.a).to_string() + ")");
  } else if (kind == "normal") {
    out.kind = Distribution::Kind::normal;
    out.a = d.number("mean", 0.0);
    out.b = d.number("stddev", 1.0, 0.0);
  } else if (kind == "constant") {
    out.kind = Distribution::Kind::constant;
    out.a = d.number("value");
    out.b = 0.0;
    if (integral && (out.a != std::floor(out.a) || std::fabs(out.a) > exact))
      d.fail("value", "an integer that fits " + std::string(to_string(dtype)));
  } else {
    out.kind = Distribution::Kind::integers;
    const auto lim = static_cast<std::int64_t>(exact);
    const std::int64_t lo = d.integer("low", std::nullopt, -lim, lim);
    const std::int64_t hi = d.integer("high", std::nullopt, lo, lim);
    out.a = static_cast<double>(lo);
    out.b = static_cast<double>(hi);
  }
  d.finish();
  return out;
}

std::string read_source_file(StrictObject& root, const std::string& key, const fs::path& dir,
                             const std::string& function, fs::path& path_out) {
  const std::string rel = root.string(key);
  if (rel.empty()) root.fail(key, "a source file name");
  const fs::path p = (dir / rel).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    root.fail(key, "a source file relative to the task directory (" + p.string() + " is not a file)");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (!in || in.bad()) root.fail(key, "a readable source file (cannot read " + p.string() + ")");
  std::string text = buf.str();
  // A cheap sanity check that catches the wrong file; compiling is the real one.
  const bool mentions = mentions_word(text, function);
  if (!mentions)
    root.fail(key, "a source defining extern \"C\" void " + function + "(...) (" + p.filename().string() +
                       " never mentions '" + function + "')");
  path_out = p;
  return text;
}

// `#define NAME VALUE` lines of a params block, in order.
std::vector<std::pair<std::string, std::string>> block_defines(const std::string& block) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(block);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string hash, name;
    if (!(words >> hash)) continue;
    if (hash == "#") words >> hash, hash = "#" + hash;   // "# define"
    if (hash != "#define" || !(words >> name)) continue;
    std::string value;
    std::getline(words, value);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    out.emplace_back(name, value);
  }
  return out;
}

// The point a seed's params block spells, or a reason why there is none.
std::optional<Point> point_from_block(const SearchSpace& space, const std::string& block, std::string& why) {
  const bool python = space.syntax() == SourceSyntax::python;
  const auto defines = python ? block_assignment(block, SourceSyntax::python) : block_defines(block);
  std::vector<std::pair<std::string, std::string>> assignment;
  for (const Param& p : space.params()) {
    const auto it = std::find_if(defines.begin(), defines.end(), [&](const auto& d) { return d.first == p.name; });
    if (it == defines.end()) {
      why = (python ? "no assignment to parameter " : "no #define for parameter ") + p.name;
      return std::nullopt;
    }
    assignment.emplace_back(p.name, it->second);
  }
  auto point = space.find(assignment);
  if (!point) {
    for (const auto& [name, text] : assignment) {
      const Param& p = *std::find_if(space.params().begin(), space.params().end(),
                                     [&](const Param& q) { return q.name == name; });
      std::vector<std::string> values;
      for (const Value& v : p.values) values.push_back(v.kind == Value::Kind::string ? "\"" + v.s + "\"" : v.to_string());
      bool known = false;
      for (const Value& v : p.values) {
        SearchSpace one({Param{p.name, {v}}}, {});
        if (one.find({{name, text}})) known = true;
      }
      if (!known) {
        why = (python ? name + " = " : "#define " + name + " ") + text + " is not one of: " + join(values);
        break;
      }
    }
    if (why.empty()) why = "the block does not match the parameter list";
  }
  return point;
}

// ---------------------------------------------------------------- load steps
// load_task() runs these in manifest order; each reads one key (or a group)
// from `root` into `t` and throws InputError at the key's pointer.

// Unknown top-level keys first: a typo ("refrence") reads better as itself
// than as the missing key it was meant to be.
void check_top_level_keys(StrictObject& root) {
  for (const char* k : {"name", "description", "backend", "function", "args", "shapes", "tolerance", "reference",
                        "seed", "search_space", "flops", "bytes", "baselines", "stress", "libraries", "signature", "torch"})
    root.allow(k);
  root.finish();
}

void read_identity(StrictObject& root, Task& t) {
  t.name = root.string("name");
  if (t.name.empty() || !std::all_of(t.name.begin(), t.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      }))
    root.fail("name", "a non-empty name of letters, digits, '_' and '-', got \"" + t.name + "\"");
  t.description = root.string("description", "");
  t.backend = root.string("backend", "cpu");
  if (t.backend.empty() || !std::all_of(t.backend.begin(), t.backend.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      }))
    root.fail("backend", "a backend name such as \"cpu\", got \"" + t.backend + "\"");
  if (t.backend == "torch") {
    // A PyTorch program: the candidate's entry is its class.
    for (const char* k : {"function", "args", "signature", "baselines", "stress", "libraries"})
      if (root.has(k))
        root.fail(k, std::string("no \"") + k + "\" key in a torch task (docs/torch.md#tasks: the reference's Model, "
                     "get_inputs() and get_init_inputs() say what a C task's function and args say)");
    t.function = "ModelNew";
    return;
  }
  if (root.has("torch"))
    root.fail("torch", "no \"torch\" section: only \"backend\": \"torch\" tasks have one (this task's backend is \"" +
                           t.backend + "\")");
  t.function = root.string("function");
  if (!is_c_identifier(t.function))
    root.fail("function", "a C identifier (not a keyword), got \"" + t.function + "\"");
  // A command task's sources are in the evaluator's language: the manifest
  // spells the declaration they must contain (docs/command-backend.md#tasks).
  if (t.backend == "command") {
    t.signature = root.string("signature");
    if (t.signature.find(t.function) == std::string::npos || t.signature.find('(') == std::string::npos)
      root.fail("signature", "the declaration every source must contain, naming the function '" + t.function +
                                 "' and its parameters, got \"" + t.signature + "\"");
  } else if (root.has("signature")) {
    root.fail("signature", "no \"signature\" key: only \"command\" tasks have one (a \"" + t.backend +
                               "\" task's sources define extern \"C\" void " + t.function + "(...) from its args)");
  }
}

// "dtype" and "role" of an argument.
void read_type_and_role(StrictObject& a, const Task& t, Arg& arg) {
  const std::string dtype = a.choice("dtype", {"float32", "float64", "int32", "int64", "bfloat16"});
  arg.dtype = dtype == "float32" ? DType::f32 : dtype == "float64" ? DType::f64 : dtype == "int32" ? DType::i32
            : dtype == "int64" ? DType::i64 : DType::bf16;
  const std::string role = a.choice("role", {"in", "out", "inout", "scalar"});
  arg.role = role == "in" ? Role::in : role == "out" ? Role::out : role == "inout" ? Role::inout : Role::scalar;
  if (arg.dtype != DType::bf16) return;
  // Host compilers (g++ 12) have no bfloat16 arithmetic type, and a scalar
  // would need one in the entry adapter: bf16 is a CUDA buffer type.
  if (t.backend != "cuda")
    a.fail("dtype", "float32, float64, int32 or int64 for the \"" + t.backend +
                        "\" backend (bfloat16 is supported by the \"cuda\" backend only)");
  if (arg.role == Role::scalar)
    a.fail("dtype", "float32, float64, int32 or int64 for a scalar (bfloat16 is for buffers only)");
}

// Argument i; its dimension names join t.dims in order of first use.
Arg read_arg(const nlohmann::json& j, std::size_t i, Task& t) {
  const std::string file = t.manifest_path.string();
  const std::string ap = "/args/" + idx(i);
  StrictObject a(j, file, ap);
  Arg arg;
  arg.name = a.string("name");
  if (!is_c_identifier(arg.name)) a.fail("name", "a C identifier (not a keyword), got \"" + arg.name + "\"");
  if (arg.name == t.function) a.fail("name", "a name other than the function's, got \"" + arg.name + "\"");
  if (const auto k = arg_index(t, arg.name))
    a.fail("name", "a unique argument name (\"" + arg.name + "\" is /args/" + idx(*k) + "/name too)");
  read_type_and_role(a, t, arg);
  auto use_dims = [&](const Expr& e) {
    for (const auto& n : e.names())
      if (std::find(t.dims.begin(), t.dims.end(), n) == t.dims.end()) t.dims.push_back(n);
  };
  if (arg.is_buffer()) {
    const nlohmann::json& shape = a.at("shape");
    if (!shape.is_array() || shape.empty())
      a.fail("shape", "a non-empty array of extent expressions such as [\"M\", \"K\"], got " + shown(shape));
    for (std::size_t k = 0; k < shape.size(); ++k) {
      arg.shape.push_back(read_expr(shape[k], file, ap + "/shape/" + idx(k), "an extent expression over dimension names"));
      use_dims(arg.shape.back());
    }
  } else {
    arg.value = read_expr(a.at("value"), file, ap + "/value", "a value expression over dimension names");
    use_dims(arg.value);
  }
  if (arg.is_input()) {
    if (auto d = a.optional_object("distribution")) {
      arg.dist = read_distribution(*d, arg.dtype);
    } else if (!is_floating(arg.dtype)) {
      arg.dist = Distribution{Distribution::Kind::integers, -100.0, 100.0};
    }
  }
  a.finish();
  return arg;
}

void read_args(StrictObject& root, Task& t) {
  const nlohmann::json& args = root.at("args");
  if (!args.is_array() || args.empty()) root.fail("args", "a non-empty array of arguments, got " + shown(args));
  for (std::size_t i = 0; i < args.size(); ++i) t.args.push_back(read_arg(args[i], i, t));
  if (std::none_of(t.args.begin(), t.args.end(), [](const Arg& a) { return a.is_output(); }))
    root.fail("args", "at least one argument with role \"out\" or \"inout\"");
}

// A shape object at `sp`, checked against the arguments.
Shape read_shape(const nlohmann::json& j, const std::string& sp, const Task& t) {
  const std::string file = t.manifest_path.string();
  StrictObject s(j, file, sp);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(t.dims.begin(), t.dims.end(), it.key()) == t.dims.end())
      throw InputError(file, sp + "/" + it.key(),
                       "unknown key; expected one of the dimensions the arguments use: " + dims_text(t));
  Shape shape;
  for (const auto& dim : t.dims) shape.dims[dim] = s.integer(dim, std::nullopt, 0);
  s.finish();
  shape.label = detail::shape_label(t, shape.dims);
  if (const auto p = detail::shape_problem(t, shape))
    throw InputError(file, p->pointer,
                     p->expected + " (at " + sp + " " + shape.label + (p->detail.empty() ? "" : ": " + p->detail) + ")");
  return shape;
}

void read_shape_list(StrictObject& shapes, const std::string& key, bool required, const Task& t,
                     std::vector<Shape>& out) {
  const nlohmann::json* list = shapes.find(key);
  if (!list) {
    if (required) shapes.fail(key, "a non-empty array of shapes such as [{\"M\": 512}] (the key is required)");
    return;
  }
  if (!list->is_array() || (required && list->empty()))
    shapes.fail(key, std::string(required ? "a non-empty" : "an") + " array of shapes, got " + shown(*list));
  for (std::size_t j = 0; j < list->size(); ++j) out.push_back(read_shape((*list)[j], shapes.pointer(key) + "/" + idx(j), t));
}

// "dims" of a draw space: a range object or a tie expression per dimension.
void read_draw_dims(const nlohmann::json& j, const std::string& pointer, Task& t) {
  const std::string file = t.manifest_path.string();
  StrictObject dims(j, file, pointer);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(t.dims.begin(), t.dims.end(), it.key()) == t.dims.end())
      throw InputError(file, dims.pointer(it.key()),
                       "unknown key; expected one of the dimensions the arguments use: " + dims_text(t));
  std::vector<std::pair<std::string, const nlohmann::json*>> ties;
  for (const auto& dim : t.dims) {
    const nlohmann::json* v = dims.find(dim);
    if (!v)
      dims.fail(dim, "a range {\"min\", \"max\"} or an expression over the ranged dimensions, for every "
                     "dimension (the key is required)");
    if (!v->is_object()) {
      ties.emplace_back(dim, v);
      continue;
    }
    StrictObject r(*v, file, dims.pointer(dim));
    DrawSpace::Range range;
    range.dim = dim;
    range.min = r.integer("min", std::nullopt, 0, kMaxDrawnSize);
    range.max = r.integer("max", std::nullopt, range.min, kMaxDrawnSize);
    r.finish();
    t.draw.free.push_back(range);
  }
  if (t.draw.free.empty())
    dims.fail(t.dims.front(), "a range {\"min\", \"max\"} for at least one dimension (every one is tied)");
  for (const auto& [dim, v] : ties) {
    DrawSpace::Tie tie{dim, read_expr(*v, file, dims.pointer(dim), "a range {\"min\", \"max\"} or an expression")};
    for (const auto& n : tie.value.names()) {
      const bool ranged = std::any_of(t.draw.free.begin(), t.draw.free.end(),
                                      [&](const DrawSpace::Range& r) { return r.dim == n; });
      if (!ranged)
        dims.fail(dim, "an expression over the dimensions drawn from ranges: " + free_dims_text(t.draw) + " ('" + n +
                           "' is " + (n == dim ? "itself" : is_dim(t, n) ? "tied too; ties do not chain" : "not a dimension") +
                           ")");
    }
    t.draw.tied.push_back(std::move(tie));
  }
  dims.finish();
}

void read_draw_space(StrictObject& shapes, Task& t) {
  auto d = shapes.optional_object("draw");
  if (!d) return;
  if (t.dims.empty()) d->fail("dims", "no \"draw\": the arguments use no dimension to draw");
  t.draw.count = static_cast<std::size_t>(d->integer("count", 4, 4, 32));
  d->object("dims");   // an object, required
  read_draw_dims(d->at("dims"), d->pointer("dims"), t);
  t.draw.max_elements = d->integer("max_elements", 0, 0);
  t.draw.max_bytes = d->integer("max_bytes", kDefaultDrawBytes, 1);
  d->finish();
  detail::check_draw_space(t, t.manifest_path.string(), d->pointer());
}

void read_shapes(StrictObject& root, Task& t) {
  StrictObject shapes = root.object("shapes");
  read_shape_list(shapes, "visible", true, t, t.visible);
  read_shape_list(shapes, "hidden", false, t, t.hidden);
  read_draw_space(shapes, t);
  shapes.finish();
}

void read_tolerance(StrictObject& root, Task& t) {
  auto tol = root.optional_object("tolerance");
  if (!tol) return;
  t.tolerance.atol = tol->number("atol", t.tolerance.atol, 0.0);
  t.tolerance.rtol = tol->number("rtol", t.tolerance.rtol, 0.0);
  t.tolerance.rel_l2 = tol->number("rel_l2", t.tolerance.rel_l2, 0.0);
  tol->finish();
}

Param read_param(const nlohmann::json& j, const std::string& pp, const std::vector<Param>& earlier, const Task& t) {
  const std::string file = t.manifest_path.string();
  const std::string base = pp.substr(0, pp.rfind('/'));
  StrictObject p(j, file, pp);
  Param param;
  param.name = p.string("name");
  if (t.is_torch()) {
    // A module-level constant of the candidate: the names the module's own
    // definitions and imports bind would rebind it after the block.
    static const std::set<std::string> taken = {"Model", "ModelNew", "get_inputs", "get_init_inputs", "torch",
                                                "nn", "F", "triton", "tl", "math"};
    if (!is_python_identifier(param.name) || is_python_keyword(param.name) || param.name.size() > 64)
      p.fail("name", "a Python identifier, not a keyword (it becomes a module-level constant), got \"" +
                         param.name + "\"");
    const auto& sizes = t.torch->sizes;
    if (taken.count(param.name) || std::find(sizes.begin(), sizes.end(), param.name) != sizes.end())
      p.fail("name", "a name that the candidate's module does not bind otherwise (not a size, ModelNew, Model, "
                     "get_inputs, get_init_inputs, torch, nn, F, triton, tl or math), got \"" + param.name + "\"");
  } else if (!is_c_identifier(param.name)) {
    p.fail("name", "a C identifier (it becomes a macro), got \"" + param.name + "\"");
  }
  for (std::size_t k = 0; k < earlier.size(); ++k)
    if (earlier[k].name == param.name)
      p.fail("name", "a unique parameter name (\"" + param.name + "\" is " + base + "/" + idx(k) + "/name too)");
  if (arg_index(t, param.name) || param.name == t.function)
    p.fail("name", "a name that is not an argument or the function (the macro would rename it), got \"" +
                       param.name + "\"");
  const nlohmann::json& values = p.at("values");
  if (!values.is_array() || values.empty()) p.fail("values", "a non-empty array of numbers or strings, got " + shown(values));
  for (std::size_t k = 0; k < values.size(); ++k) {
    const nlohmann::json& v = values[k];
    const std::string vp = pp + "/values/" + idx(k);
    Value value;
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw InputError(file, vp, "an integer that fits 64 bits, got " + shown(v));
    if (v.is_number_integer()) value = Value::integer(v.get<std::int64_t>());
    else if (v.is_number_float()) value = Value::real(v.get<double>());
    else if (v.is_string()) {
      value = Value::string(v.get<std::string>());
      // NAME_value must be a valid macro name.
      if (value.s.empty() || !std::all_of(value.s.begin(), value.s.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
          }))
        throw InputError(file, vp, "a non-empty string of letters, digits and '_' (" +
                                       (t.is_torch() ? std::string("a Python string literal in the params block")
                                                     : "it becomes the macro " + param.name + "_<value>") +
                                       "), got " + shown(v));
    } else {
      throw InputError(file, vp, "a number or a string, got " + shown(v));
    }
    if (!param.values.empty() && (param.values.front().kind == Value::Kind::string) != (value.kind == Value::Kind::string))
      throw InputError(file, vp, "values of one kind (all numbers or all strings), got " + shown(v));
    for (std::size_t q = 0; q < param.values.size(); ++q)
      if (param.values[q] == value) throw InputError(file, vp, "unique values (" + shown(v) + " equals values/" + idx(q) + ")");
    param.values.push_back(std::move(value));
  }
  p.finish();
  return param;
}

std::vector<Expr> read_restrictions(StrictObject& ss, const std::vector<Param>& params) {
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  const std::vector<std::string> texts = ss.strings("restrictions", std::vector<std::string>{});
  std::vector<Expr> out;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const std::string rp = ss.pointer("restrictions") + "/" + idx(r);
    out.push_back(read_expr(nlohmann::json(texts[r]), ss.file(), rp, "a restriction expression"));
    for (const auto& n : out.back().names())
      if (std::find(names.begin(), names.end(), n) == names.end())
        throw InputError(ss.file(), rp, "an expression over the parameters " + join(names) + " (unknown name '" + n + "')");
  }
  return out;
}

// "seed_point": every parameter set to one of its values; agrees with the
// seed's params block when the seed has one.
Point read_seed_point_object(StrictObject& sp, const Task& t, const SplitSource& seed_split) {
  Point point(t.space.params().size());
  for (std::size_t k = 0; k < t.space.params().size(); ++k) {
    const Param& p = t.space.params()[k];
    std::vector<std::string> values;
    for (const Value& v : p.values) values.push_back(v.kind == Value::Kind::string ? "\"" + v.s + "\"" : v.to_string());
    const nlohmann::json* v = sp.find(p.name);
    if (!v) sp.fail(p.name, "a value for parameter " + p.name + ", one of: " + join(values) + " (the key is required)");
    std::optional<std::size_t> found;
    for (std::size_t q = 0; q < p.values.size() && !found; ++q) {
      const Value& pv = p.values[q];
      if (pv.kind == Value::Kind::string ? (v->is_string() && v->get<std::string>() == pv.s)
                                         : (v->is_number() && v->get<double>() == pv.as_double()))
        found = q;
    }
    if (!found) sp.fail(p.name, "one of: " + join(values) + ", got " + shown(*v));
    point[k] = static_cast<std::uint32_t>(*found);
  }
  sp.finish();
  if (!seed_split.block.empty()) {
    std::string why;
    const auto block_point = point_from_block(t.space, seed_split.block, why);
    if (!block_point || *block_point != point)
      throw InputError(sp.file(), sp.pointer(),
                       "the point of the params block in " + t.seed_path.filename().string() + " (" +
                           (block_point ? t.space.key(*block_point) : why) + "), got " + t.space.key(point));
  }
  return point;
}

Point read_seed_point(StrictObject& ss, const Task& t) {
  const SplitSource seed_split = split_params_block(t.seed_source, t.syntax());
  if (auto sp = ss.optional_object("seed_point")) return read_seed_point_object(*sp, t, seed_split);
  const std::string seed_file = t.seed_path.filename().string();
  if (seed_split.block.empty())
    ss.fail("seed_point", "a seed point, or a '" + std::string(params_begin_marker(t.syntax())) + "' ... '" +
                              std::string(params_end_marker(t.syntax())) + "' block in " + seed_file +
                              " (the seed has neither)");
  std::string why;
  const auto point = point_from_block(t.space, seed_split.block, why);
  if (!point)
    ss.fail("seed_point", "a seed point, or a params block in " + seed_file +
                              " that sets every parameter to one of its values (" + why + ")");
  return *point;
}

// The seed point must satisfy every restriction (which also proves the space
// has a valid point); evaluated one by one to name the culprit.
void check_seed_point(const StrictObject& ss, const Task& t) {
  const Env env = t.space.env(*t.seed_point);
  for (std::size_t r = 0; r < t.space.restrictions().size(); ++r) {
    const Expr& e = t.space.restrictions()[r];
    bool ok = false;
    try {
      ok = e.eval(env).truthy();
    } catch (const std::invalid_argument& err) {
      throw InputError(ss.file(), ss.pointer("restrictions") + "/" + idx(r),
                       "an expression that evaluates at the seed point " + t.space.key(*t.seed_point) + " (" +
                           err.what() + ")");
    }
    if (!ok)
      throw InputError(ss.file(), ss.pointer("seed_point"),
                       "a seed point that satisfies every restriction (" + t.space.key(*t.seed_point) +
                           " violates '" + e.text() + "')");
  }
}

void read_search_space(StrictObject& root, Task& t) {
  auto ss = root.optional_object("search_space");
  if (!ss) return;
  const nlohmann::json& params = ss->at("params");
  if (!params.is_array() || params.empty()) ss->fail("params", "a non-empty array of parameters, got " + shown(params));
  std::vector<Param> list;
  for (std::size_t i = 0; i < params.size(); ++i)
    list.push_back(read_param(params[i], ss->pointer("params") + "/" + idx(i), list, t));
  std::vector<Expr> restrictions = read_restrictions(*ss, list);
  t.space = SearchSpace(std::move(list), std::move(restrictions), t.syntax());
  t.seed_point = read_seed_point(*ss, t);
  check_seed_point(*ss, t);
  ss->finish();
}

// "flops" / "bytes": finite and >= 0 at every visible and hidden shape.
void read_count(StrictObject& root, const std::string& key, const Task& t, Expr& out) {
  const nlohmann::json* j = root.find(key);
  if (!j) return;
  out = read_expr(*j, root.file(), "/" + key, "an expression over the dimensions");
  for (const auto& n : out.names())
    if (std::find(t.dims.begin(), t.dims.end(), n) == t.dims.end())
      root.fail(key, "an expression over the dimensions " + dims_text(t) + " (unknown name '" + n + "')");
  for (const auto* list : {&t.visible, &t.hidden}) {
    for (const Shape& s : *list) {
      double v = 0;
      try {
        v = out.eval(s.env()).as_double();
      } catch (const std::invalid_argument& e) {
        root.fail(key, "a number at every shape (at " + s.label + ": " + e.what() + ")");
      }
      if (!(v >= 0.0) || !std::isfinite(v))
        root.fail(key, "a finite count >= 0 at every shape (at " + s.label + ": " + Value::real(v).to_string() + ")");
    }
  }
}

// Python source for a library that kevo runs itself, so only its shape is
// checked here (the script reports a wrong or failing one).
void read_script_baselines(StrictObject& bl, Task& t) {
  for (const char* kind : kBaselineKinds) {
    const nlohmann::json* j = bl.find(kind);
    if (!j) continue;
    if (!j->is_string()) bl.fail(kind, "a Python expression (a string) over the argument names, got " + shown(*j));
    const std::string expr = j->get<std::string>();
    const bool blank = expr.find_first_not_of(" \t") == std::string::npos;
    if (blank || expr.size() > 2000 || expr.find_first_of("\n\r") != std::string::npos ||
        expr.find('\0') != std::string::npos)
      bl.fail(kind, "a one-line, non-empty Python expression of at most 2000 characters");
    bool uses_arg = false;
    for (const Arg& a : t.args) uses_arg = uses_arg || mentions_word(expr, a.name);
    if (!uses_arg) bl.fail(kind, "an expression that uses at least one argument name (" + arg_names(t) + ")");
    t.baselines[kind] = expr;
  }
}

// A library name for -l<name>: nothing here may read as another compiler option.
bool is_link_name(const std::string& l) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !l.empty() && l.size() <= 64 && alnum(l[0]) &&
         std::all_of(l.begin(), l.end(), [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '+' || c == '-'; });
}

// A source that ships with the task: judged by the backend like a
// candidate, so it is read (and its names checked) here.
Task::SourceBaseline read_source_baseline(const nlohmann::json& j, const std::string& bp, const Task& t) {
  StrictObject b(j, t.manifest_path.string(), bp);
  Task::SourceBaseline sb;
  sb.name = b.string("name");
  auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  const bool lower_ident = !sb.name.empty() && sb.name.size() <= 24 && lower(sb.name[0]) &&
                           std::all_of(sb.name.begin(), sb.name.end(), [&](char c) { return lower(c) || digit(c) || c == '_'; });
  // The name heads a report column and keys the results.
  if (!lower_ident)
    b.fail("name", "a lower-case identifier of at most 24 characters (a report column), got \"" + sb.name + "\"");
  for (const auto& other : t.source_baselines)
    if (other.name == sb.name) b.fail("name", "a name unique among the task's baselines; '" + sb.name + "' appears twice");
  sb.source = read_source_file(b, "source", t.dir, t.function, sb.path);
  sb.link = b.strings("link", std::vector<std::string>{});
  for (std::size_t k = 0; k < sb.link.size(); ++k)
    if (!is_link_name(sb.link[k]))
      b.fail("link", "library names such as \"cublas\" (linked as -l<name>; letters, digits, _ . + -), got \"" +
                         sb.link[k] + "\" at index " + idx(k));
  b.finish();
  return sb;
}

void read_baselines(StrictObject& root, Task& t) {
  auto bl = root.optional_object("baselines");
  if (!bl) return;
  read_script_baselines(*bl, t);
  if (const nlohmann::json* src = bl->find("sources")) {
    if (!src->is_array() || src->empty() || src->size() > 16)
      bl->fail("sources", "an array of 1 to 16 objects {\"name\", \"source\", \"link\"}, got " + shown(*src));
    for (std::size_t i = 0; i < src->size(); ++i)
      t.source_baselines.push_back(read_source_baseline((*src)[i], bl->pointer("sources") + "/" + idx(i), t));
  }
  bl->finish();
}

StressTrial read_stress_trial(const nlohmann::json& j, const std::string& sp, const std::vector<StressTrial>& earlier,
                              const Task& t) {
  const std::string file = t.manifest_path.string();
  StrictObject s(j, file, sp);
  StressTrial trial;
  trial.name = s.string("name");
  const bool ok = !trial.name.empty() && trial.name.size() <= 32 && std::islower(static_cast<unsigned char>(trial.name[0])) &&
                  std::all_of(trial.name.begin(), trial.name.end(), [](char c) {
                    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                           c == '-' || c == '_';
                  });
  // The name labels the trial in verdicts ("stress large-mean").
  if (!ok) s.fail("name", "a name of at most 32 lower-case letters, digits, '-' and '_', starting with a letter, got \"" +
                              trial.name + "\"");
  for (const auto& e : earlier)
    if (e.name == trial.name) s.fail("name", "a name unique among the stress trials; '" + trial.name + "' appears twice");
  StrictObject inputs = s.object("inputs");
  std::vector<std::string> input_names;
  for (const Arg& a : t.args)
    if (a.is_input()) input_names.push_back(a.name);
  for (auto it = j.at("inputs").begin(); it != j.at("inputs").end(); ++it) {
    const auto k = arg_index(t, it.key());
    if (!k || !t.args[*k].is_input())
      throw InputError(file, inputs.pointer(it.key()),
                       "unknown key; expected an input argument (role in or inout): " + join(input_names));
    auto d = inputs.optional_object(it.key());
    trial.inputs.emplace_back(*k, read_distribution(*d, t.args[*k].dtype));
  }
  if (trial.inputs.empty())
    s.fail("inputs", "a distribution for at least one input argument (" + join(input_names) + "), got {}");
  std::sort(trial.inputs.begin(), trial.inputs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  inputs.finish();
  s.finish();
  return trial;
}

void read_stress(StrictObject& root, Task& t) {
  const nlohmann::json* list = root.find("stress");
  if (!list) return;
  if (!list->is_array() || list->empty() || list->size() > 8)
    root.fail("stress", "an array of 1 to 8 objects {\"name\", \"inputs\"}, got " + shown(*list));
  for (std::size_t i = 0; i < list->size(); ++i)
    t.stress.push_back(read_stress_trial((*list)[i], "/stress/" + idx(i), t.stress, t));
}

std::string libraries_text(std::string_view backend) {
  std::vector<std::string> names;
  for (const LibraryInfo& l : known_libraries())
    if (!l.runtime && l.backend == backend) names.push_back(l.name);
  return names.empty() ? std::string("none for this backend") : join(names);
}

// "libraries": what candidates may use beyond the backend's runtime.
void read_libraries(StrictObject& root, Task& t) {
  t.libraries = runtime_libraries(t.backend);
  const std::vector<std::string> names = root.strings("libraries", std::vector<std::string>{});
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string& name = names[k];
    const std::string at = "/libraries/" + idx(k);
    const auto& known = known_libraries();
    const auto it = std::find_if(known.begin(), known.end(), [&](const LibraryInfo& l) { return l.name == name; });
    if (it == known.end())
      throw InputError(root.file(), at,
                       "a library kevo knows for the \"" + t.backend + "\" backend: " + libraries_text(t.backend) +
                           ", got \"" + name + "\"");
    if (!it->backend.empty() && it->backend != t.backend)
      throw InputError(root.file(), at,
                       "a library of the \"" + t.backend + "\" backend (" + libraries_text(t.backend) + "); \"" + name +
                           "\" is for \"" + it->backend + "\" tasks");
    if (it->runtime)
      throw InputError(root.file(), at,
                       "a library beyond the runtime (\"" + name + "\" is part of every " + t.backend +
                           " task's runtime: leave it out)");
    if (std::find(t.libraries.begin(), t.libraries.end(), name) != t.libraries.end())
      throw InputError(root.file(), at, "each library once (\"" + name + "\" is listed twice)");
    t.libraries.push_back(name);
  }
}

// "torch": {"sizes", "inputs", "allow", "forbid_reference_ops", "languages",
// "level", "degenerate"} (docs/torch.md#tasks).
void read_torch(StrictObject& root, Task& t) {
  StrictObject o = root.object("torch");
  TorchTaskInfo info;
  info.sizes = o.strings("sizes", std::vector<std::string>{});
  for (std::size_t k = 0; k < info.sizes.size(); ++k) {
    const std::string& n = info.sizes[k];
    if (!is_python_identifier(n) || n.size() > 64)
      o.fail("sizes", "names of the reference module's size globals (Python identifiers), got \"" + n + "\" at index " + idx(k));
    for (std::size_t q = 0; q < k; ++q)
      if (info.sizes[q] == n) o.fail("sizes", "each size once (\"" + n + "\" is listed twice)");
  }
  if (auto in = o.optional_object("inputs")) {
    const nlohmann::json* s = in->find("signed");
    if (s && s->is_boolean()) {
      info.signed_all = s->get<bool>();
    } else if (s && s->is_array()) {
      info.signed_all = false;
      for (std::size_t k = 0; k < s->size(); ++k) {
        const auto& v = (*s)[k];
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 255)
          in->fail("signed", "true, false, or a list of input positions (integers 0..255), got " + shown(*s));
        info.signed_inputs.push_back(static_cast<int>(v.get<std::int64_t>()));
      }
    } else if (s) {
      in->fail("signed", "true, false, or a list of input positions (get_inputs() order), got " + shown(*s));
    }
    in->finish();
  }
  info.allow = o.strings("allow", std::vector<std::string>{});
  for (std::size_t k = 0; k < info.allow.size(); ++k)
    if (info.allow[k].rfind("aten::", 0) != 0 || info.allow[k].size() < 7)
      o.fail("allow", "ATen operation names such as \"aten::mm\", got \"" + info.allow[k] + "\" at index " + idx(k));
  info.forbid_reference_ops = o.boolean("forbid_reference_ops", true);
  info.languages = o.strings("languages", std::vector<std::string>{"cuda", "triton"});
  if (info.languages.empty()) o.fail("languages", "a non-empty list of \"cuda\" and \"triton\"");
  for (std::size_t k = 0; k < info.languages.size(); ++k)
    if (info.languages[k] != "cuda" && info.languages[k] != "triton" && info.languages[k] != "cpp")
      o.fail("languages", "\"cuda\" (load_inline), \"triton\" or \"cpp\" (load_inline without CUDA), got \"" +
                              info.languages[k] + "\"");
  o.allow("stress");
  if (const nlohmann::json* st = o.find("stress")) {
    if (!st->is_array() || st->empty() || st->size() > 8)
      o.fail("stress", "an array of 1 to 8 objects {\"name\", \"scale\", \"shift\"}, got " + shown(*st));
    for (std::size_t i = 0; i < st->size(); ++i) {
      StrictObject e((*st)[i], root.file(), o.pointer("stress") + "/" + idx(i));
      TorchTaskInfo::Stress x;
      x.name = e.string("name");
      const bool ok = !x.name.empty() && x.name.size() <= 32 && std::islower(static_cast<unsigned char>(x.name[0])) &&
                      std::all_of(x.name.begin(), x.name.end(), [](char c) {
                        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                               c == '-' || c == '_';
                      });
      if (!ok) e.fail("name", "a name of at most 32 lower-case letters, digits, '-' and '_', starting with a letter");
      for (const auto& other : info.stress)
        if (other.name == x.name) e.fail("name", "a name unique among the stress trials; '" + x.name + "' appears twice");
      x.scale = e.number("scale", 1.0, -1e6, 1e6);
      x.shift = e.number("shift", 0.0, -1e6, 1e6);
      e.finish();
      info.stress.push_back(std::move(x));
    }
  }
  info.level = o.string("level", "");
  info.degenerate = o.boolean("degenerate", false);
  o.finish();
  t.dims = info.sizes;
  t.torch = std::move(info);
}

// A torch task's Python source: read, and checked for the names it must
// define (running it is the backend's job, in its own processes).
std::string read_python_file(StrictObject& root, const std::string& key, const fs::path& dir,
                             const std::vector<std::string>& needs, fs::path& path_out) {
  const std::string rel = root.string(key);
  if (rel.empty() || rel.size() < 4 || rel.substr(rel.size() - 3) != ".py")
    root.fail(key, "a Python file name (\"....py\") relative to the task directory, got \"" + rel + "\"");
  const fs::path p = (dir / rel).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    root.fail(key, "a Python file relative to the task directory (" + p.string() + " is not a file)");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (!in || in.bad()) root.fail(key, "a readable file (cannot read " + p.string() + ")");
  const std::string text = buf.str();
  for (const auto& n : needs) {
    const bool cls = n.rfind("class ", 0) == 0;
    const std::regex def("(^|\n)" + std::string(cls ? "class\\s+" : "def\\s+") + n.substr(n.find(' ') + 1) +
                         (cls ? "\\s*[(:]" : "\\s*\\("));
    if (!std::regex_search(text, def))
      root.fail(key, "a Python file that defines " + n + " at module level (" + p.filename().string() + " does not)");
  }
  path_out = p;
  return text;
}

}  // namespace

Task load_task(const fs::path& dir_in) {
  Task t;
  std::error_code ec;
  fs::path dir = fs::absolute(dir_in, ec);
  if (ec) dir = dir_in;
  t.dir = dir.lexically_normal();
  t.manifest_path = t.dir / "task.json";
  const std::string file = t.manifest_path.string();
  if (!fs::is_regular_file(t.manifest_path, ec))
    throw InputError(file, "", "a task manifest (the directory " + t.dir.string() + " has no task.json)");
  t.manifest = read_json_file(file);

  StrictObject root(t.manifest, file, "");
  check_top_level_keys(root);
  read_identity(root, t);
  if (t.backend == "torch") {
    read_torch(root, t);
    read_shapes(root, t);
    read_tolerance(root, t);
    t.reference_source =
        read_python_file(root, "reference", t.dir, {"class Model", "def get_inputs", "def get_init_inputs"}, t.reference_path);
    t.seed_source = read_python_file(root, "seed", t.dir, {"class ModelNew"}, t.seed_path);
    read_search_space(root, t);
    read_count(root, "flops", t, t.flops);
    read_count(root, "bytes", t, t.bytes);
    root.finish();
    return t;
  }
  read_args(root, t);
  read_shapes(root, t);
  read_tolerance(root, t);
  t.reference_source = read_source_file(root, "reference", t.dir, t.function, t.reference_path);
  t.seed_source = read_source_file(root, "seed", t.dir, t.function, t.seed_path);
  if (!t.signature.empty())
    for (const auto& [key, src] : {std::pair{"reference", &t.reference_source}, std::pair{"seed", &t.seed_source}})
      if (!contains_signature(*src, t.signature))
        root.fail(key, "a source that contains the task's signature \"" + t.signature + "\" (whitespace aside)");
  read_search_space(root, t);
  read_count(root, "flops", t, t.flops);
  read_count(root, "bytes", t, t.bytes);
  read_baselines(root, t);
  read_stress(root, t);
  read_libraries(root, t);
  root.finish();
  return t;
}


std::vector<fs::path> find_task_dirs(const fs::path& dir) {
  std::error_code ec;
  const std::string expected =
      "a task directory (holding task.json) or a directory of task directories";
  if (!fs::is_directory(dir, ec)) throw InputError(dir.string(), "", expected);
  if (fs::is_regular_file(dir / "task.json", ec)) return {dir};
  std::vector<fs::path> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_directory(e2) && fs::is_regular_file(it->path() / "task.json", e2)) out.push_back(it->path());
  }
  if (ec) throw InputError(dir.string(), "", expected + " (cannot list it: " + ec.message() + ")");
  if (out.empty()) throw InputError(dir.string(), "", expected + " (no task.json in it or one level down)");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kevo
