#include "kevo/mpi/run_islands.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/lineage_sink.hpp"
#include "kevo/engine/report.hpp"
#include "kevo/engine/run.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"
#include "kevo/mpi/network.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kevo::mpi {
namespace fs = std::filesystem;

namespace {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

fs::path checkpoint_file(const fs::path& run_dir, int rank) {
  return run_dir / "checkpoint" / fmt::format("rank-{:04d}.json", rank);
}

// Ids reserved ahead by a checkpoint (in units of the id stride): a resumed
// run starts above every reservation, so an id created after the last
// flush and lost with the process is never handed out again either.
constexpr std::uint64_t kReserveAhead = 1 << 16;

// Writes RUN_DIR/checkpoint/rank-NNNN.json (atomically): the id state and the
// ids in flight, every checkpoint_seconds and whenever the id reservation
// runs low; wraps the network hook of a multi-rank run.
class CheckpointHook final : public engine::IslandHook {
 public:
  CheckpointHook(fs::path file, int rank, int ranks, std::uint64_t stride, double period,
                 std::vector<std::string> task_names, std::vector<std::uint32_t> task_map, engine::IslandHook* inner)
      : file_(std::move(file)), rank_(rank), ranks_(ranks), stride_(stride), period_(period),
        names_(std::move(task_names)), map_(std::move(task_map)), inner_(inner) {}

  int poll(engine::Island& island) override {
    int level = inner_ ? inner_->poll(island) : 0;
    // A plugin budget (LLM tokens/USD) spent for the whole run stops the
    // run like a signal: drain, record, resumable.
    for (const auto& b : budgets)
      if (stop_reason.empty() && b->exhausted() && b->stop_when_exhausted()) {
        stop_reason = b->summary();
        island.record_event(engine::LineageSink::EventKind::note, -1, rank_, -1, "stop: " + stop_reason);
      }
    if (!stop_reason.empty()) level = std::max(level, 1);
    if (island.next_id() + stride_ * (kReserveAhead / 4) > reserved_ || steady() - last_ >= period_)
      write(island, false, level > 0);
    return level;
  }

  nlohmann::json extra = nlohmann::json::object();   // added to the final checkpoint (costs)
  std::vector<std::shared_ptr<SharedBudget>> budgets;
  std::string stop_reason;                            // the budget that stopped the run, "" = none

  void write(engine::Island& island, bool final, bool stopped) {
    reserved_ = island.next_id() + stride_ * kReserveAhead;
    last_ = steady();
    nlohmann::json in_flight = nlohmann::json::array();
    for (const auto& [id, task] : island.in_flight_ids())
      in_flight.push_back({{"id", id}, {"task", names_.at(map_.empty() ? task : map_.at(task))}});
    nlohmann::json j = {{"format", "kevo-checkpoint/1"}, {"rank", rank_},       {"ranks", ranks_},
                              {"next_id", island.next_id()},   {"id_stride", stride_}, {"reserved_id", reserved_},
                              {"in_flight", in_flight},        {"time", unix_now()},   {"final", final},
                              {"stopped", stopped}};
    if (final && !extra.empty()) j["costs"] = extra;
    engine::write_file(file_, j.dump(1) + "\n");
    island.record_event(engine::LineageSink::EventKind::checkpoint, static_cast<std::int64_t>(island.next_id()), rank_,
                        -1, final ? "final" : "");
  }

