#include "kevo/engine/resume.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/search_space.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/engine/checkpoint.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"

#include "kevo/engine/run.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string_view>

namespace kevo::engine {
namespace fs = std::filesystem;

namespace {

bool judged(Status s) { return s != Status::duplicate && s != Status::invalid && s != Status::lost; }

}  // namespace

MigrationHistory migration_history(const std::vector<lineage::LineageReader>& readers, int rank) {
  MigrationHistory h;
  for (const auto& rd : readers) {
    for (const auto& row : rd.rows()) {
      if (!row.written() || row.status != Status::correct) continue;
      if (row.origin_rank == row.rank)
        h.origins.emplace(row.id, row.origin_rank);
      else
        h.reached.emplace(row.id, row.rank);   // a migrant's copy: it reached this file's rank
      if (row.rank == rank) h.recorded.insert(row.id);
    }
    // Events also name sends whose arrival a kill kept out of the receiver's
    // file, and the sender of each arrival (which has the candidate).
    const auto& events = rd.events();
    const auto& file_ranks = rd.event_ranks();
    for (std::size_t k = 0; k < events.size(); ++k) {
      const auto& e = events[k];
      if (e.id < 0) continue;
      const auto id = static_cast<std::uint64_t>(e.id);
      if (e.kind == lineage::EventKind::migration_out && e.to_rank >= 0) {
        h.reached.emplace(id, e.to_rank);
      } else if (e.kind == lineage::EventKind::migration_in) {
        h.reached.emplace(id, k < file_ranks.size() ? file_ranks[k] : rd.run().rank);
        if (e.from_rank >= 0) h.reached.emplace(id, e.from_rank);
      }
    }
  }
  return h;
}

Prior Prior::none(std::size_t tasks, std::size_t local) {
  Prior p;
  p.spent.assign(tasks, 0);
  p.members.resize(local);
  p.seen.resize(local);
  p.requeue.resize(local);
  return p;
}

Prior read_prior(const fs::path& run_dir, const std::vector<std::string>& names,
                 const std::vector<std::shared_ptr<const Task>>& all_tasks, const std::vector<std::uint32_t>& local,
                 int rank, int ranks, int group_rank, int group_size, int population) {
  Prior p;
  p.spent.assign(names.size(), 0);
  p.members.resize(local.size());
  p.seen.resize(local.size());
  std::map<std::string, std::uint32_t> index;
  for (std::uint32_t g = 0; g < names.size(); ++g) index[names[g]] = g;
  const auto readers = lineage::read_run_dir(run_dir);
  std::uint64_t max_id = 0;
  bool any = false;
  std::set<std::uint64_t> ids;
  struct Ref {
    double fitness;
    std::uint64_t id;
    std::size_t reader;
    std::size_t row;
  };
  std::vector<std::vector<Ref>> correct(names.size());
  std::vector<std::vector<Ref>> lost_refs(local.size());
  // What the island replays (docs/islands.md#checkpoint-and-resume). With the rank count
  // unchanged, rank r's island committed exactly the rows of rank r's file
  // that it created (a migrant's copy was not committed there), in file
  // order: replayed in that order, its operators end in the state they had.
  // With another rank count no island of the earlier sessions matches this
  // one: it replays every rank's own rows of its tasks, in id order.
  for (const auto& rd : readers) p.old_ranks = std::max<std::int64_t>(p.old_ranks, rd.run().nranks);
  p.migrations = migration_history(readers, rank);
  const bool same_ranks = p.old_ranks == ranks;
  struct PastRef {
    std::size_t row;
    std::uint32_t local;
    bool here;
  };
  std::vector<std::vector<PastRef>> past(readers.size());
  for (std::size_t r = 0; r < readers.size(); ++r) {
    const auto& rd = readers[r];
    for (const auto& e : rd.events())
      if (e.kind == lineage::EventKind::llm) p.llm_records.push_back(e.text);
    const auto& fnames = rd.run().tasks;
    for (std::size_t k = 0; k < rd.rows().size(); ++k) {
      const auto& row = rd.rows()[k];
      if (!row.written()) continue;
      ids.insert(row.id);
      max_id = std::max(max_id, row.id);
      any = true;
      if (row.task >= fnames.size()) continue;
      const auto it = index.find(fnames[row.task]);
      if (it == index.end()) continue;   // a task the resumed config no longer has
      const std::uint32_t g = it->second;
      const auto li = std::find(local.begin(), local.end(), g);
      // Work lost at a stop or a kill was never judged: its source may be
      // proposed and judged again, and the stop's own lost children are
      // proposed again first (Prior::requeue).
      if (li != local.end() && row.status == Status::lost) {
        if (row.origin_rank == row.rank && row.source != lineage::kNoText && std::string_view(row.op) != "seed")
          lost_refs[static_cast<std::size_t>(li - local.begin())].push_back({0.0, row.id, r, k});
        continue;
      }
      if (li != local.end()) {
        p.seen[static_cast<std::size_t>(li - local.begin())].emplace_back(row.hash, row.id);
        const bool own = row.origin_rank == row.rank;
        past[r].push_back({k, static_cast<std::uint32_t>(li - local.begin()), own && (!same_ranks || row.rank == rank)});
      }
      if (row.origin_rank != row.rank) continue;   // a migrant's copy: counted where it was made
      if (judged(row.status)) ++p.spent[g];
      if (row.status == Status::correct) correct[g].push_back({row.speedup, row.id, r, k});
    }
  }
  // Checkpoints: id reservations and ids in flight.
  std::uint64_t reserved = 0;
  for (int r = 0; r < std::max<std::int64_t>(p.old_ranks, 1); ++r) {
    const auto f = checkpoint_file(run_dir, r);
    if (!fs::exists(f)) continue;
    nlohmann::json j;
    try {
      j = read_json_file(f.string());
    } catch (const std::exception&) {
      continue;   // written atomically: only a foreign file can be unreadable
    }
    reserved = std::max(reserved, j.value("reserved_id", std::uint64_t{0}));
    for (const auto& x : j.value("in_flight", nlohmann::json::array())) {
      const auto id = x.at("id").get<std::uint64_t>();
      const auto it = index.find(x.at("task").get<std::string>());
      if (ids.count(id) || it == index.end()) continue;
      p.lost.push_back({id, it->second, r});
      ids.insert(id);
      max_id = std::max(max_id, id);
    }
  }
  p.base = std::max(any ? max_id + 1 : 0, reserved + 1);
  // The history: hashes and points need the sources (read in batches, one
  // file visit each, and dropped once hashed).
  constexpr std::size_t kBatch = 4096;
  for (std::size_t r = 0; r < readers.size(); ++r) {
    const auto& rows = readers[r].rows();
    for (std::size_t at = 0; at < past[r].size(); at += kBatch) {
      const std::size_t end = std::min(past[r].size(), at + kBatch);
      std::vector<std::int64_t> refs;
      for (std::size_t k = at; k < end; ++k) refs.push_back(rows[past[r][k].row].source);
      const auto sources = readers[r].texts(refs);
      for (std::size_t k = at; k < end; ++k) {
        const auto& row = rows[past[r][k].row];
        Prior::Past x;
        x.here = past[r][k].here;
        x.c = lineage::LineageReader::without_texts(row);
        Candidate& c = x.c;
        c.task = past[r][k].local;   // this run's task index
        const std::string& source = sources[k - at];
        if (!source.empty()) {
          const Task& task = *all_tasks[local[c.task]];
          c.body_hash = source_hashes(source, task.syntax()).body;
          c.point = point_from_source(all_tasks[local[c.task]]->space, source);
        }
        p.history.push_back(std::move(x));
      }
    }
  }
  if (!same_ranks)
    std::stable_sort(p.history.begin(), p.history.end(),
                     [](const Prior::Past& a, const Prior::Past& b) { return a.c.id < b.c.id; });
  // This rank's share of each task's correct candidates: the best of all,
  // dealt round-robin over the group so islands start different.
  for (std::size_t li = 0; li < local.size(); ++li) {
    auto& refs = correct[local[li]];
    std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
      return a.fitness != b.fitness ? a.fitness > b.fitness : a.id < b.id;
    });
    std::vector<Ref> mine;
    for (std::size_t k = static_cast<std::size_t>(group_rank); k < refs.size() && mine.size() < static_cast<std::size_t>(population);
         k += static_cast<std::size_t>(group_size))
      mine.push_back(refs[k]);
    if (mine.empty())
      for (std::size_t k = 0; k < refs.size() && mine.size() < static_cast<std::size_t>(population); ++k) mine.push_back(refs[k]);
    std::map<std::size_t, std::vector<lineage::Row>> by_reader;
    for (const auto& m : mine) by_reader[m.reader].push_back(readers[m.reader].rows()[m.row]);
    for (auto& [r, rows] : by_reader)
      for (auto& c : readers[r].candidates(rows)) {
        const Task& task = *all_tasks[local[li]];
        c.point = point_from_source(task.space, c.source);
        p.members[li].push_back(std::move(c));
      }
  }
  // The lost children of this rank's tasks, in id order, dealt over the
  // group like the members.
  p.requeue.resize(local.size());
  for (std::size_t li = 0; li < local.size(); ++li) {
    auto& refs = lost_refs[li];
    std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.id < b.id; });
    std::map<std::size_t, std::vector<lineage::Row>> by_reader;
    for (std::size_t k = static_cast<std::size_t>(group_rank); k < refs.size(); k += static_cast<std::size_t>(group_size))
      by_reader[refs[k].reader].push_back(readers[refs[k].reader].rows()[refs[k].row]);
    for (auto& [r, rows] : by_reader)
      for (auto& c : readers[r].candidates(rows)) {
        c.point = point_from_source(all_tasks[local[li]]->space, c.source);
        p.requeue[li].push_back(std::move(c));
      }
    std::sort(p.requeue[li].begin(), p.requeue[li].end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  }
  return p;
}

// Writes the lost rows into rank 0's file (before its writer opens it).
void record_lost(const fs::path& file, const std::vector<Prior::Lost>& lost, int flush_records) {
  if (lost.empty() || !fs::exists(file)) return;
  lineage::WriterOptions opts;
  opts.flush_records = static_cast<std::size_t>(flush_records);
  auto w = lineage::LineageWriter::open_append(file, opts);
  for (const auto& l : lost) {
    Candidate c;
    c.id = l.id;
    c.task = l.task;
    c.op = "unknown";
    c.verdict.status = Status::lost;
    c.verdict.message = fmt::format("in flight on rank {} when the run was killed; recorded on resume", l.rank);
    c.t_created = c.t_finished = unix_now();
    w.append(c);
  }
  w.close();
}

}  // namespace kevo::engine
