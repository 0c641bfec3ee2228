// LLM operators on torch tasks (docs/llm.md#torch): replies parsed as
// Python (the one block defining class ModelNew), SEARCH/REPLACE edits of
// Python sources, the prompts in KernelBench's candidate form with the
// device's facts, the knowledge's error snippets, the repair of tracebacks,
// and the files a torch task needs checked before a run. No torch is needed:
// prompts and replies are text.
#include "fake_server.hpp"
#include "llm_test_util.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/task.hpp"
#include "kevo/operators/llm_operators.hpp"
#include "kevo/operators/llm_prompt_facts.hpp"
#include "kevo/operators/llm_reply.hpp"

#include "../core/test_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
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

const Task& torch_task(const std::string& name) {
  static std::map<std::string, Task> tasks;
  auto it = tasks.find(name);
  if (it == tasks.end()) it = tasks.emplace(name, load_task(kSource / "configs/tasks/torch" / name)).first;
  return it->second;
}

const char* kProgram =
    "import torch\n"
    "import torch.nn as nn\n"
    "\n"
    "\n"
    "class ModelNew(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "\n"
    "    def forward(self, x):\n"
    "        return torch.softmax(x, dim=1)\n";

std::string python(const std::string& code, const std::string& lang = "python") {
  return "```" + lang + "\n" + code + "```\n";
}

// ---- replies ---------------------------------------------------------------

TEST(LlmTorchReply, TakesTheOnePythonBlockThatDefinesModelNew) {
  const Task& t = torch_task("torch_softmax");
  // A CUDA kernel shown apart, then the program: the program is the candidate.
  const std::string reply = "The idea.\n```cuda\n__global__ void k(float* y) {}\n```\n" + python(kProgram);
  const Parsed p = parse_code_reply(reply, t);
  ASSERT_TRUE(p.source) << p.error;
  EXPECT_EQ(*p.source, kProgram);
  // ```py and unlabelled fences are Python too.
  for (const char* lang : {"py", "", "Python"}) {
    const Parsed q = parse_code_reply(python(kProgram, lang), t);
    ASSERT_TRUE(q.source) << lang << ": " << q.error;
    EXPECT_EQ(*q.source, kProgram);
  }
  EXPECT_EQ(check_signature(kProgram, t), "");
}

TEST(LlmTorchReply, NoModelNewIsRejectedWithAReason) {
  const Task& t = torch_task("torch_softmax");
  std::string model = kProgram;
  model.replace(model.find("class ModelNew"), 14, "class Model");
  const Parsed p = parse_code_reply("Here:\n" + python(model), t);
  EXPECT_FALSE(p.source);
  EXPECT_NE(p.error.find("does not define class ModelNew"), std::string::npos) << p.error;
  EXPECT_NE(check_signature(model, t), "");
  // Nested in something (indented): not at module level.
  std::string nested = "if True:\n    class ModelNew(object):\n        pass\n";
  EXPECT_FALSE(parse_code_reply(python(nested), t).source);
  // Several Python blocks, none with the class.
  auto none = parse_code_reply(python("x = 1\n") + python("y = 2\n"), t);
  EXPECT_FALSE(none.source);
  EXPECT_NE(none.error.find("none of the 2 Python code blocks"), std::string::npos) << none.error;
  // The program in a C++ fence is not Python.
  auto cpp = parse_code_reply(python(kProgram, "cpp"), t);
  EXPECT_FALSE(cpp.source);
  EXPECT_NE(cpp.error.find("no Python code block"), std::string::npos) << cpp.error;
  // No code at all.
  auto text = parse_code_reply("Fuse the passes into one kernel.", t);
  EXPECT_FALSE(text.source);
  EXPECT_NE(text.error.find("no code block"), std::string::npos);
}

TEST(LlmTorchReply, TwoBlocksDefiningModelNewAreAmbiguous) {
  const Task& t = torch_task("torch_softmax");
  const Parsed p = parse_code_reply("Option 1:\n" + python(kProgram) + "Option 2:\n" + python(kProgram, "py"), t);
  EXPECT_FALSE(p.source);
  EXPECT_NE(p.error.find("ambiguous reply: 2 Python code blocks define class ModelNew"), std::string::npos) << p.error;
}