 private:
  static double steady() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
  fs::path file_;
  int rank_, ranks_;
  std::uint64_t stride_;
  double period_;
  std::vector<std::string> names_;
  std::vector<std::uint32_t> map_;
  engine::IslandHook* inner_;
  std::uint64_t reserved_ = 0;
  double last_ = -1e18;
};

// What a resumed run takes over from the files of the runs before it.
struct Prior {
  std::uint64_t base = 0;                                  // first id of this session
  std::vector<std::int64_t> spent;                         // per task: evaluations recorded
  std::vector<std::vector<Candidate>> members;             // per local task: this rank's share of the correct ones
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> seen;   // per local task: (hash, id)
  struct Lost {
    std::uint64_t id;
    std::uint32_t task;
    std::int32_t rank;
  };
  std::vector<Lost> lost;                                  // in flight at the kill, never recorded
  std::vector<std::string> llm_records;                    // every rank's `llm` events (shared budgets)
  std::int64_t old_ranks = 0;
  MigrationHistory migrations;                             // what reached which rank, and every origin
  // Every recorded candidate of this rank's tasks (task: local index), for
  // Island::replay: `here` ones in the order this island committed them.
  struct Past {
    Candidate c;
    bool here = false;
  };
  std::vector<Past> history;
};

// An flock(2) on RUN_DIR/run.lock held by rank 0 for the whole run, so that
// `kevo resume` refuses a run directory a live run is still writing. The
// kernel drops it when the process dies, however it dies.
class RunLock {
 public:
  RunLock() = default;
  explicit RunLock(const fs::path& file) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Failure("cannot open " + file.string());
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fd_ = -1;
      throw InputError(file.parent_path().string(), "", "a run directory that no running kevo is writing (run.lock is held)");
    }
  }
  RunLock(RunLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RunLock& operator=(RunLock&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

bool judged(Status s) { return s != Status::duplicate && s != Status::invalid && s != Status::lost; }

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
          c.body_hash = source_hashes(source).body;
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

// Exports this rank's device (islands.device_binding) into the process
// environment, which every process the backend starts inherits: the
// compiler, the workers, the baselines. Returns the note that says which
// device the rank got ("" for device_binding none).
std::string bind_device(const engine::Config::Islands& is, int local) {
  if (is.device_binding == "none") return "";
  const int device = is.devices > 0 ? local % is.devices : local;
  const std::string head = fmt::format("device binding {}: local rank {} -> device {}", is.device_binding, local, device);
  if (is.device_binding != "cuda_visible_devices") {
    setenv("KEVO_DEVICE_INDEX", std::to_string(device).c_str(), 1);
    return head + fmt::format(" (KEVO_DEVICE_INDEX={})", device);
  }
  // Within the devices the scheduler gave this job (Slurm sets a list),
  // else the host's ordinals.
  std::vector<std::string> given;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    const std::string s = v;
    for (std::size_t at = 0; at <= s.size();) {
      const std::size_t comma = std::min(s.find(',', at), s.size());
      if (comma > at) given.push_back(s.substr(at, comma - at));
      at = comma + 1;
    }
  }
  if (given.empty()) {
    setenv("CUDA_VISIBLE_DEVICES", std::to_string(device).c_str(), 1);
    return head + fmt::format(" (CUDA_VISIBLE_DEVICES={})", device);
  }
  const std::size_t entry = static_cast<std::size_t>(local) % given.size();
  setenv("CUDA_VISIBLE_DEVICES", given[entry].c_str(), 1);
  return head + fmt::format(" (CUDA_VISIBLE_DEVICES={}: entry {} of the {} already visible)", given[entry], entry,
                            given.size());
}

}  // namespace

int local_rank(const Comm& node) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return node.rank();
}

