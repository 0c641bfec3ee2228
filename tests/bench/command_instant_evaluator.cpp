// An evaluator that answers kevo's command protocol at once, for
// kevo_bench_command: what the command backend costs per candidate beyond
// the evaluator's own time. It judges by the marker the bench's sources
// carry (KEVO_TEST_CORRECT: correct, with shape_timings; none: a compile
// error; null candidates: wrong), and writes "self_ns N" on stderr per
// request: its time from having the request (one-shot: from main()) to
// its flushed result. Mode "run" (backend.command.judge = "kevo"): every
// float32 out/inout buffer becomes the element-wise sum of the in
// buffers, read from kevo's in file and written to its out file.
//
// Usage: kevo_command_instant_evaluator [--serve]
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void answer(const std::string& line, Clock::time_point t0) {
  const nlohmann::json r = nlohmann::json::parse(line);
  const std::string nonce = r.at("nonce");
  const std::string mode = r.at("mode");
  nlohmann::json verdict, timings = nlohmann::json::array();
  std::string first_out, first_shape = r["task"]["shapes"][0]["label"];
  for (const auto& a : r["task"]["args"])
    if (first_out.empty() && (a["role"] == "out" || a["role"] == "inout")) first_out = a["name"];
  bool correct = mode == "self_check" || (mode == "run" && r["program"] == "reference");
  if (mode == "judge" || (mode == "run" && r["program"] == "candidate")) {
    std::ifstream in(r["candidate"]["source"].get<std::string>());
    std::stringstream ss;
    ss << in.rdbuf();
    correct = ss.str().find("KEVO_TEST_CORRECT") != std::string::npos;
    if (!correct) verdict = {{"status", "compile_error"}, {"message", "does not build"}};
  }
  if (mode == "run") {
    if (correct) {
      // The out file has the in file's layout: every buffer at its offset.
      std::ifstream in(r["files"]["in"].get<std::string>(), std::ios::binary);
      std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (const auto& call : r["calls"]) {
        std::vector<const float*> ins;
        std::vector<std::size_t> lens;
        for (const auto& a : r["task"]["args"]) {
          if (a["role"] == "scalar") continue;
          const auto& place = call["args"][a["name"].get<std::string>()];
          float* p = reinterpret_cast<float*>(data.data() + place["offset"].get<std::size_t>());
          const std::size_t n = place["bytes"].get<std::size_t>() / sizeof(float);
          if (a["role"] == "in") {
            ins.push_back(p);
            lens.push_back(n);
            continue;
          }
          for (std::size_t i = 0; i < n; ++i) {
            float s = 0.0f;
            for (std::size_t k = 0; k < ins.size(); ++k)
              if (lens[k]) s += ins[k][i % lens[k]];
            p[i] = s;
          }
        }
      }
      std::ofstream out(r["files"]["out"].get<std::string>(), std::ios::binary | std::ios::trunc);
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
    }
  }
  if (mode == "null")
    verdict = {{"status", "wrong_answer"},
               {"message", "differs"},
               {"mismatch", {{"arg", first_out}, {"shape", first_shape}, {"trial", "trial 1"}}}};
  if (correct) {
    verdict = {{"status", "correct"}, {"message", "correct"}};
    if (r["timing"].get<bool>())
      for (const auto& s : r["task"]["shapes"])
        if (s["kind"] == "visible")
          timings.push_back({{"shape", s["label"]},
                             {"cand_median_ns", 1000.0},
                             {"cand_iqr_ns", 10.0},
                             {"ref_median_ns", 2000.0},
                             {"ref_iqr_ns", 20.0},
                             {"repeats", 5}});
  }
  nlohmann::json res = {{"nonce", nonce}, {"event", "result"}, {"verdict", verdict}};
  if (!timings.empty()) res["shape_timings"] = timings;
  const std::string out = res.dump() + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "self_ns %.0f\n", std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  const bool serve = argc > 1 && std::strcmp(argv[1], "--serve") == 0;
  std::string line;
  if (!serve) {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    answer(ss.str(), start);
    return 0;
  }
  while (std::getline(std::cin, line)) {
    const auto t0 = Clock::now();
    if (!line.empty()) answer(line, t0);
  }
  return 0;
}