TEST(LlmTorchReply, CTasksStillNeedTheirFunction) {
  // A C task is not helped by a ModelNew: its reply still needs the
  // extern "C" function (the parse of C tasks is unchanged).
  const Task t = load_task(kSource / "configs/tasks/cpu/reduce_sum");
  EXPECT_FALSE(parse_code_reply(python(kProgram), t).source);
  EXPECT_NE(check_signature(kProgram, t), "");
}

// ---- SEARCH/REPLACE on Python ----------------------------------------------

TEST(LlmTorchDiff, AppliesToAPythonSourceAtTheLinesDepth) {
  const Task& t = torch_task("torch_softmax");
  // The edit quotes the return line without its indentation and gives three
  // lines at depth 0: they land at the depth of the line they replace.
  const auto d = parse_diff_blocks(
      "<<<<<<< SEARCH\nreturn torch.softmax(x, dim=1)\n=======\nm = torch.amax(x, dim=1, keepdim=True)\n"
      "e = torch.exp(x - m)\nreturn e / torch.sum(e, dim=1, keepdim=True)\n>>>>>>> REPLACE\n");
  ASSERT_EQ(d.error, "");
  const Parsed r = apply_diff(kProgram, d.blocks, Indentation::significant);
  ASSERT_TRUE(r.source) << r.error;
  std::string want = kProgram;
  want.replace(want.find("        return torch.softmax(x, dim=1)\n"), 39,
               "        m = torch.amax(x, dim=1, keepdim=True)\n        e = torch.exp(x - m)\n"
               "        return e / torch.sum(e, dim=1, keepdim=True)\n");
  EXPECT_EQ(*r.source, want);
  EXPECT_EQ(check_signature(*r.source, t), "");
  // Without significant indentation (C sources) the REPLACE part stays as
  // written: the exact match replaces the text after the indentation.
  const Parsed c = apply_diff(kProgram, d.blocks);
  ASSERT_TRUE(c.source);
  EXPECT_NE(c.source->find("        m = torch.amax(x, dim=1, keepdim=True)\ne = torch.exp"), std::string::npos)
      << *c.source;
}

TEST(LlmTorchDiff, ExactAndInLineEditsStayAsWritten) {
  // A block that quotes the lines with their indentation, and one that edits
  // inside a line: both applied exactly.
  const auto d = parse_diff_blocks(
      "<<<<<<< SEARCH\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n=======\n"
      "    def forward(self, x):\n        y = torch.softmax(x, dim=1)\n        return y\n>>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\ndim=1)\n        return y\n=======\ndim=-1)\n        return y\n>>>>>>> REPLACE\n");
  ASSERT_EQ(d.error, "");
  const Parsed r = apply_diff(kProgram, d.blocks, Indentation::significant);
  ASSERT_TRUE(r.source) << r.error;
  EXPECT_NE(r.source->find("    def forward(self, x):\n        y = torch.softmax(x, dim=-1)\n        return y\n"),
            std::string::npos)
      << *r.source;
  // Deeper lines of the REPLACE part keep their depth relative to the first.
  const auto nested = parse_diff_blocks(
      "<<<<<<< SEARCH\nreturn torch.softmax(x, dim=1)\n=======\nif x.dim() == 2:\n    return torch.softmax(x, dim=1)\n"
      "return x\n>>>>>>> REPLACE\n");
  const Parsed n = apply_diff(kProgram, nested.blocks, Indentation::significant);
  ASSERT_TRUE(n.source) << n.error;
  EXPECT_NE(n.source->find("        if x.dim() == 2:\n            return torch.softmax(x, dim=1)\n        return x\n"),
            std::string::npos)
      << *n.source;
}

// ---- prompts ---------------------------------------------------------------

Candidate correct_parent(const Task& t, const std::string& device) {
  Candidate p;
  p.id = 3;
  p.source = t.seed_source;
  p.verdict.status = Status::correct;
  p.verdict.speedup = 1.02;
  p.verdict.cand_median_ns = 3300000;
  p.verdict.ref_median_ns = 3366000;
  p.verdict.cand_iqr_ns = 9000;
  p.verdict.device = device;
  p.verdict.feedback = "Correct. Median time 3.3e+03 us vs reference 3.37e+03 us: speedup 1.02x (IQR 9 us, 40 repeats).";
  return p;
}

struct Request {
  Rng rng{1};
  OperatorRequest req;
  Candidate inspiration;
  Request(const Task& t, const Candidate& parent) {
    req.id = 9;
    req.task = &t;
    req.parents = {&parent};
    req.feedback = parent.verdict.feedback;
    req.rng = &rng;
    inspiration = parent;
    inspiration.id = 4;
    req.inspirations = {&inspiration};
  }
};