int run_islands(Environment& env, const engine::Plugins& plugins, const IslandsRunArgs& args,
                const std::atomic<int>& stop) {
  const Comm world = Comm::world();
  const int rank = world.rank(), size = world.size();
  const bool resume = !args.resume_dir.empty();
  // The ranks on this host share its cores: the backends' default job
  // counts (compiles, workers, protocol threads) are per rank.
  const Comm node = world.split_shared();
  set_ranks_on_host(node.size());

  // 1. Rank 0 validates; everyone learns the outcome.
  std::string doc_text, file, run_dir_text, message;
  std::int64_t code = 0;
  engine::Config config;
  std::vector<std::shared_ptr<const Task>> tasks;
  RunLock lock;   // rank 0 only
  const int lrank = local_rank(node);
  std::string device_note;   // which device this rank got ("" = no binding)
  auto setup = [&](const nlohmann::json& doc) {
    // The device binding first: building the backend, preparing the tasks
    // (reference and null candidates), the baselines and the workers all
    // start processes, which must run on this rank's device.
    device_note = bind_device(engine::parse_islands(doc, file), lrank);
    config = engine::parse_config(doc, file, plugins);
    tasks = engine::load_tasks(config);
  };
  if (rank == 0) {
    try {
      fs::path run_dir;
      if (resume) {
        run_dir = args.resume_dir;
        if (!fs::is_directory(run_dir / "lineage"))
          throw InputError(args.resume_dir, "", "a run directory (holding lineage/ and config.json)");
        lock = RunLock(run_dir / "run.lock");
        file = (run_dir / "config.json").string();
      } else {
        file = args.config;
      }
      nlohmann::json doc = read_json_file(file);
      for (const auto& o : args.overrides) engine::apply_override(doc, o);
      setup(doc);
      if (!resume) {
        run_dir = args.out.empty() ? engine::default_run_dir(config) : fs::path(args.out);
        if (fs::exists(run_dir) && !(fs::is_directory(run_dir) && fs::is_empty(run_dir)))
          throw InputError("--out", run_dir.string(), "a new or empty directory (use another --out, or `kevo resume`)");
      }
      doc_text = doc.dump();
      run_dir_text = run_dir.string();
    } catch (const InputError& e) {
      code = 2;
      message = e.what();
    } catch (const std::exception& e) {
      code = 1;
      message = e.what();
    }
  }
  world.broadcast(code, 0);
  if (code != 0) {
    if (rank == 0)
      fmt::print(stderr, "kevo: {}: {}\n", code == 2 ? "error" : "failure", sanitize_utf8(message, kTerminalText));
    return static_cast<int>(code);
  }
  world.broadcast(doc_text, 0);
  world.broadcast(file, 0);
  world.broadcast(run_dir_text, 0);
  const fs::path run_dir = run_dir_text;
  if (rank != 0) {
    try {
      setup(nlohmann::json::parse(doc_text));
    } catch (const std::exception& e) {
      code = 1;
      fmt::print(stderr, "kevo: rank {}: failure: {}\n", rank, sanitize_utf8(e.what(), kTerminalText));
    }
  }
  if (world.allreduce_max(code) != 0) return 1;

  // 2. Task groups.
  std::vector<std::string> names;
  for (const auto& t : tasks) names.push_back(t->name);
  const int groups = std::max(1, std::min<int>(static_cast<int>(tasks.size()), size));
  const int color = rank % groups;
  const Comm group = world.split(color, rank);
  std::vector<std::uint32_t> local;
  std::vector<std::shared_ptr<const Task>> local_tasks;
  for (std::uint32_t t = 0; t < tasks.size(); ++t)
    if (static_cast<int>(t % static_cast<std::uint32_t>(groups)) == color) {
      local.push_back(t);
      local_tasks.push_back(tasks[t]);
    }
  bool identity = local.size() == tasks.size();
  const std::vector<std::uint32_t> task_map = identity ? std::vector<std::uint32_t>{} : local;

  // 3. The run directory (rank 0), then what a resume takes over (everyone
  // reads before anyone writes).
  if (rank == 0) {
    fs::create_directories(run_dir / "lineage");
    if (!resume) lock = RunLock(run_dir / "run.lock");
    fs::create_directories(run_dir / "best");
    fs::create_directories(run_dir / "checkpoint");
    engine::write_file(run_dir / "config.json", config.effective.dump(2) + "\n");
  }
  Prior prior;
  prior.spent.assign(tasks.size(), 0);
  prior.members.resize(local.size());
  prior.seen.resize(local.size());
  if (resume) {
    world.barrier();
    prior = read_prior(run_dir, names, tasks, local, rank, size, group.rank(), group.size(), config.island.population);
    // What the sessions before spent of the plugin budgets (LLM tokens/USD).
    const std::vector<std::string_view> records(prior.llm_records.begin(), prior.llm_records.end());
    for (const auto& b : config.shared_budgets) b->restore(records);
    prior.llm_records.clear();
  }
  world.barrier();
  if (resume && rank == 0) {
    record_lost(run_dir / "lineage" / lineage::rank_file_name(0), prior.lost, config.lineage.flush_records);
    // Files of ranks this session does not have: make them readable by every tool.
    for (std::int64_t r = size; r < prior.old_ranks; ++r) {
      const auto f = run_dir / "lineage" / lineage::rank_file_name(static_cast<int>(r));
      if (fs::exists(f)) lineage::recover(f);
    }
  }

  // Library baselines (docs/cuda.md#library-baselines): measured once, by
  // rank 0 on its device, before any island times a candidate; the other
  // ranks wait, so no timing overlaps them. A resume keeps the first ones.
  // Source baselines that ship with the tasks are judged by rank 0's backend.
  nlohmann::json baselines;
  if (config.baselines || engine::has_source_baselines(tasks)) {
    if (rank == 0 && !(resume && fs::exists(run_dir / "baselines.json")))
      baselines = engine::record_baselines(config.baselines, tasks, config.seed, run_dir, stderr, config.backend.get());
    world.barrier();
  }

  // 4. This rank's lineage.
  engine::RunAttributes attrs;
  attrs.config = config.effective;
  attrs.tasks = nlohmann::json::array();
  for (const auto& t : tasks) attrs.tasks.push_back(t->manifest);
  attrs.task_names = names;
  attrs.seed = config.seed;
  attrs.host = engine::host_name();
  attrs.start_time = unix_now();
  attrs.rank = rank;
  attrs.ranks = size;
  attrs.task_map = task_map;
  attrs.append = resume;
  auto sink = engine::open_hdf5_sink(run_dir / "lineage" / lineage::rank_file_name(rank), attrs,
                                     config.lineage.flush_records, config.lineage.flush_seconds);
  if (!device_note.empty()) sink->event(engine::LineageSink::EventKind::note, -1, rank, -1, device_note);
  // What the candidates' sandbox could not have on this machine (no user
  // namespaces, a container...): said at start, in the lineage and in
  // report.json, never silently (docs/sandbox.md#what-a-run-reports).
  if (const nlohmann::json g = config.backend->guarantees(); g.is_object() && !g.value("missing", nlohmann::json::array()).empty()) {
    std::string missing;
    for (const auto& m : g["missing"]) missing += (missing.empty() ? "" : "; ") + m.get<std::string>();
    if (rank == 0) fmt::print(stderr, "kevo: the candidates' sandbox lacks: {}\n", missing);
    sink->event(engine::LineageSink::EventKind::note, -1, rank, -1, "sandbox lacks: " + missing);
  }
  for (const auto& line : engine::baseline_notes(baselines))
    sink->event(engine::LineageSink::EventKind::note, -1, rank, -1, line);
  if (resume)
    sink->event(engine::LineageSink::EventKind::note, static_cast<std::int64_t>(prior.base), rank, -1,
                fmt::format("resumed with {} rank(s) (was {}); ids from {}; {} candidate(s) recorded as lost",
                            size, prior.old_ranks, prior.base, prior.lost.size()));

  // 5. The island.
  engine::ProgressView view(rank == 0 ? config.progress.mode : engine::ProgressMode::off,
                            config.progress.interval_seconds);
  std::unique_ptr<IslandNetwork> network;
  if (size > 1) {
    NetworkOptions no;
    no.islands = config.islands;
    no.seed = config.seed;
    no.all_tasks = names;
    for (auto t : local) no.local_to_global.push_back(static_cast<int>(t));
    no.budget = config.budget.evaluations_per_task;
    no.spent = prior.spent;
    no.history = std::move(prior.migrations);
    no.view = rank == 0 ? &view : nullptr;
    for (const auto& b : config.shared_budgets) no.budgets.push_back(b.get());
    network = std::make_unique<IslandNetwork>(world, group, std::move(no), stop);
  }
  CheckpointHook checkpoint(checkpoint_file(run_dir, rank), rank, size, static_cast<std::uint64_t>(size),
                            config.islands.checkpoint_seconds, names, task_map, network.get());
  checkpoint.budgets = config.shared_budgets;
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  opts.first_id = prior.base + static_cast<std::uint64_t>(rank);
  opts.id_stride = static_cast<std::uint64_t>(size);
  opts.hook = &checkpoint;
  engine::Island island(opts, local_tasks, *config.backend, config.operators, *sink);
  for (std::size_t i = 0; i < local.size(); ++i) {
    if (resume) island.restore(i, std::move(prior.members[i]), prior.seen[i], prior.spent[local[i]]);
  }
  for (const auto& x : prior.history) island.replay(x.c, x.here);
  prior.history.clear();
  if (network) network->start(island);
  island.run(stop, [&](const engine::IslandSnapshot& s) {
    if (!network) view.update(s);
  });
  const bool ok = network ? network->finish(island) : true;
  const auto snap = island.snapshot();
  if (!network) view.finish(snap);
  // A budget spent on another rank reaches this one through the rounds
  // (finish() keeps taking part in them until every rank is done).
  std::string budget_stop = checkpoint.stop_reason;
  for (const auto& b : config.shared_budgets)
    if (budget_stop.empty() && b->exhausted() && b->stop_when_exhausted()) budget_stop = b->summary();
  const bool stopped = stop.load() > 0 || (network && network->stop_level() > 0) || !budget_stop.empty();
  if (network) {
    // For the overhead benchmark (scripts/bench_islands.sh).
    const auto& c = network->costs();
    checkpoint.extra = {{"loop_seconds", snap.elapsed_seconds}, {"network_seconds", c.poll_seconds},
                        {"finish_seconds", c.finish_seconds}, {"polls", c.polls}, {"rounds", c.rounds},
                        {"network_cpu_seconds", c.poll_cpu_seconds}, {"loop_cpu_seconds", c.loop_cpu_seconds},
                        {"messages_sent", c.messages_sent}, {"migrants_sent", c.migrants_sent},
                        {"migrants_received", c.migrants_received}};
  }
  checkpoint.write(island, true, stopped || !ok);

  if (!ok) {
    // A rank is lost: what this rank has is flushed and checkpointed; leave
    // without MPI_Finalize, which could wait forever on the lost peer.
    sink.reset();
    fmt::print(stderr, "kevo: rank {}: lineage flushed and checkpointed; continue with `kevo resume {}`\n", rank,
               run_dir.string());
    std::fflush(stdout);
    std::fflush(stderr);
    env.skip_finalize();
    std::_Exit(1);
  }
  sink.reset();   // final flush and close, before rank 0 reads every file
  world.barrier();

  // 6. Results (rank 0): best kernels and the report, from every rank's lineage.
  if (rank == 0) {
    const auto report = engine::read_report(run_dir);
    const auto readers = lineage::read_run_dir(run_dir);
    for (const auto& row : report.rows) {
      if (row.best_id < 0) continue;
      const auto t = std::find(names.begin(), names.end(), row.task);
      if (t == names.end()) continue;
      for (const auto& rd : readers) {
        const auto* found = rd.find(static_cast<std::uint64_t>(row.best_id));
        if (!found || found->origin_rank != found->rank) continue;
        const Candidate c = rd.candidate(*found);
        engine::write_file(run_dir / "best" / (row.task + ".cpp"),
                           engine::best_file_text(*tasks[static_cast<std::size_t>(t - names.begin())], c));
        break;
      }
    }
    nlohmann::json rj = {{"run_dir", run_dir.string()},
                         {"tasks", engine::rows_to_json(report.rows)},
                         {"stopped", stopped},
                         {"stop_reason", !budget_stop.empty() ? budget_stop : stopped ? "signal" : ""},
                         {"elapsed_seconds", network ? network->global_snapshot().elapsed_seconds : snap.elapsed_seconds},
                         {"ranks", size}};
    if (!report.baselines.is_null()) rj["baselines"] = report.baselines;
    if (const nlohmann::json g = config.backend->guarantees(); !g.is_null()) rj["sandbox"] = g;
    engine::write_file(run_dir / "report.json", dump_json(rj, 2) + "\n");
    std::string table = "\n" + engine::format_table(report.rows);
    if (!report.baselines.is_null()) table += "\n" + engine::format_baselines(report.rows, report.baselines);
    fmt::print("{}", sanitize_utf8(table, kTerminalText));
    fmt::print("run directory: {}\n", run_dir.string());
    if (!budget_stop.empty())
      fmt::print("stopped: {}; everything judged so far is in the lineage (raise the budget and continue with "
                 "`kevo resume {} --set llm.budget.tokens=...`)\n",
                 budget_stop, run_dir.string());
    else if (stopped)
      fmt::print("stopped by a signal; everything judged so far is in the lineage (continue with `kevo resume {}`)\n",
                 run_dir.string());
  }
  return 0;
}

}  // namespace kevo::mpi
