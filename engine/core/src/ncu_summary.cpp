// ncu's raw CSV page condensed for a verdict and a prompt (the CUDA
// worker's profiles, and the torch judge's: docs/cuda.md#profiler-feedback,
// docs/torch.md#profiler).
#include "kevo/core/ncu_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace kevo {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// "1,234.5" -> 1234.5; NaN when not a number.
double number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  s = trim(s);
  if (s.empty()) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : std::nan("");
}

std::string fmt(double v) { return format_number(v); }

}  // namespace

std::string format_number(double v, int precision) {
  std::ostringstream o;
  o.precision(precision);
  o << v;
  return o.str();
}

std::string profile_reason(bool picked, int every, bool asked, const std::string& request) {
  if (picked)
    return every == 1 ? std::string("every timed candidate (profile.every 1)")
                      : "every " + std::to_string(every) + "-th timed candidate (profile.every)";
  return asked ? "requested by " + request : std::string();
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string ncu_summary(const std::string& csv) {
  // ncu prints "==PROF==" lines before the table; the table starts at the
  // header row whose first field is "ID", then a row of units.
  std::string table;
  {
    std::istringstream in(csv);
    bool on = false;
    for (std::string line; std::getline(in, line);) {
      if (!on && line.rfind("\"ID\"", 0) == 0) on = true;
      if (on && line.rfind("==", 0) != 0) table += line + "\n";
    }
  }
  const auto rows = parse_csv(table);
  if (rows.size() < 3) return "profiler: ncu profiled no kernel (did the candidate launch one?)";
  const auto& head = rows[0];
  const auto& units = rows[1];
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < head.size(); ++i) col.emplace(head[i], i);
  auto get = [&](const std::vector<std::string>& r, const std::string& name) -> std::string {
    auto it = col.find(name);
    return it != col.end() && it->second < r.size() ? r[it->second] : std::string();
  };
  auto num = [&](const std::vector<std::string>& r, const std::string& name) { return number(get(r, name)); };
  std::string out;
  const std::size_t kernels = rows.size() - 2;
  for (std::size_t k = 2; k < rows.size() && k < 5; ++k) {
    const auto& r = rows[k];
    std::string name = get(r, "Kernel Name");
    if (name.size() > 60) name = name.substr(0, 57) + "...";
    std::string s = "kernel " + name + " grid " + get(r, "Grid Size") + " block " + get(r, "Block Size");
    double t = num(r, "gpu__time_duration.sum");
    if (!std::isnan(t)) {
      // The units row is as ncu (or whatever wrote into its output: the
      // candidate's process can) made it: read within it.
      const std::string u = get(units, "gpu__time_duration.sum");
      if (u == "nsecond" || u == "ns") t /= 1e3;
      else if (u == "msecond" || u == "ms") t *= 1e3;
      else if (u == "second" || u == "s") t *= 1e6;
      s += ": " + fmt(t) + " us";
    }
    double dram = num(r, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
    if (std::isnan(dram)) dram = num(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    const double sm = num(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    const double mem = num(r, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    if (!std::isnan(dram)) s += "; DRAM " + fmt(dram) + "% of peak";
    if (!std::isnan(mem)) s += ", memory " + fmt(mem) + "%";
    if (!std::isnan(sm)) s += ", SM " + fmt(sm) + "% of peak";
    const double occ = num(r, "sm__warps_active.avg.pct_of_peak_sustained_active");
    const double theo = num(r, "sm__maximum_warps_per_active_cycle_pct");
    if (!std::isnan(occ)) {
      s += "; achieved occupancy " + fmt(occ) + "%";
      if (!std::isnan(theo)) s += " (theoretical " + fmt(theo) + "%)";
    }
    const double regs = num(r, "launch__registers_per_thread");
    if (!std::isnan(regs)) s += "; " + fmt(regs) + " registers/thread";
    const double ss = num(r, "launch__shared_mem_per_block_static"), sd = num(r, "launch__shared_mem_per_block_dynamic");
    if (!std::isnan(ss) || !std::isnan(sd)) {
      const double b = (std::isnan(ss) ? 0 : ss) + (std::isnan(sd) ? 0 : sd);
      const std::string u = get(units, "launch__shared_mem_per_block_static");
      const std::string unit = u.empty() ? "byte" : u;
      s += ", shared " + fmt(b) + " " + unit + (unit.find("/block") == std::string::npos ? "/block" : "");
    }
    // Warp stalls: cycles per issued instruction by reason; top three.
    std::vector<std::pair<double, std::string>> stalls;
    for (const auto& [name2, i] : col) {
      const auto at = name2.find("issue_stalled_");
      if (at == std::string::npos || name2.find("_per_issue_active.ratio") == std::string::npos) continue;
      if (name2.find("not_issued") != std::string::npos) continue;
      const double v = i < r.size() ? number(r[i]) : std::nan("");
      if (std::isnan(v) || v <= 0) continue;
      std::string reason = name2.substr(at + 14);
      reason = reason.substr(0, reason.find("_per_issue_active"));
      stalls.emplace_back(v, reason);
    }
    std::sort(stalls.begin(), stalls.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (!stalls.empty()) {
      s += "; top stalls (cycles per issued instruction):";
      for (std::size_t i = 0; i < stalls.size() && i < 3; ++i)
        s += std::string(i ? "," : "") + " " + stalls[i].second + " " + fmt(stalls[i].first);
    }
    out += (out.empty() ? "" : "\n") + s;
  }
  if (kernels > 3) out += "\n(" + std::to_string(kernels - 3) + " more kernel launch(es) profiled)";
  return out;
}

}  // namespace kevo