std::shared_ptr<Service> torch_service(const std::string& device, const std::string& url = "http://127.0.0.1:9") {
  auto svc = std::make_shared<Service>(test::service_config(url, "openai-compatible", {{"hardware", ""}}));
  if (!device.empty()) svc->set_device("torch", device);
  return svc;
}

TEST(LlmTorchPrompts, TheCandidateFormTheRulesAndTheDevice) {
  const Task& t = torch_task("torch_softmax");
  for (const std::string device : {"cuda", "cpu"}) {
    auto svc = torch_service(device);
    const Candidate parent = correct_parent(t, device == "cuda" ? "NVIDIA H200 (132 SMs)" : "");
    Request r(t, parent);
    const auto slots = prompt_slots(r.req, *svc, 2);
    const std::string system = svc->prompt("system_torch").render(slots);
    for (const char* rule : {"class ModelNew(nn.Module)", "get_init_inputs()", "RAW-POINTER CUDA", "cpp_sources",
                             "torch::empty", "load_inline arguments must be constants", "math, typing",
                             "`getattr`", "torch.compile", "torch.backends", "triton.autotune", "`global`",
                             "exact type `torch.Tensor`", "sharing no memory", "no TF32", "not yet\n    reliable: CUDA through load_inline is the safer choice",
                             "0.9 x this floor", "eager PyTorch", "none: every one its forward calls must be replaced"})
      EXPECT_NE(system.find(rule), std::string::npos) << device << ": " << rule << "\n" << system;
    EXPECT_EQ(system.find("{{"), std::string::npos);
    if (device == "cuda") {
      for (const char* fact : {"one GPU (backend.torch.device \"cuda\")", "NVIDIA H200 (compute capability 9.0",
                               "4800 GB/s", "rows=1024,cols=4096: 2.097e+07 FLOP, 3.355e+07 bytes", "memory-bound",
                               "3.300 ms over these shapes, is 472.07x the floor"})
        EXPECT_NE(system.find(fact), std::string::npos) << fact << "\n" << system;
    } else {
      EXPECT_NE(system.find("the CPU (backend.torch.device \"cpu\")"), std::string::npos) << system;
      EXPECT_NE(system.find("rows=1024,cols=4096: 2.097e+07 FLOP, 3.355e+07 bytes"), std::string::npos) << system;
      EXPECT_EQ(system.find("floor max("), std::string::npos) << system;
      EXPECT_EQ(system.find("H200"), std::string::npos) << system;
    }
    // The user prompt: the reference program, the sizes, the visible shape,
    // the parent and an inspiration, all as Python.
    const std::string rewrite = svc->prompt("rewrite", "torch").render(slots);
    EXPECT_NE(rewrite.find("```python\n" + t.reference_source + "```"), std::string::npos) << rewrite;
    EXPECT_NE(rewrite.find("```python\n" + t.seed_source + "```"), std::string::npos) << rewrite;
    EXPECT_NE(rewrite.find("Candidate 4 (status correct"), std::string::npos) << rewrite;
    EXPECT_EQ(rewrite.find("```cpp"), std::string::npos) << rewrite;
    EXPECT_NE(rewrite.find("Sizes: rows, cols (globals of the reference module"), std::string::npos) << rewrite;
    EXPECT_NE(rewrite.find("- rows=1024,cols=4096"), std::string::npos) << rewrite;
    EXPECT_EQ(rewrite.find("// kevo:params"), std::string::npos) << rewrite;
    EXPECT_NE(rewrite.find("Keep the `# kevo:params` block"), std::string::npos) << rewrite;
    EXPECT_NE(system.find("Search space of this task's parameters:\n(no parameters)"), std::string::npos) << system;
  }
}

