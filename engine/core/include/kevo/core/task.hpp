// A task: one kernel to optimise. On disk a task is a directory holding
// task.json (the manifest, documented in docs/tasks.md) and the source files
// it names. load_task() validates strictly: every error is an InputError that
// names the manifest file, the JSON pointer of the key and what was expected.
#pragma once

#include "kevo/core/expr.hpp"
#include "kevo/core/search_space.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kevo {

// bf16: bfloat16 buffers (CUDA tasks only: the host compilers kevo supports
// have no bfloat16 arithmetic type; the judge stores and reads the bits).
enum class DType { f32, f64, i32, i64, bf16 };
enum class Role { in, out, inout, scalar };

std::string_view to_string(DType);
std::string_view to_string(Role);
std::string_view c_type(DType);       // "float", "double", "int32_t", "int64_t", "__nv_bfloat16"
std::size_t dtype_size(DType);
bool is_floating(DType);              // f32, f64, bf16
// bfloat16 bits: from a double, rounded to nearest even once (no double
// rounding through float; overflow gives inf, NaN the quiet NaN 0x7FC0, with
// the sign); to a double, exactly.
std::uint16_t bf16_from_double(double v);
double bf16_to_double(std::uint16_t bits);

struct Distribution {
  enum class Kind { uniform, normal, constant, integers };
  Kind kind = Kind::uniform;
  double a = -1.0;   // uniform: low;  normal: mean;  constant: value;  integers: low
  double b = 1.0;    // uniform: high; normal: stddev;                  integers: high (inclusive)
};

struct Arg {
  std::string name;
  DType dtype = DType::f32;
  Role role = Role::in;
  std::vector<Expr> shape;     // buffers: one expression per axis, over dimension names
  Expr value;                  // scalars: expression over dimension names (e.g. "M", "1e-5")
  Distribution dist;           // inputs (in / inout)

  bool is_buffer() const { return role != Role::scalar; }
  bool is_input() const { return role == Role::in || role == Role::inout; }
  bool is_output() const { return role == Role::out || role == Role::inout; }
};

struct Shape {
  std::string label;                         // "M=256,N=256,K=256"; drawn shapes "drawn M=37,N=1029"
  std::map<std::string, std::int64_t> dims;  // dimension name -> size
  Env env() const;
};

// The space the judge draws fresh correctness shapes from at every judgement
// ("shapes": {"draw": ...}, docs/tasks.md#drawn-shapes; draw_shapes()).
// Every dimension is either free, drawn from an inclusive range, or tied: an
// expression over the free ones ("K": "N", "H": "W + 2").
struct DrawSpace {
  struct Range {
    std::string dim;
    std::int64_t min = 1, max = 1;
  };
  struct Tie {
    std::string dim;
    Expr value;   // over free dimensions only
  };
  std::size_t count = 0;        // shapes per judgement; 0: the task has no draw space
  std::vector<Range> free;      // in Task::dims order
  std::vector<Tie> tied;        // in Task::dims order
  std::int64_t max_elements = 0;   // per buffer; 0: no cap
  std::int64_t max_bytes = 0;      // all buffers together (always set when count > 0)

  bool empty() const { return count == 0; }
};

// An extra correctness trial on inputs from other distributions ("stress":
// [{"name", "inputs"}], docs/tasks.md#stress): every argument named in
// `inputs` is drawn from the given distribution instead of its own.
struct StressTrial {
  std::string name;                                         // "large-mean"
  std::vector<std::pair<std::size_t, Distribution>> inputs;  // index into Task::args -> distribution
};

// A library a candidate may be allowed to use (docs/tasks.md#libraries).
struct LibraryInfo {
  std::string name;                   // "cublas": the spelling in "libraries"
  std::string backend;                // the backend it belongs to ("cpu", "cuda"); "" for every backend
  bool runtime = false;               // part of every task of `backend` (libc, libm, libstdc++, openmp / cudart)
  bool header_only = false;           // used through includes only (cub, thrust): policed by headers, not symbols
  std::vector<std::string> link;      // what -l<name> links it ("cublas"); empty when header-only or implicit
  std::vector<std::string> headers;   // its include files; a name ending in '/' is a directory ("cub/")
  std::string what;                   // one line for messages and docs
};

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  double rel_l2 = 1e-5;   // ||got - want||_2 / max(||want||_2, atol * sqrt(n))
};

// The "torch" section of a torch task (docs/torch.md#tasks): a PyTorch
// program (Model, get_inputs, get_init_inputs) judged by the torch backend.
struct TorchTaskInfo {
  std::vector<std::string> sizes;       // the module globals kevo sets per shape: the task's dimensions
  bool signed_all = true;               // floating inputs mapped from [0, 1) to [-1, 1): every one...
  std::vector<int> signed_inputs;       // ...or only these (by position in get_inputs())
  std::vector<std::string> allow;       // reference operations a candidate may still call ("aten::mm")
  bool forbid_reference_ops = true;     // every other compute operation of the reference is forbidden
  std::vector<std::string> languages;   // "cuda" (load_inline), "triton"
  struct Stress {                       // an extra correctness trial: floating inputs x -> x * scale + shift
    std::string name;
    double scale = 1.0, shift = 0.0;
  };
  std::vector<Stress> stress;
  std::string level;                    // where it came from ("kernelbench/level1"), "" for own tasks
  bool degenerate = false;              // the importer's flag: zeros or a copy of an input match it
};

