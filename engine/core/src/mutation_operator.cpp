#include "kevo/core/mutation_operator.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/text.hpp"

namespace kevo {

namespace {

void clean(std::string& text, const TextRules& rules) {
  if (!is_clean_utf8(text, rules)) text = sanitize_utf8(text, rules);
}

}  // namespace

void MutationOperator::check_outcome(OperatorOutcome& o) const {
  if (!o.proposal && o.failure.empty())
    throw Failure("operator '" + name_ + "': failed request " + std::to_string(o.id) + " without a reason");
  // An LLM operator's texts are a model's words: they may hold anything.
  clean(o.failure, kShownText);
  clean(o.llm, kStoredText);
  if (o.proposal) {
    clean(o.proposal->source, kStoredText);
    clean(o.proposal->note, kShownText);
    clean(o.proposal->profile, kShownText);
  }
}

std::vector<OperatorOutcome> MutationOperator::poll(std::chrono::milliseconds max_wait) {
  std::vector<OperatorOutcome> out = do_poll(max_wait);
  for (OperatorOutcome& o : out) check_outcome(o);
  return out;
}

std::optional<OperatorOutcome> MutationOperator::begin(const OperatorRequest& request) {
  const std::string who = "operator '" + name_ + "': ";
  if (!request.task) throw Failure(who + "request " + std::to_string(request.id) + " has no task");
  if (!request.rng) throw Failure(who + "request " + std::to_string(request.id) + " has no random stream");
  if (request.parents.size() != static_cast<std::size_t>(arity_))
    throw Failure(who + "needs " + std::to_string(arity_) + " parent(s), request " + std::to_string(request.id) +
                  " has " + std::to_string(request.parents.size()));
  for (std::size_t k = 0; k < request.parents.size(); ++k)
    if (!request.parents[k])
      throw Failure(who + "parent " + std::to_string(k) + " of request " + std::to_string(request.id) + " is null");
  for (std::size_t k = 0; k < request.inspirations.size(); ++k)
    if (!request.inspirations[k])
      throw Failure(who + "inspiration " + std::to_string(k) + " of request " + std::to_string(request.id) +
                    " is null");
  std::optional<OperatorOutcome> out;
  try {
    out = do_begin(request);
  } catch (const InputError&) {
    throw;
  } catch (const Failure&) {
    throw;
  } catch (const std::exception& e) {
    // An operator reads its parents' texts, which candidates write (their
    // compile logs, their output): whatever it throws while making one
    // child fails that child, not the run (a number too long for stol in a
    // `#pragma message` of a correct kernel ended it: a red team's finding).
    // The engine's own errors (InputError, Failure) still end the run.
    out = OperatorOutcome::failed(request.id, who + "could not make this child: " + e.what());
  }
  if (out && out->id != request.id)
    throw Failure(who + "answered request " + std::to_string(request.id) + " with id " + std::to_string(out->id));
  if (out) check_outcome(*out);
  return out;
}

}  // namespace kevo