// A torch task with a search space: the system prompt lists it, the
// parameter hint shows the program as Python, and the hinted child is the
// parent with its "# kevo:params" block rewritten where it stands.
TEST(LlmTorchPrompts, ASearchSpaceIsShownAndAHintRewritesThePythonBlockInPlace) {
  static const Task t = load_task(kSource / "tests/torch/tasks/params_softmax");
  test::FakeServer s(json{{"log_content", true}, {"sequence", {{{"kind", "param_hint"}}, {{"kind", "param_hint"}}}}});
  ASSERT_TRUE(s.up());
  auto svc = std::make_shared<Service>(test::service_config(s.url(), "openai-compatible", {{"hardware", ""}}));
  svc->set_device("torch", "cpu");
  Candidate parent = correct_parent(t, "");
  parent.point = t.seed_point;
  Request r(t, parent);
  const auto slots = prompt_slots(r.req, *svc, 0);
  const std::string system = svc->prompt("system_torch").render(slots);
  EXPECT_NE(system.find("Search space of this task's parameters:\n- CHUNK: [1, 16, 64, 1024]\n- SHIFT: [max, none]\n"
                        "- restriction: CHUNK >= 16 || SHIFT == \"max\"\n"),
            std::string::npos)
      << system;
  const std::string hint = svc->prompt("param_hint", "torch").render(slots);
  EXPECT_NE(hint.find("```python\n" + t.seed_source + "```"), std::string::npos) << hint;
  EXPECT_EQ(hint.find("```cpp"), std::string::npos) << hint;

  LlmOperator op("llm_param_hint", svc, {Kind::param_hint});
  // The fake server's first hint is CHUNK 1 with SHIFT none, which the
  // restriction excludes: the parent's point is kept, saying why.
  const auto refused = test::await_outcome(op, r.req);
  ASSERT_TRUE(refused.proposal) << refused.failure;
  EXPECT_EQ(refused.proposal->point, t.seed_point);
  EXPECT_NE(refused.proposal->note.find("invalid parameter hint"), std::string::npos) << refused.proposal->note;
  r.req.id = 10;
  const auto out = test::await_outcome(op, r.req);
  ASSERT_TRUE(out.proposal) << out.failure;
  ASSERT_TRUE(out.proposal->point);
  EXPECT_TRUE(t.space.valid(*out.proposal->point));
  EXPECT_NE(*out.proposal->point, *t.seed_point);
  const std::string& child = out.proposal->source;
  EXPECT_EQ(child, apply_point(t.space, *out.proposal->point, t.seed_source));
  EXPECT_EQ(point_from_source(t.space, child), out.proposal->point);
  // The docstring and the __future__ import still come first.
  EXPECT_EQ(child.rfind("\"\"\"Row softmax", 0), 0u) << child;
  EXPECT_LT(child.find("from __future__ import annotations"), child.find("# kevo:params begin")) << child;
}

TEST(LlmTorchPrompts, AnAllowListIsStated) {
  const Task& t = torch_task("torch_linear_gelu");
  const std::string text = libraries_text(t);
  EXPECT_NE(text.find("only aten::addmm, aten::mm, aten::linear, aten::matmul"), std::string::npos) << text;
  EXPECT_NE(text.find("cuBLAS"), std::string::npos) << text;
}

TEST(LlmTorchPrompts, HiddenShapesNeverAppear) {
  auto svc = torch_service("cuda");
  for (const auto& dir : find_task_dirs(kSource / "configs/tasks/torch")) {
    const Task& t = torch_task(dir.filename().string());
    std::string all;
    for (Status status : {Status::correct, Status::wrong_answer, Status::compile_error, Status::runtime_error,
                          Status::forbidden}) {
      Candidate parent = correct_parent(t, "NVIDIA H200 (132 SMs)");
      parent.verdict.status = status;
      Candidate second = parent;
      Request r(t, parent);
      r.req.parents.push_back(&second);
      auto slots = prompt_slots(r.req, *svc, 2);
      // The GPU's own figures ("at most 255 registers per thread") are no shapes.
      slots["hardware"] = "";
      all += svc->prompt("system_torch").render(slots);
      for (const char* name : {"rewrite", "diff", "crossover", "analyst", "fix"})
        all += svc->prompt(name, "torch").render(slots);
    }
    EXPECT_EQ(all.find("{{"), std::string::npos);
    for (const auto& h : t.hidden) {
      EXPECT_EQ(all.find(h.label), std::string::npos) << t.name << ": " << h.label;
      for (const auto& [dim, v] : h.dims)
        if (v >= 100)
          EXPECT_FALSE(std::regex_search(all, std::regex("\\b" + std::to_string(v) + "\\b"))) << t.name << ": " << v;
    }
  }
}

