#include "session.hpp"

#include "channel.hpp"
#include "host_control.hpp"
#include "kevo/native/libraries.hpp"

#include "kevo/sandbox/seccomp.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

extern char** environ;

namespace kevo::native::judge {

Options options_of(const JudgeRequest& req, std::chrono::steady_clock::time_point started) {
  Options o;
  o.mode = req.mode;
  o.seed = req.seed;
  o.trials = req.trials;
  o.timing = req.timing;
  o.timing_options = req.timing_options;
  o.roofline = req.roofline;
  o.host = req.host;
  o.wall_seconds = req.wall_seconds;
  o.started = started;
  return o;
}

namespace {

// A candidate that did not get as far as its first call.
JudgeResult load_failure(const RemoteEndpoint& cand, const Options& opt, const Task& task, Space& space,
                         Endpoint& ref) {
  JudgeResult r;
  Verdict& v = r.verdict;
  v.stage = Stage::correctness;
  v.status = Status::runtime_error;
  if (!cand.end().ended) {
    v.message = cand.load_error();
    return r;
  }
  // It died while loading (a static constructor): the judge's rules for a
  // failed call, applied with "while loading".
  LocalEndpoint dummy([](ArgSet&, const Case&) {}, space);
  Judge j(task, opt, ref, dummy, space);
  r = j.explain_end(cand, "while the candidate was loaded (its static constructors ran)");
  return r;
}

std::string peak_rss_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return line;
  return {};
}

}  // namespace


std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

