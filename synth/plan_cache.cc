#include "synth/plan_cache.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace reshard {
namespace {

// The key is a binary encoding, every string length-prefixed, so that no two arguments share
// one: ToString would merge an axis named "x,y" (invalid, an error from Synthesize) with the
// two axes x and y of a valid type.
void Put(std::string& key, int64_t value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void Put(std::string& key, double value) { Put(key, std::bit_cast<int64_t>(value)); }

void Put(std::string& key, std::string_view text) {
  Put(key, static_cast<int64_t>(text.size()));
  key.append(text);
}

void Put(std::string& key, const AxisList& axes) {
  Put(key, static_cast<int64_t>(axes.size()));
  for (const AxisName& axis : axes) Put(key, axis);
}

// The structured bindings here and below stop compiling when a field is added to what they
// take apart, which the key would then miss.
void Put(std::string& key, const DistType& type) {
  const auto& [element_type, dims, partial] = type;
  Put(key, static_cast<int64_t>(element_type));
  Put(key, static_cast<int64_t>(dims.size()));
  for (const auto& [size, axes] : dims) {
    Put(key, size);
    Put(key, axes);
  }
  Put(key, partial);
}

void Put(std::string& key, const AxisCost& cost) {
  const auto& [alpha_us, gbps] = cost;
  Put(key, alpha_us);
  Put(key, gbps);
}

// CostModel's fields are private: its default and its overrides, nothing else.
static_assert(sizeof(CostModel) ==
              sizeof(AxisCost) + sizeof(std::vector<std::pair<std::string, AxisCost>>));

std::string Key(const Mesh& mesh, const DistType& from, const DistType& to,
                const SynthesisOptions& options) {
  const auto& [strategy, objective, cost_model, max_states, sub_axes] = options;
  std::string key;
  key.reserve(256);
  Put(key, static_cast<int64_t>(mesh.axes().size()));
  for (const auto& [name, size] : mesh.axes()) {
    Put(key, name);
    Put(key, size);
  }
  Put(key, from);
  Put(key, to);
  Put(key, static_cast<int64_t>(strategy));
  Put(key, static_cast<int64_t>(objective));
  Put(key, max_states);
  Put(key, static_cast<int64_t>(sub_axes));
  Put(key, cost_model.default_cost());
  Put(key, static_cast<int64_t>(cost_model.overrides().size()));
  for (const auto& [axis, cost] : cost_model.overrides()) {
    Put(key, axis);
    Put(key, cost);
  }
  return key;
}

}  // namespace

int64_t PlanWeight(const Plan& plan) {
  int64_t weight = 0;
  for (const Step& step : plan.steps) {
    weight += 1 + std::ssize(step.op.source_target_pairs) + std::ssize(step.op.transfers);
  }
  return weight;
}

PlanCache::PlanCache() : PlanCache(Limits{}) {}

PlanCache::PlanCache(Limits limits)
    : limits_{std::max<int64_t>(limits.max_results, 1), std::max<int64_t>(limits.max_weight, 1)} {}

PlanCache::Result PlanCache::Synthesize(const Mesh& mesh, const DistType& from, const DistType& to,
                                        const SynthesisOptions& options) {
  std::string key = Key(mesh, from, to, options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto known = index_.find(key); known != index_.end()) {
      ++stats_.hits;
      order_.splice(order_.begin(), order_, known->second);
      return known->second->result;
    }
    ++stats_.misses;
  }
  absl::StatusOr<Plan> plan = reshard::Synthesize(mesh, from, to, options);
  Result result =
      plan.ok() ? Result(std::make_shared<const Plan>(*std::move(plan))) : Result(plan.status());
  const int64_t weight = result.ok() ? std::max<int64_t>(PlanWeight(**result), 1) : 1;
  if (weight > limits_.max_weight) return result;
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.contains(key)) return result;  // Another thread's equal result came first.
  order_.push_front(Entry{std::move(key), result, weight});
  index_.emplace(order_.front().key, order_.begin());
  ++stats_.results;
  stats_.weight += weight;
  EvictOverLimits();
  return result;
}

void PlanCache::EvictOverLimits() {
  while (stats_.results > limits_.max_results || stats_.weight > limits_.max_weight) {
    const Entry& last = order_.back();
    index_.erase(last.key);
    stats_.weight -= last.weight;
    --stats_.results;
    ++stats_.evictions;
    order_.pop_back();
  }
}

PlanCache::Stats PlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void PlanCache::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.clear();
  order_.clear();
  stats_.results = 0;
  stats_.weight = 0;
}

}  // namespace reshard