TEST(LlmTorchPrompts, TheTorchTemplatesServeTorchTasksOnly) {
  Service svc(test::service_config("http://127.0.0.1:9"));
  const Task& t = torch_task("torch_softmax");
  Candidate parent = correct_parent(t, "");
  Request r(t, parent);
  const auto slots = prompt_slots(r.req, svc, 2);
  for (const char* name : {"rewrite", "diff", "crossover", "analyst", "fix"}) {
    const std::string torch = svc.prompt(name, "torch").render(slots);
    EXPECT_NE(torch.find("```python"), std::string::npos) << name;
    EXPECT_NE(torch.find("ModelNew"), std::string::npos) << name;
    EXPECT_EQ(svc.prompt(name, "cpu").render(slots).find("ModelNew's interface"), std::string::npos) << name;
  }
}

// ---- knowledge -------------------------------------------------------------

std::string first_title(const std::string& knowledge) {
  const auto at = knowledge.find("### ");
  if (at == std::string::npos) return "";
  return knowledge.substr(at + 4, knowledge.find('\n', at) - at - 4);
}

TEST(LlmTorchKnowledge, FailuresRetrieveTheirSnippetFirst) {
  auto svc = torch_service("cpu");
  const Task& t = torch_task("torch_softmax");
  struct Case {
    std::string feedback;
    Status status;
    std::string title;
  };
  const std::vector<Case> cases = {
      // As the build stage reports it (g++'s own quotes).
      {"Compilation failed: the compile command exited with 1\ng++ on load_inline 'rows_ext' (cpp_sources) failed "
       "(exit 1):\nmain.cpp: In function \u2018at::Tensor rows_forward(at::Tensor)\u2019:\nmain.cpp:25:5: error: "
       "\u2018rows_softmax_launch\u2019 was not declared in this scope\n   25 |     rows_softmax_launch(in, out, rows);\n"
       "      |     ^~~~~~~~~~~~~~~~~~~\n",
       Status::compile_error, "'k_launch' was not declared"},
      {"Compilation failed: the compile command exited with 1\ncandidate.py:4:15: SyntaxError: '(' was never closed\n"
       "kevo_broken = (1,\n",
       Status::compile_error, "SyntaxError"},
      {"Compilation failed: the compile command exited with 1\ncandidate.py:12: load_inline arguments must be constants "
       "(string literals, concatenations of them, or module-level names bound once to such values); this one is "
       "computed at run time\n",
       Status::compile_error, "load_inline arguments must be constants"},
      {"Failed (forbidden): the candidate calls aten::_softmax, the reference's own operation that this task asks to "
       "replace.",
       Status::forbidden, "Forbidden: the candidate calls aten::X"},
      {"Failed (runtime_error): forward raised at rows=1024,cols=4096 trial 1: RuntimeError: shape '[-1, 4097]' is "
       "invalid for input of size 4194304.\n  File \"candidate.py\", line 10, in forward\nRuntimeError: shape '[-1, "
       "4097]' is invalid for input of size 4194304",
       Status::runtime_error, "Runtime error: forward raised"},
      {"Wrong answer: output 0 differs from the reference at rows=1024,cols=4096 stress large-mean: [0, 0] expected "
       "0.000547870644, got nan (4194304 elements wrong; max abs error nan).",
       Status::wrong_answer, "Wrong answer: differs only on a stress trial"},
  };
  for (const auto& c : cases) {
    const std::string k = svc->knowledge_text(t, c.feedback, c.status);
    EXPECT_NE(first_title(k).find(c.title), std::string::npos) << c.title << ": " << first_title(k);
    if (c.status != Status::compile_error) EXPECT_EQ(k.find("### Compile error"), std::string::npos) << k;
  }
}