JudgeResult run_session(const JudgeRequest& req, const Task& task, const SessionParts& parts,
                        std::chrono::steady_clock::time_point started) {
  Space& space = *parts.space;
  // The inputs' key: the judgement's own secret, so that neither its inputs
  // nor its drawn shapes can be rebuilt from its seed (InputKey); the
  // poison comes from it too.
  space.set_input_key(InputKey::draw());
  space.set_poison(keyed_poison(space.input_key(), req.seed));
  Options opt = options_of(req, started);
  if (!parts.protocol_timing) opt.timing = false;
  // Fresh shapes for this judgement from the task's shape space.
  opt.drawn = draw_shapes(task, space.input_key().draws_seed(req.seed));

  HostSpec base;
  base.program = parts.host_program;
  base.seccomp = req.seccomp;
  base.policy = req.policy;
  base.namespaces = req.namespaces;
  base.limits = req.host;
  // The candidate's process can read its arena's size from its start: a
  // hidden shape larger than the visible shapes and the draw space's caps
  // runs in a second process of the candidate's, after the first one's
  // timing (hidden_candidate, below). Trusted code (the reference, a
  // reference copy) gets room for every shape at once.
  const ArenaSize arena = arena_size(task, opt.drawn, kArenaAlign);
  const bool split_hidden = arena.reveals != nullptr && req.mode == kModeJudge;
  base.arena_bytes = split_hidden ? arena.bytes : arena.hidden_bytes;
  base.env = parts.host_env;

  HostSpec ref_spec = base;
  ref_spec.arena_bytes = arena.hidden_bytes;
  ref_spec.library = req.reference_so;
  ref_spec.role = "reference";
  ref_spec.trusted = true;
  std::unique_ptr<RemoteEndpoint> ref_host;
  std::unique_ptr<Endpoint> ref_local;
  try {
    if (parts.local_reference) ref_local = parts.local_reference();
    else ref_host = std::make_unique<RemoteEndpoint>(ref_spec);
  } catch (const std::bad_alloc&) {
    fatal("worker_memory", "the judge could not allocate the task's buffers");
  } catch (const std::exception& e) {
    fatal("host_start", std::string("cannot start the reference: ") + e.what());
  }
  Endpoint& ref = ref_local ? *ref_local : static_cast<Endpoint&>(*ref_host);
  std::unique_ptr<RemoteEndpoint> remote;
  std::unique_ptr<Endpoint> local;
  Endpoint* cand = nullptr;
  if (req.mode == kModeNull) {
    LocalEndpoint::Kernel k = null_kernel(req.null_kind, task, ref, req.seed, space);
    local = parts.local_candidate ? parts.local_candidate(std::move(k)) : std::make_unique<LocalEndpoint>(std::move(k), space);
    cand = local.get();
  }
  // The candidate's kernel host with an arena of `arena_bytes`.
  HostSpec cs = base;
  cs.library = req.mode == kModeSelfCheck ? req.reference_so : req.candidate_so;
  cs.role = req.mode == kModeSelfCheck ? "reference copy" : "candidate";
  cs.host_args = parts.host_args;
  cs.before_null_call = parts.before_null_call;
  cs.after_null_call = parts.after_null_call;
  cs.on_answer = parts.on_answer;
  cs.hold_for_calibration = parts.hold_for_calibration;
  auto start_candidate = [&](std::size_t arena_bytes, int calibrate) {
    HostSpec spec = cs;
    spec.arena_bytes = arena_bytes;
    spec.calibrate = calibrate;
    try {
      if (parts.device_arena) {
        spec.device = parts.device_arena(arena_bytes);
        if (!spec.device) throw std::runtime_error("no device arena");
      }
      return std::make_unique<RemoteEndpoint>(spec);
    } catch (const std::bad_alloc&) {
      fatal("worker_memory", "the judge could not allocate the task's buffers");
    } catch (const std::exception& e) {
      fatal("host_start", std::string("cannot start the candidate's kernel host: ") + e.what());
    }
  };
  std::unique_ptr<Endpoint> decorated;
  auto decorate = [&] {
    cand = remote.get();
    if (parts.decorate_candidate) {
      decorated = parts.decorate_candidate(*remote);
      cand = decorated.get();
    }
  };
  if (req.mode != kModeNull) {
    remote = start_candidate(base.arena_bytes, parts.calibrate);
    decorate();
  }
  // Both hosts start side by side; the judge waits for them in turn.
  if (ref_host) ref_host->wait_ready();
  if (remote) remote->wait_ready();
  if (ref_host && !ref_host->ready()) {
    std::string why = ref_host->load_error();
    if (ref_host->end().ended && ref_host->end().violation >= 0)
      why += " (sandbox violation: system call " + std::to_string(ref_host->end().violation) + " " +
             sandbox::forbidden_syscall_name(ref_host->end().violation) + ")";
    fatal(req.seccomp ? "sandbox_unavailable" : "reference_load", "the reference's kernel host did not start: " + why);
  }
  if (remote && parts.calibrate > 0 && remote->ready() && remote->null_ns().empty())
    fatal("calibration", "the candidate's kernel host answered none of its calibration calls");

  JudgeResult result;
  if (remote && !remote->ready()) {
    result = load_failure(*remote, opt, task, space, ref);
  } else {
    // The library policy binds candidates (a reference copy is the task's
    // trusted code, which may link what its flavour gives references).
    const bool policed = remote && req.mode == kModeJudge;
    std::string banned = policed ? forbidden_mapping(remote->mapped_files(), req.libraries) : std::string();
    auto check_libraries = [&] {
      if (policed && banned.empty() && remote->pid() > 0) banned = forbidden_mapping(remote->mapped_files(), req.libraries);
    };
    // The first process of the candidate's, kept until the judgement ends
    // where a second one runs the hidden shapes.
    std::unique_ptr<RemoteEndpoint> first;
    std::unique_ptr<Endpoint> first_decorated;
    if (banned.empty()) {
      Judge judge(task, opt, ref, *cand, space);
      judge.set_flush(parts.flush);
      if (split_hidden)
        judge.set_hidden_candidate([&](std::string& failure) -> Endpoint* {
          // The first process is done (its libraries checked, its process
          // and any work of it ended) before one that can read the hidden
          // shape's size from its arena starts: from here on the judgement
          // counts as one after a call at that shape.
          check_libraries();
          remote->terminate();
          first = std::move(remote);
          first_decorated = std::move(decorated);
          emit({{"event", "sees"}, {"shape", arena.reveals->label}, {"why", "the arena's size"}});
          remote = start_candidate(arena.hidden_bytes, 0);
          decorate();
          remote->wait_ready();
          if (!remote->ready()) {
            failure = "the candidate's process for the hidden shapes did not start: " +
                      load_failure(*remote, opt, task, space, ref).verdict.message;
            return nullptr;
          }
          return cand;
        });
      if (parts.timing)
        judge.set_timing([&](Verdict& v) {
          return parts.timing(v, *cand, ref, remote ? remote->null_ns() : std::vector<double>{});
        });
      result = parts.around_protocol ? parts.around_protocol([&] { return judge.run(); }) : judge.run();
      if (parts.after_protocol && result.verdict.is_correct()) {
        bool killed = false;
        const std::function<void()> kill_candidate = [&] {
          if (killed) return;
          check_libraries();
          if (remote) remote->kill_now();
          killed = true;
        };
        parts.after_protocol(result, *cand, ref, remote ? remote->null_ns() : std::vector<double>{}, kill_candidate,
                             [&] {
                               kill_candidate();
                               if (remote) remote->terminate();
                             });
      }
      check_libraries();
    }
    if (!banned.empty()) {
      // A library call is not an evolved kernel: whatever the protocol said.
      result.verdict.status = Status::forbidden;
      result.verdict.message = "the candidate's process loaded " + banned +
                               ", a library the task does not allow (its \"libraries\" list)";
    }
    if (remote && remote->pid() > 0) {
      const std::string hwm = peak_rss_line(remote->pid());
      if (!hwm.empty()) result.verdict.max_rss_kb = std::atoll(hwm.c_str() + 6);
    }
  }
  if (remote) {
    result.isolation = remote->isolation().to_json();
    if (remote->end().ended) {
      // How the candidate's process ended, for the verdict's fields (the
      // judge's own kill after its last call is not the candidate's end).
      result.verdict.max_rss_kb = remote->end().max_rss_kb;
      if (!remote->end().terminated) {
        result.verdict.exit_code = remote->end().exit_code;
        result.verdict.signal = remote->end().signal;
      }
    }
    // Nothing of the candidate runs any more (its device context is gone):
    // what the flavour measures now, the candidate cannot disturb.
    remote->terminate();
  } else if (ref_host) {
    result.isolation = ref_host->isolation().to_json();
  }
  return result;
}

}  // namespace kevo::native::judge