struct Task {
  std::filesystem::path dir;            // absolute
  std::filesystem::path manifest_path;  // dir / "task.json"
  std::string name;
  std::string description;              // what an LLM will see
  std::string backend;                  // "cpu", later "cuda"
  std::string function;                 // the C symbol both sources define
  // "command" tasks: the declaration every source must contain, in the
  // evaluator's language ("__kernel void vadd(...)"); "" for the others.
  std::string signature;
  std::vector<Arg> args;                // in call order
  std::vector<std::string> dims;        // dimension names, in first-use order
  std::vector<Shape> visible;           // shown in prompts, used for correctness and timing
  std::vector<Shape> hidden;            // correctness only; never shown in prompts
  Tolerance tolerance;
  std::filesystem::path reference_path, seed_path;
  std::string reference_source, seed_source;
  SearchSpace space;                    // may be empty
  std::optional<Point> seed_point;      // the seed's point when the space is not empty
  Expr flops, bytes;                    // optional (empty Expr)
  // Library baselines: kind ("torch") -> a Python expression over the argument
  // names giving the outputs. Measured by the CUDA backend when a run starts
  // (docs/cuda.md#library-baselines); the engine only carries them.
  std::map<std::string, std::string> baselines;
  // Library baselines that ship with the task as sources ("baselines":
  // {"sources": [...]}): each defines the task's function like a candidate,
  // is compiled by the backend's compile stage with extra libraries, and is
  // judged (correctness and timing against the reference) when a run starts.
  struct SourceBaseline {
    std::string name;                  // "cublas": a report column, unique in the task
    std::filesystem::path path;        // absolute
    std::string source;
    std::vector<std::string> link;     // library names, linked as -l<name>
  };
  std::vector<SourceBaseline> source_baselines;
  DrawSpace draw;                       // "shapes": {"draw": ...}; empty when absent
  std::vector<StressTrial> stress;      // "stress": extra trials; empty when absent
  // The libraries a candidate may use: the backend's runtime
  // (runtime_libraries()) and then the manifest's "libraries", in order.
  // Source baselines are not bound by it (they link their "link").
  std::vector<std::string> libraries;
  nlohmann::json manifest;              // as read, for lineage attributes
  // backend "torch": no args and no function; sources are Python (the
  // reference defines Model, get_inputs, get_init_inputs; candidates
  // ModelNew).
  std::optional<TorchTaskInfo> torch;

  bool is_torch() const { return torch.has_value(); }
  // How its sources are written: Python (a torch task) or C-like.
  SourceSyntax syntax() const { return is_torch() ? SourceSyntax::python : SourceSyntax::c_like; }
  // The file name a source of this task is saved as: "candidate.py" for a
  // torch task, "candidate.cpp" otherwise (best/<task>.<ext>).
  std::string source_extension() const { return is_torch() ? ".py" : ".cpp"; }

  // "extern \"C\" void sgemm(const float* A, ..., int32_t M)" — what sources must define
  // (a command task's `signature`).
  std::string c_signature() const;
  // Number of elements of buffer argument `arg` at `shape`.
  std::int64_t elements(const Arg& arg, const Shape& shape) const;
  std::vector<std::int64_t> extents(const Arg& arg, const Shape& shape) const;
  Value scalar_value(const Arg& arg, const Shape& shape) const;
  bool allows_library(std::string_view name) const;
};

// The correctness shapes of one judgement, drawn from task.draw:
// task.draw.count shapes (none when the task has no draw space), the same
// for the same (task, seed) on every machine. Shape 0 has every free
// dimension within [min, min + 7]; across shapes 0..3 every free dimension
// takes each residue mod 4 (so mod 2) that its range holds, and further
// shapes a random residue; the sizes of shapes 1.. are otherwise spread
// log-uniformly over the range (residues mod 8..32 random). A shape outside
// the caps, or not a valid shape of the task, is redrawn from the same
// stream. Labels are "drawn " + the dimensions ("drawn M=37,K=5,N=1029").
std::vector<Shape> draw_shapes(const Task& task, std::uint64_t seed);

// Writes into `dir` (created; an existing task.json replaced) a copy of a
// C-signature task that holds nothing a candidate may not see: the manifest
// without its hidden shapes, its draw space and its library baselines, and
// the reference and seed sources beside it (reference<ext>, seed<ext>).
// load_task(dir) gives the same task with visible shapes only. For a
// process that runs candidate code and needs the task (the CUDA worker's
// ncu child, docs/cuda.md#profiler-feedback). Throws std::logic_error for
// a torch task.
void write_public_copy(const Task& task, const std::filesystem::path& dir);

// `task` with stress trial `stress`'s distributions in place of its
// arguments' own; everything else unchanged.
Task with_stress(const Task& task, const StressTrial& stress);

// Whether `source` contains `signature` once whitespace is removed from
// both (a command task's sources and LLM replies are checked with it).
bool contains_signature(std::string_view source, std::string_view signature);

// Every library name "libraries" accepts, and the runtime ones.
const std::vector<LibraryInfo>& known_libraries();
// What every candidate of a backend may use without asking: "libc", "libm",
// "libstdc++", then "openmp" (cpu) or "cudart" (cuda).
std::vector<std::string> runtime_libraries(std::string_view backend);

// Loads and validates DIR/task.json. Throws InputError.
Task load_task(const std::filesystem::path& dir);

// A directory is either a task (has task.json) or holds task directories
// (one level down). Returns the task directories, sorted by name.
std::vector<std::filesystem::path> find_task_dirs(const std::filesystem::path& dir);

}  // namespace kevo