TEST(LlmTorchKnowledge, EverySnippetFitsTheDefaultBudget) {
  Knowledge k;
  k.add_file(kSource / "configs/knowledge/torch.md");
  ASSERT_GE(k.size(), 25u);
  std::ifstream in(kSource / "configs/knowledge/torch.md");
  const std::string text(std::istreambuf_iterator<char>(in), {});
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

// ---- the repair loop -------------------------------------------------------

// A torch candidate whose forward raised is repaired (a C task's runtime
// error is not), and the repair prompt carries the traceback.
TEST(LlmTorchOperators, FixRepairsATracebackOfATorchTask) {
  test::FakeServer s(json{{"default", {{"kind", "auto"}}}});
  ASSERT_TRUE(s.up());
  auto svc = std::make_shared<Service>(test::service_config(s.url()));
  const Task& t = torch_task("torch_softmax");
  Candidate parent = correct_parent(t, "");
  parent.task = 0;
  Rng rng(5);
  OperatorRequest req;
  req.task = &t;
  req.parents = {&parent};
  req.rng = &rng;
  LlmOperator rewrite("llm_rewrite", svc, {Kind::rewrite});
  LlmOperator fix("llm_fix", svc, {Kind::fix});
  req.id = 11;
  const auto made = test::await_outcome(rewrite, req);   // the rotation's first: a correct rewrite
  ASSERT_TRUE(made.proposal) << made.failure;
  EXPECT_NE(made.proposal->source.find("class ModelNew"), std::string::npos);
  // The fix operator has seen the task (its first request), then observes
  // the candidate judged a runtime error.
  req.id = 12;
  const auto plain = test::await_outcome(fix, req);
  EXPECT_EQ(json::parse(plain.llm)[0]["purpose"], "generate");
  Candidate failed;
  failed.id = 11;
  failed.task = 0;
  failed.op = "llm_rewrite";
  failed.source = made.proposal->source;
  failed.llm = made.llm;
  failed.verdict.status = Status::runtime_error;
  failed.verdict.feedback =
      "Failed (runtime_error): forward raised at rows=1024,cols=4096 trial 1: RuntimeError: shape '[-1, 4097]' is "
      "invalid.\n  File \"candidate.py\", line 10, in forward\nRuntimeError: shape '[-1, 4097]' is invalid";
  fix.observe(failed);
  req.id = 13;
  const auto repaired = test::await_outcome(fix, req);
  ASSERT_TRUE(repaired.proposal) << repaired.failure;
  EXPECT_NE(repaired.proposal->note.find("repair 1 of candidate 11"), std::string::npos) << repaired.proposal->note;
  const auto rec = json::parse(repaired.llm);
  EXPECT_EQ(rec[0]["purpose"], "repair");
  const std::string prompt = rec[0]["prompt"].back()["content"].get<std::string>();
  EXPECT_NE(prompt.find("File \"candidate.py\", line 10, in forward"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("```python"), std::string::npos) << prompt;

  // A C task's runtime error is not queued: the fix operator rewrites.
  const Task c = load_task(kSource / "configs/tasks/cpu/reduce_sum");
  Candidate cparent;
  cparent.id = 20;
  cparent.task = 1;
  cparent.source = c.seed_source;
  cparent.verdict.status = Status::correct;
  OperatorRequest creq;
  creq.task = &c;
  creq.parents = {&cparent};
  creq.rng = &rng;
  Candidate crashed = failed;
  crashed.id = 21;
  crashed.task = 1;
  fix.observe(crashed);
  creq.id = 22;
  const auto crewrite = test::await_outcome(fix, creq);
  EXPECT_EQ(json::parse(crewrite.llm)[0]["purpose"], "generate");
}

// ---- the files a torch task needs, checked before a run ----------------------

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

std::optional<InputError> prepare_error(const FileCase& c, Kind kind) {
  try {
    c.service().prepare_backend("torch", templates_of(kind));
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

TEST(LlmTorchFiles, TheBundledFilesServeEveryOperatorOnTorch) {
  Service svc(test::service_config("http://127.0.0.1:9"));
  for (Kind k : {Kind::rewrite, Kind::diff, Kind::crossover, Kind::analyst, Kind::fix})
    EXPECT_NO_THROW(svc.prepare_backend("torch", templates_of(k)));
}

TEST(LlmTorchFiles, AMissingFileIsAnInputErrorNamingIt) {
  for (const auto& [file, key] : std::vector<std::pair<std::string, std::string>>{
           {"prompts/system_torch.md", "/llm/prompts_dir"}, {"knowledge/torch.md", "/llm/knowledge_dir"}}) {
    FileCase c;
    fs::remove(c.dir.path() / file);
    const auto e = prepare_error(c, Kind::rewrite);
    ASSERT_TRUE(e) << "no error without " << file;
    EXPECT_EQ(e->key(), key);
    EXPECT_NE(e->expected().find((c.dir.path() / file).string() + " does not exist"), std::string::npos)
        << e->expected();
    EXPECT_NE(e->expected().find("backend 'torch'"), std::string::npos) << e->expected();
  }
  // A broken torch template fails the operators that render it.
  FileCase c;
  c.dir.write("prompts/fix_torch.md", "Fix {{no_such_slot}}\n");
  const auto e = prepare_error(c, Kind::fix);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file(), (c.dir.path() / "prompts/fix_torch.md").string());
  EXPECT_FALSE(prepare_error(c, Kind::diff));
}

}  // namespace
}  // namespace kevo
