#include "kevo/mpi/run_islands.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/checkpoint.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/lifecycle.hpp"
#include "kevo/engine/lineage_sink.hpp"
#include "kevo/engine/resume.hpp"
#include "kevo/engine/run.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/mpi/network.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace kevo::mpi {
namespace fs = std::filesystem;
using engine::Prior;

int local_rank(const Comm& node) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return node.rank();
}

namespace {

// A phase's outcome on one rank: 0 ok, 2 input error, 1 failure.
struct Outcome {
  std::int64_t code = 0;
  std::string message;
  template <class F>
  void attempt(F&& f) {
    try {
      f();
    } catch (const InputError& e) {
      code = 2;
      message = e.what();
    } catch (const std::exception& e) {
      code = 1;
      message = e.what();
    }
  }
};

// Every rank learns the worst outcome of a phase (2 before 1); rank 0 says
// its own, another rank only what rank 0 did not see. Returns the exit code
// (0: go on).
int agree(const Comm& world, const Outcome& mine) {
  std::int64_t worst = world.allreduce_max(mine.code);
  if (worst == 0) return 0;
  std::int64_t zero = world.rank() == 0 ? mine.code : 0;
  world.broadcast(zero, 0);
  if (mine.code != 0 && (world.rank() == 0 || zero == 0)) {
    const std::string who = world.rank() == 0 ? "" : fmt::format("rank {}: ", world.rank());
    fmt::print(stderr, "kevo: {}{}: {}\n", who, mine.code == 2 ? "error" : "failure",
               sanitize_utf8(mine.message, kTerminalText));
  }
  return static_cast<int>(worst);
}

}  // namespace

