// LLM prompts and knowledge for CUDA tasks: the system prompt's rules,
// hardware and roofline, the parent's timing, registers and profile, the
// backend's own templates, retrieval of the nvcc error snippets, and the
// files a CUDA task needs checked before a run starts (docs/llm.md#prompts).
// No GPU is needed: prompts are text made from the task and the verdict.
#include "fake_server.hpp"
#include "llm_test_util.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/task.hpp"
#include "kevo/operators/llm_operators.hpp"
#include "kevo/operators/llm_prompt_facts.hpp"

#include "../core/test_util.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace kevo {
namespace {
namespace fs = std::filesystem;
using namespace kevo::operators::llm;
using nlohmann::json;

const fs::path kSource = KEVO_SOURCE_DIR;

const Task& cuda_task(const std::string& name) {
  static std::map<std::string, Task> tasks;
  auto it = tasks.find(name);
  if (it == tasks.end()) it = tasks.emplace(name, load_task(kSource / "configs/tasks/cuda" / name)).first;
  return it->second;
}

// What nvcc -Xptxas=-v printed for the axpy seed on sm_90.
const char* kAxpyPtxas =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z11axpy_kernelPKfS0_Pffi' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z11axpy_kernelPKfS0_Pffi\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 3.282 ms\n";

// The H200 that judged the parent, as the CUDA worker names it.
const char* kH200 = "NVIDIA H200 0000:19:00.0 GPU-8f0c2a51-7d1e-4b2a-9c3f-0a1b2c3d4e5f";

Candidate correct_parent(const Task& t, const std::string& device) {
  Candidate p;
  p.id = 3;
  p.source = t.seed_source;
  p.verdict.status = Status::correct;
  p.verdict.speedup = 1.1;
  p.verdict.cand_median_ns = 95000;
  p.verdict.ref_median_ns = 104500;
  p.verdict.cand_iqr_ns = 800;
  p.verdict.device = device;
  p.verdict.compile_log = kAxpyPtxas;
  p.verdict.feedback = "Correct. Median time 95 us vs reference 104.5 us: speedup 1.1x (IQR 0.8 us, 200 repeats).";
  return p;
}

struct Request {
  Rng rng{1};
  OperatorRequest req;
  Request(const Task& t, const Candidate& parent) {
    req.id = 9;
    req.task = &t;
    req.parents = {&parent};
    req.feedback = parent.verdict.feedback;
    req.rng = &rng;
  }
};

// A service that describes the hardware itself (no fixed text).
std::shared_ptr<Service> own_hardware_service(const std::string& url = "http://127.0.0.1:9") {
  return std::make_shared<Service>(test::service_config(url, "openai-compatible", {{"hardware", ""}}));
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// ---- the system prompt -----------------------------------------------------

TEST(LlmCudaPrompts, SystemPromptStatesSandboxHardwareRooflineAndParent) {
  const Task& t = cuda_task("axpy");
  auto svc = own_hardware_service();
  const Candidate parent = correct_parent(t, kH200);
  Request r(t, parent);
  const auto slots = prompt_slots(r.req, *svc, 2);
  const std::string system = svc->prompt("system_cuda").render(slots);
  // The sandbox's rules.
  for (const char* rule : {"DEVICE pointer", "synchronizes the whole device", "streams, events or graphs",
                           "cudaFree'd before it", "no cuBLAS", "no TF32", "No printing", "outputs hold NaN",
                           "0.9 x this floor", "runtime_error"})
    EXPECT_NE(system.find(rule), std::string::npos) << rule << "\n" << system;
  // The GPU that judged the parent, with its figures.
  for (const char* fact : {"NVIDIA H200 (compute capability 9.0, sm_90", "132 SMs", "4800 GB/s", "60 MiB of L2",
                           "228 KiB per SM", "up to 227 KiB per block", "cudaFuncAttributeMaxDynamicSharedMemorySize",
                           "67 TFLOP/s fp32"})
    EXPECT_NE(system.find(fact), std::string::npos) << fact << "\n" << system;
  EXPECT_EQ(system.find("assumed"), std::string::npos);
  // The task's counts at the visible shape (flops 2*N, bytes 12*N, N = 2^24),
  // the floor 12 * 2^24 B / 4800 GB/s = 41.94 us, and the parent against it.
  for (const char* fig : {"N=16777216: 3.355e+07 FLOP, 2.013e+08 bytes", "= 41.94 us", "memory-bound",
                          "95.00 us over these shapes, is 2.26x the floor"})
    EXPECT_NE(system.find(fig), std::string::npos) << fig << "\n" << system;
  EXPECT_EQ(system.find("{{"), std::string::npos);

  // The user prompt: the parent's timing against the reference and, without
  // a profile, its registers and spills from ptxas.
  const std::string rewrite = svc->prompt("rewrite", "cuda").render(slots);
  EXPECT_NE(rewrite.find("speedup 1.100x over the reference (median 95.0 us, reference 104.5 us"), std::string::npos)
      << rewrite;
  EXPECT_NE(rewrite.find("Registers per kernel (ptxas):\n- axpy_kernel: 12 registers, no spills"), std::string::npos)
      << rewrite;
}

// No prompt of any bundled CUDA task names a hidden shape: not the task's
// own text, nor the knowledge retrieved for it, whatever the parent's fate.
TEST(LlmCudaPrompts, HiddenShapesNeverAppear) {
  auto svc = own_hardware_service();
  for (const auto& dir : find_task_dirs(kSource / "configs/tasks/cuda")) {
    const Task& t = cuda_task(dir.filename().string());
    std::string all;
    for (Status status : {Status::correct, Status::wrong_answer, Status::compile_error, Status::runtime_error}) {
      Candidate parent = correct_parent(t, kH200);
      parent.verdict.status = status;
      Request r(t, parent);
      const auto slots = prompt_slots(r.req, *svc, 2);
      all += svc->prompt("system_cuda").render(slots);
      for (const char* name : {"rewrite", "diff", "crossover", "analyst", "param_hint", "fix"})
        all += svc->prompt(name, "cuda").render(slots);
    }
    EXPECT_NE(all.find(t.visible.front().label), std::string::npos) << t.name;
    for (const auto& h : t.hidden) {
      // The whole label ("N=1" is in the visible "N=16777216").
      EXPECT_FALSE(std::regex_search(all, std::regex("(^|\\W)" + h.label + "(?![0-9])"))) << t.name << ": " << h.label;
      for (const auto& [dim, v] : h.dims)
        if (v >= 100) {
          EXPECT_FALSE(std::regex_search(all, std::regex("\\b" + std::to_string(v) + "\\b"))) << t.name << ": " << v;
        }
    }
    EXPECT_EQ(all.find("{{"), std::string::npos) << t.name;
  }
}

TEST(LlmCudaPrompts, HardwareNamesTheJudgingGpuOrSaysWhatIsAssumed) {
  const Task& t = cuda_task("axpy");
  auto svc = own_hardware_service();

  // A GPU kevo has no figures for: named, none of the H200's figures.
  const Candidate l4 = correct_parent(t, "NVIDIA L4 0000:01:00.0 GPU-00000000-0000-0000-0000-000000000001");
  Request a(t, l4);
  auto slots = prompt_slots(a.req, *svc, 2);
  EXPECT_EQ(slots["hardware"].rfind("NVIDIA L4 (the GPU that judged the current kernel; kevo has no figures", 0), 0u)
      << slots["hardware"];
  EXPECT_EQ(slots["hardware"].find("132 SMs"), std::string::npos);
  EXPECT_NE(slots["roofline"].find("3.355e+07 FLOP"), std::string::npos);
  EXPECT_EQ(slots["roofline"].find("floor"), std::string::npos) << slots["roofline"];

  // No GPU named: the H200's figures, said to be assumed.
  const Candidate unnamed = correct_parent(t, "");
  Request b(t, unnamed);
  slots = prompt_slots(b.req, *svc, 2);
  EXPECT_EQ(slots["hardware"].rfind("assumed (no GPU named in the verdict; kevo's default): NVIDIA H200", 0), 0u)
      << slots["hardware"];
  EXPECT_NE(slots["roofline"].find("= 41.94 us"), std::string::npos) << slots["roofline"];

  // A hardware text in the config wins.
  auto fixed = std::make_shared<Service>(test::service_config("http://127.0.0.1:9", "openai-compatible",
                                                              {{"hardware", "two H200 on one node"}}));
  Request c(t, l4);
  EXPECT_EQ(prompt_slots(c.req, *fixed, 2)["hardware"], "two H200 on one node");

  // A CPU task keeps the CPU's description.
  const Task cpu = load_task(kSource / "configs/tasks/cpu/reduce_sum");
  Candidate cp = correct_parent(cpu, "");
  cp.verdict.compile_log.clear();
  Request d(cpu, cp);
  slots = prompt_slots(d.req, *svc, 2);
  EXPECT_NE(slots["hardware"].find("hardware threads"), std::string::npos) << slots["hardware"];
  EXPECT_EQ(slots["roofline"].find("floor"), std::string::npos) << slots["roofline"];
}

TEST(LlmCudaPrompts, RooflineUsesTheTensorCorePeakForBf16Inputs) {
  auto svc = own_hardware_service();
  const Task& gemm = cuda_task("gemm_bf16_bias_relu");
  const Candidate g = correct_parent(gemm, kH200);
  Request a(gemm, g);
  const std::string bf16 = prompt_slots(a.req, *svc, 2)["roofline"];
  // 2 * 4096^3 + 2 * 4096^2 FLOP at 989 TFLOP/s: 139.00 us, compute-bound.
  EXPECT_NE(bf16.find("= 139.00 us at 989 TFLOP/s bf16 (tensor cores)"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("compute-bound"), std::string::npos) << bf16;
  const Task& sgemm = cuda_task("sgemm");
  const Candidate s = correct_parent(sgemm, kH200);
  Request b(sgemm, s);
  const std::string fp32 = prompt_slots(b.req, *svc, 2)["roofline"];
  EXPECT_NE(fp32.find("at 67 TFLOP/s fp32"), std::string::npos) << fp32;
}

TEST(LlmCudaPrompts, LibrariesSayWhatTheTaskAllows) {
  EXPECT_NE(libraries_text(cuda_task("sgemm")).find("none beyond the CUDA runtime: no cuBLAS"), std::string::npos);
  Task allowed = cuda_task("sgemm");
  allowed.libraries.push_back("cublas");
  EXPECT_EQ(libraries_text(allowed), "the runtime and cublas (cuBLAS)");
}

TEST(LlmCudaPrompts, RegisterReportReadsPtxasLines) {
  const std::string log = std::string(kAxpyPtxas) +
                          "ptxas info    : Compiling entry function '_Z6reduceILi256EEvPKfPfi' for 'sm_90'\n"
                          "ptxas info    : Function properties for _Z6reduceILi256EEvPKfPfi\n"
                          "    8 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                          "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem\n";
  EXPECT_EQ(register_report(log),
            "- axpy_kernel: 12 registers, no spills\n"
            "- reduce<256>: 255 registers, SPILLS: 8 bytes stored and 12 bytes loaded to local memory, 8 bytes stack "
            "frame, 1024 bytes static shared memory\n");
  EXPECT_EQ(register_report("g++: warning: nothing to see\n"), "");
}

// The compile log is the candidate's to write (`#pragma message`): numbers
// too long for a long saturate (std::stol threw out of the prompt's making).
TEST(LlmCudaPrompts, RegisterReportSurvivesNumbersTooLong) {
  const std::string huge = "99999999999999999999999999";
  const std::string log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                          "ptxas info    : Function properties for k\n"
                          "note: #pragma message: " + huge + " bytes stack frame, " + huge + " bytes spill stores, 0 "
                          "bytes spill loads\n"
                          "ptxas info    : Used " + huge + " registers, " + huge + " bytes smem\n";
  const std::string report = register_report(log);
  const std::string top = std::to_string(std::numeric_limits<long>::max());
  EXPECT_NE(report.find("- k: " + top + " registers, SPILLS: " + top + " bytes stored"), std::string::npos) << report;
}

// ... and lines as long as the log's cap (16 KB) are read without a depth
// that grows with them: std::regex recursed once per character of a run
// (a 16 KB line of digits overflowed a 4 MB stack). Read here on a thread
// with a 256 KB stack, where that crashed the test.
TEST(LlmCudaPrompts, RegisterReportReadsLongLinesInLittleStack) {
  const std::string run(16 * 1024, '7');
  const std::string log = "ptxas info    : Compiling entry function '" + std::string(16 * 1024, 'k') + "' for 'sm_90'\n"
                          "ptxas info    : Function properties for " + std::string(16 * 1024, 'k') + "\n" +
                          run + " bytes stack frame, " + run + " bytes spill stores, 1 bytes spill loads\n"
                          "ptxas info    : Used 12 registers, " + run + " bytes smem\n";
  struct Job {
    const std::string* log;
    std::string report;
  } job{&log, {}};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, &attr,
                [](void* p) -> void* {
                  auto* j = static_cast<Job*>(p);
                  j->report = register_report(*j->log);
                  return nullptr;
                },
                &job),
            0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  const std::string top = std::to_string(std::numeric_limits<long>::max());
  EXPECT_EQ(job.report, "- " + std::string(16 * 1024, 'k') + ": 12 registers, SPILLS: " + top +
                            " bytes stored and 1 bytes loaded to local memory, " + top + " bytes stack frame, " + top +
                            " bytes static shared memory\n");
}

// The parent's ncu summary, which the backend also quotes in its feedback,
// appears once: in the analyst's review (not its feedback), or with no
// analyst in the generation prompts' feedback.
TEST(LlmCudaPrompts, TheProfileAppearsOnceAndTheRegistersWithoutOne) {
  const Task& t = cuda_task("axpy");
  Candidate parent = correct_parent(t, kH200);
  parent.verdict.profile =
      "[profiled: every 5-th timed candidate (profile.every)]\naxpy_kernel: 41.2 us; DRAM 92.1% of peak; SM 14.0%; "
      "achieved occupancy 88%\nptxas info    : Used 12 registers, used 0 barriers";
  parent.verdict.feedback += "\nProfile:\n" + parent.verdict.profile;   // as the native backend writes it
  auto with_analyst = own_hardware_service();
  with_analyst->set_analyst_enabled();
  Request a(t, parent);
  auto slots = prompt_slots(a.req, *with_analyst, 2);
  const std::string review = with_analyst->prompt("analyst", "cuda").render(slots);
  EXPECT_EQ(count(review, "DRAM 92.1% of peak"), 1u) << review;
  EXPECT_EQ(count(with_analyst->prompt("rewrite", "cuda").render(slots), "DRAM 92.1% of peak"), 0u);
  EXPECT_EQ(slots["feedback"].find("Registers per kernel"), std::string::npos);   // the profile quotes them

  auto without = own_hardware_service();
  Request b(t, parent);
  slots = prompt_slots(b.req, *without, 2);
  EXPECT_EQ(count(without->prompt("rewrite", "cuda").render(slots), "DRAM 92.1% of peak"), 1u) << slots["feedback"];
}

// ---- the backend's own templates ---------------------------------------------

TEST(LlmCudaPrompts, ABackendsOwnTemplateReplacesTheSharedOne) {
  auto svc = own_hardware_service();
  EXPECT_EQ(&svc->prompt("analyst", "cuda"), &svc->prompt("analyst_cuda"));
  EXPECT_EQ(&svc->prompt("analyst", "cpu"), &svc->prompt("analyst"));
  EXPECT_EQ(&svc->prompt("rewrite", "cuda"), &svc->prompt("rewrite"));   // none of its own: the shared one

  // Through the operator: the review of a CUDA parent is the CUDA one, under
  // the CUDA system prompt.
  test::FakeServer s(json{{"default", {{"kind", "auto"}}}});
  ASSERT_TRUE(s.up());
  auto live = own_hardware_service(s.url());
  live->set_analyst_enabled();
  LlmOperator analyst("llm_analyst", live, {Kind::analyst});
  const Task& t = cuda_task("axpy");
  const Candidate parent = correct_parent(t, kH200);
  Request r(t, parent);
  const auto outcome = test::await_outcome(analyst, r.req);
  const auto turns = json::parse(outcome.llm);
  ASSERT_GE(turns.size(), 1u) << outcome.failure;
  const auto& prompt = turns[0]["prompt"];
  ASSERT_EQ(prompt.size(), 2u);
  EXPECT_NE(prompt[0]["content"].get<std::string>().find("Rules of the CUDA sandbox"), std::string::npos);
  EXPECT_NE(prompt[1]["content"].get<std::string>().find("Nsight Compute summary"), std::string::npos)
      << prompt[1]["content"];
}

// ---- knowledge -------------------------------------------------------------

// Compile errors as the native backend's feedback gives them: the message
// (the first error line), then the first lines of nvcc's log.
std::string compile_feedback(const std::string& log) {
  const std::string first = log.substr(0, log.find('\n'));
  return "Compilation failed: compile error: " + first + "\n" + log;
}

struct ErrorCase {
  std::string log, title;   // nvcc's output; a part of the snippet title that must come first
};

const std::vector<ErrorCase>& nvcc_errors() {
  static const std::vector<ErrorCase> cases = {
      {"candidate.cu(4): error: identifier \"__shfl_down\" is undefined\n    v += __shfl_down(v, 16);\n"
       "         ^\n\n1 error detected in the compilation of \"candidate.cu\".\n",
       "\"__shfl_down\" is undefined"},
      {"candidate.cu(2): warning #1835-D: attribute \"__global__\" does not apply here\n"
       "candidate.cu(2): error: identifier \"__nv_bfloat16\" is undefined\n"
       "  __global__ void k(__nv_bfloat16* y, int n) { y[0] = __float2bfloat16(1.0f); }\n",
       "\"__nv_bfloat16\" is undefined"},
      {"ptxas error   : Entry function '_Z1kPfi' uses too much shared data (0x40000 bytes, 0xc000 max)\n"
       "ptxas info    : 0 bytes gmem\n",
       "too much shared data"},
      {"candidate.cu(3): error: calling a __device__ function(\"sq(float)\") from a __host__ function(\"f\") is not "
       "allowed\n  extern \"C\" void f(float* x, int32_t n) { float a = sq(2.0f); x[0] = a; }\n",
       "calling a __device__ function from a __host__ function"},
      {"candidate.cu(2): error: expression must have integral or unscoped enum type\n"
       "  __global__ void k(float* x, int n) { float v = x[0]; x[1] = v >> 1; }\n",
       "integral or unscoped enum type"},
      {"candidate.cu(2): error: this declaration may not have extern \"C\" linkage\n"
       "  extern \"C\" template <int B> __global__ void k(float* x, int n) { x[0] = B; }\n",
       "may not have extern \"C\" linkage"},
      {"candidate.cu(3): error: a __global__ function call must be configured\n"
       "  extern \"C\" void f(float* x, int32_t n) { k(x, n); }\n",
       "must be configured"},
      {"ptxas /tmp/tmpxft_00006787_00000000-6_candidate.ptx, line 27; error   : Instruction 'wgmma.fence' not "
       "supported on .target 'sm_90'\nptxas fatal   : Ptx assembly aborted due to errors\n",
       "not supported on .target 'sm_90'"},
  };
  return cases;
}

// The first snippet title of a `knowledge` slot ("### title\n...").
std::string first_title(const std::string& knowledge) {
  if (knowledge.rfind("### ", 0) != 0) return "";
  return knowledge.substr(4, knowledge.find('\n') - 4);
}

// The knowledge slot of a generation prompt whose parent of `task` was
// judged `status` with `feedback`.
std::string generation_knowledge(Service& svc, const Task& task, Status status, const std::string& feedback) {
  Candidate parent;
  parent.source = task.seed_source;
  parent.verdict.status = status;
  parent.verdict.feedback = feedback;
  Request r(task, parent);
  return prompt_slots(r.req, svc, 2)["knowledge"];
}

TEST(LlmCudaKnowledge, ACompileErrorRetrievesItsNvccSnippetFirst) {
  auto svc = own_hardware_service();
  const Task& t = cuda_task("gemm_bf16_bias_relu");
  for (const auto& c : nvcc_errors()) {
    const std::string feedback = compile_feedback(c.log);
    // llm_fix: the failed candidate's verdict.
    const std::string repair = svc->knowledge_text(t, feedback, Status::compile_error);
    EXPECT_NE(first_title(repair).find(c.title), std::string::npos) << c.title << " (repair): " << first_title(repair);
    // A generation prompt whose parent failed to compile.
    const std::string slot = generation_knowledge(*svc, t, Status::compile_error, feedback);
    EXPECT_NE(first_title(slot).find(c.title), std::string::npos) << c.title << " (generation): " << first_title(slot);
  }
}

// A wrong answer, or a kernel that is correct and slow, gets no snippet
// about compile errors (it compiled), and a wrong answer gets one of the
// "Wrong answer:" snippets.
TEST(LlmCudaKnowledge, OtherFeedbackRetrievesNoCompileErrorSnippet) {
  auto svc = own_hardware_service();
  const std::string wrong =
      "Wrong answer: output Y differs from the reference at a hidden test shape, element [999, 776]: expected "
      "0.15625, got 0.1328125. Max abs error 0.0234, relative L2 error 0.0051 (tolerance atol 0.02, rtol 0.01, "
      "rel_l2 0.004).";
  for (const char* name : {"gemm_bf16_bias_relu", "axpy", "layernorm", "transpose"}) {
    const Task& t = cuda_task(name);
    const std::string repair = svc->knowledge_text(t, wrong, Status::wrong_answer);   // llm_fix
    EXPECT_EQ(repair.find("### Compile error"), std::string::npos) << name << ": " << repair;
    EXPECT_NE(repair.find("### Wrong answer:"), std::string::npos) << name << ": " << repair;
    const std::string generation = generation_knowledge(*svc, t, Status::wrong_answer, wrong);
    EXPECT_EQ(generation.find("### Compile error"), std::string::npos) << name << ": " << generation;
    // A correct parent (the axpy description speaks of host code launching
    // kernels, words of the compile-error snippets too).
    const Candidate fast = correct_parent(t, kH200);
    Request q(t, fast);
    const std::string correct = prompt_slots(q.req, *svc, 2)["knowledge"];
    EXPECT_NE(correct, "(none)");
    EXPECT_EQ(correct.find("### Compile error"), std::string::npos) << name << ": " << correct;
  }
}

TEST(LlmCudaKnowledge, EverySnippetFitsTheDefaultBudget) {
  Knowledge k;
  k.add_file(kSource / "configs/knowledge/cuda.md");
  ASSERT_GE(k.size(), 30u);
  // Each snippet alone must fit llm.knowledge_tokens' default (600), or it
  // could never be retrieved; a query naming its title finds it.
  const std::string text = [] {
    std::ifstream in(kSource / "configs/knowledge/cuda.md");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::size_t found = 0;
  for (std::size_t at = text.find("\n## "); at != std::string::npos; at = text.find("\n## ", at + 1)) {
    const std::string title = text.substr(at + 4, text.find('\n', at + 1) - at - 4);
    const auto hits = k.retrieve(title, 600);
    ASSERT_FALSE(hits.empty()) << title;
    found += hits.front()->title == title;
    EXPECT_LE((hits.front()->title.size() + hits.front()->text.size()) / 4 + 1, 600u) << title;
  }
  EXPECT_EQ(found, k.size());
}

// ---- the files a CUDA task needs, checked before a run -----------------------

// A copy of the bundled prompts and knowledge that a test then breaks.
struct FileCase {
  test::TempDir dir;
  FileCase() {
    fs::copy(kSource / "configs/prompts", dir.path() / "prompts");
    fs::copy(kSource / "configs/knowledge", dir.path() / "knowledge");
  }
  Service service() const {
    return Service(test::service_config("http://127.0.0.1:9", "openai-compatible",
                                        {{"prompts_dir", (dir.path() / "prompts").string()},
                                         {"knowledge_dir", (dir.path() / "knowledge").string()}}));
  }
};

TEST(LlmCudaFiles, TheBundledFilesServeEveryOperatorOnCuda) {
  Service svc(test::service_config("http://127.0.0.1:9"));
  for (Kind k : {Kind::rewrite, Kind::diff, Kind::crossover, Kind::analyst, Kind::param_hint, Kind::fix})
    EXPECT_NO_THROW(svc.prepare_backend("cuda", templates_of(k)));
}

// The input error prepare_backend throws for `backend` and the templates of
// `kind`, if any.
std::optional<InputError> prepare_error(const FileCase& c, const std::string& backend, Kind kind) {
  try {
    c.service().prepare_backend(backend, templates_of(kind));
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

TEST(LlmCudaFiles, AMissingFileIsAnInputErrorNamingIt) {
  for (const auto& [file, key] : std::vector<std::pair<std::string, std::string>>{
           {"prompts/system_cuda.md", "/llm/prompts_dir"}, {"knowledge/cuda.md", "/llm/knowledge_dir"}}) {
    FileCase c;
    fs::remove(c.dir.path() / file);
    const auto e = prepare_error(c, "cuda", Kind::rewrite);
    ASSERT_TRUE(e) << "no error without " << file;
    EXPECT_EQ(e->key(), key);
    EXPECT_NE(e->expected().find((c.dir.path() / file).string() + " does not exist"), std::string::npos)
        << e->expected();
    EXPECT_FALSE(prepare_error(c, "cpu", Kind::rewrite)) << "the CPU needs no " << file;
  }
}

TEST(LlmCudaFiles, ABrokenBackendTemplateFailsTheOperatorsThatUseIt) {
  FileCase c;
  c.dir.write("prompts/analyst_cuda.md", "Review {{no_such_slot}}\n");
  const auto e = prepare_error(c, "cuda", Kind::analyst);
  ASSERT_TRUE(e) << "no error for an unknown slot in analyst_cuda.md";
  EXPECT_EQ(e->file(), (c.dir.path() / "prompts/analyst_cuda.md").string());
  EXPECT_EQ(e->key(), "{{no_such_slot}}");
  // Operators that do not review, and the analyst on the CPU, never read it.
  EXPECT_FALSE(prepare_error(c, "cuda", Kind::rewrite));
  EXPECT_FALSE(prepare_error(c, "cpu", Kind::analyst));
}

}  // namespace
}  // namespace kevo
