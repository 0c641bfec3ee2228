#include "kevo/core/mutation_operator.hpp"

#include "kevo/core/error.hpp"

namespace kevo {

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
  std::optional<OperatorOutcome> out = do_begin(request);
  if (out && out->id != request.id)
    throw Failure(who + "answered request " + std::to_string(request.id) + " with id " + std::to_string(out->id));
  if (out && !out->proposal && out->failure.empty())
    throw Failure(who + "failed request " + std::to_string(request.id) + " without a reason");
  return out;
}

}  // namespace kevo