int run_islands(Environment& env, const engine::Plugins& plugins, const IslandsRunArgs& args,
                const std::atomic<int>& stop) {
  const Comm world = Comm::world();
  const int rank = world.rank(), size = world.size();
  const engine::RunRequest& request = args;
  const bool resume = request.resume();
  // The ranks on this host share its cores: the backends' default job
  // counts (compiles, workers, protocol threads) are per rank.
  const Comm node = world.split_shared();
  set_ranks_on_host(node.size());
  const int lrank = local_rank(node);

  // Plan and set up: rank 0 first (one error for a bad config), then the
  // others. A failure anywhere leaves the run directory as it was.
  engine::RunDirectory dir;   // rank 0 only
  engine::RunSetup setup;
  std::string doc_text, file, run_dir_text;
  Outcome out;
  // After each phase every rank learns the worst outcome; a failure before
  // the directory phase leaves the directory as it was.
  auto phase_failed = [&] {
    const int code = agree(world, out);
    if (code != 0 && rank == 0) dir.abandon();
    return code;
  };
  if (rank == 0)
    out.attempt([&] {
      file = engine::config_file(request);
      try {
        engine::RunPlan plan = engine::plan_run(request, &dir);
        setup = engine::set_up(plan.doc, file, plugins, lrank);
        if (!resume) dir = engine::RunDirectory::choose_new(request.out, setup.config);
        doc_text = plan.doc.dump();
        run_dir_text = dir.path().string();
      } catch (const InputError& e) {
        // An error at a key a --set gave names the override, not the file.
        throw engine::attribute_overrides(e, file, request.overrides);
      }
    });
  if (const int code = phase_failed()) return code;
  world.broadcast(doc_text, 0);
  world.broadcast(file, 0);
  world.broadcast(run_dir_text, 0);
  const fs::path run_dir = run_dir_text;
  if (rank != 0) out.attempt([&] { setup = engine::set_up(nlohmann::json::parse(doc_text), file, plugins, lrank); });
  if (const int code = phase_failed()) return code;
  engine::Config& config = setup.config;
  const auto& tasks = setup.tasks;

  // Task groups: with T tasks and N ranks, G = min(T, N) groups; rank r
  // works on the tasks t with t mod G == r mod G.
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
  const bool identity = local.size() == tasks.size();
  const std::vector<std::uint32_t> task_map = identity ? std::vector<std::uint32_t>{} : local;

  // Restore (a resume): everyone reads before anyone writes; a lineage that
  // cannot be read stops every rank with the directory untouched.
  Prior prior = Prior::none(tasks.size(), local.size());
  if (resume) {
    out.attempt([&] {
      prior = engine::read_prior(run_dir, names, tasks, local, rank, size, group.rank(), group.size(),
                                 config.island.population);
    });
    if (const int code = phase_failed()) return code;
    // What the sessions before spent of the plugin budgets (LLM tokens/USD).
    const std::vector<std::string_view> records(prior.llm_records.begin(), prior.llm_records.end());
    for (const auto& b : config.shared_budgets) b->restore(records);
    prior.llm_records.clear();
  }

  // The run directory: from here on the run owns it.
  if (rank == 0) out.attempt([&] { dir.create(config); });
  if (const int code = phase_failed()) return code;
  if (resume && rank == 0) {
    engine::record_lost(run_dir / "lineage" / lineage::rank_file_name(0), prior.lost, config.lineage.flush_records);
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

  // This rank's lineage.
  engine::LineageStart ls;
  ls.rank = rank;
  ls.ranks = size;
  ls.task_map = task_map;
  ls.resume = resume;
  ls.prior = &prior;
  ls.device_note = setup.device_note;
  ls.baselines = baselines;
  ls.print = rank == 0;
  auto sink = engine::open_lineage(run_dir, setup, ls);

  // The search: the island under its checkpoint hook, which wraps the
  // island network of a multi-rank run.
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
  engine::CheckpointHook checkpoint(engine::checkpoint_file(run_dir, rank), rank, size, static_cast<std::uint64_t>(size),
                                    config.islands.checkpoint_seconds, names, task_map, network.get());
  checkpoint.budgets = config.shared_budgets;
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  opts.first_id = prior.base + static_cast<std::uint64_t>(rank);
  opts.id_stride = static_cast<std::uint64_t>(size);
  opts.stop_drain_seconds = config.budget.stop_drain_seconds;
  opts.hook = &checkpoint;
  engine::Island island(opts, local_tasks, *config.backend, config.operators, *sink);
  if (resume)
    for (std::size_t i = 0; i < local.size(); ++i)
      island.restore(i, std::move(prior.members[i]), prior.seen[i], prior.spent[local[i]]);
  for (std::size_t i = 0; i < local.size(); ++i) island.requeue(i, std::move(prior.requeue[i]));
  for (const auto& x : prior.history) island.replay(x.c, x.here);
  prior.history.clear();
  if (network) network->start(island);
  island.run(stop, [&](const engine::IslandSnapshot& s) {
    if (!network) view.update(s);
  });
  const bool ok = network ? network->finish(island) : true;
  const auto snap = island.snapshot();
  if (!network) view.finish(snap);

  // The stop. A budget spent on another rank reaches this one through the
  // rounds (finish() keeps taking part in them until every rank is done).
  engine::StopInfo how;
  if (args.stop_signal) {
    how.signal = args.stop_signal->signal.load();
    how.signal_time = static_cast<double>(args.stop_signal->unix_ns.load()) / 1e9;
  }
  std::string budget_stop = checkpoint.stop_reason;
  for (const auto& b : config.shared_budgets) {
    if (budget_stop.empty() && b->exhausted() && b->stop_when_exhausted()) budget_stop = b->summary();
    if (how.failure.empty()) how.failure = b->failure();   // e.g. a replay missed a reply: exit 1
  }
  // What plugins report at the end (a replay's cache hits and drifted prompts).
  how.notes = config.run_notes ? config.run_notes() : std::vector<std::string>{};
  for (const auto& n : how.notes) sink->event(engine::LineageSink::EventKind::note, -1, rank, -1, n);
  how.stopped = stop.load() > 0 || (network && network->stop_level() > 0) || !budget_stop.empty() || !ok;
  if (!budget_stop.empty()) {
    how.by_budget = true;
    how.reason = budget_stop;
    how.advice = stop_advice(config.shared_budgets, run_dir.string());
  } else if (!ok) {
    how.reason = "a lost rank";
  } else if (how.stopped) {
    how.reason = how.signal ? engine::signal_name(how.signal) : "a signal to another rank";
  }
  if (network) {
    // For the overhead benchmark (scripts/bench_islands.sh).
    const auto& c = network->costs();
    checkpoint.extra = {{"loop_seconds", snap.elapsed_seconds}, {"network_seconds", c.poll_seconds},
                        {"finish_seconds", c.finish_seconds}, {"polls", c.polls}, {"rounds", c.rounds},
                        {"network_cpu_seconds", c.poll_cpu_seconds}, {"loop_cpu_seconds", c.loop_cpu_seconds},
                        {"messages_sent", c.messages_sent}, {"migrants_sent", c.migrants_sent},
                        {"migrants_received", c.migrants_received}};
  }
  if (how.signal) checkpoint.signal = {{"name", engine::signal_name(how.signal)}, {"time", how.signal_time}};
  checkpoint.write(island, true, how.stopped);
  sink->end(how.stopped ? "run stopped: " + how.reason : "run ended");

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

  // Results (rank 0): best kernels and the report, from every rank's lineage.
  if (rank == 0) {
    engine::ResultsInput in;
    in.tasks = tasks;
    in.config = &config;
    in.stop = how;
    in.elapsed_seconds = network ? network->global_snapshot().elapsed_seconds : snap.elapsed_seconds;
    in.ranks = size;
    engine::write_results(run_dir, in);
  }
  if (!how.failure.empty())
    fmt::print(stderr, "kevo: rank {}: failure: {}\n", rank, sanitize_utf8(how.failure, kTerminalText));
  // 1: a plugin's error (a replay miss); else the stopping budget's status
  // (3: the LLM endpoint keeps failing, docs/llm.md#failures).
  const int code = !how.failure.empty() ? 1 : stop_exit_code(config.shared_budgets);
  if (how.stopped) {
    // Every rank waits for rank 0's results: mpirun ends the job at the
    // first non-zero exit. When every rank got the signal, mpirun or the
    // batch system is ending the job and may never complete MPI_Finalize
    // (Open MPI's mpirun does not): nothing is left that it could lose.
    const bool all_signalled = world.allreduce_max(how.signal ? 0 : 1) == 0;
    if (all_signalled) env.bound_finalize(0.05, code);
  }
  return code;
}

}  // namespace kevo::mpi
