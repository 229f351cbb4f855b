// plan_cache_test.cc — PlanCache returns what Synthesize returns, keys on every argument, and
// keeps to its bounds.
#include "synth/plan_cache.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "synth/synthesize.h"
#include "typesys/cost_model.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

struct Problem {
  Mesh mesh;
  DistType from, to;
  SynthesisOptions options;
};

Problem Make(const char* mesh, const char* from, const char* to) {
  Problem p{*ParseMesh(mesh), {}, {}, {}};
  p.from = *ParseValidType(p.mesh, from);
  p.to = *ParseValidType(p.mesh, to);
  return p;
}

// The cache's answer against a fresh Synthesize call: same plan, or same status.
void ExpectSameAsSynthesize(const absl::StatusOr<std::shared_ptr<const Plan>>& cached,
                            const Problem& p) {
  absl::StatusOr<Plan> fresh = Synthesize(p.mesh, p.from, p.to, p.options);
  ASSERT_EQ(cached.ok(), fresh.ok()) << (fresh.ok() ? cached.status() : fresh.status());
  if (!fresh.ok()) {
    EXPECT_EQ(cached.status(), fresh.status());
    return;
  }
  EXPECT_EQ(PlanToJson(**cached), PlanToJson(*fresh));
}

TEST(PlanCache, RepeatedCallIsAHitWithTheSamePlan) {
  PlanCache cache;
  const Problem p = Make("x=2,y=2,z=2", "f32[64{x},64{y},64{z}]", "f32[64{z},64{x},64{y}]");
  absl::StatusOr<std::shared_ptr<const Plan>> first =
      cache.Synthesize(p.mesh, p.from, p.to, p.options);
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectSameAsSynthesize(first, p);
  absl::StatusOr<RunReport> run = RunPlan(**first);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->ok) << run->message;
  absl::StatusOr<std::shared_ptr<const Plan>> second =
      cache.Synthesize(p.mesh, p.from, p.to, p.options);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());  // The held plan itself, not a new synthesis.
  const PlanCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.results, 1);
  EXPECT_EQ(stats.weight, PlanWeight(**first));
}

// Each variant changes one thing Synthesize reads; each must miss (a hit would hand back the
// base problem's plan) and answer as Synthesize does.
TEST(PlanCache, EveryArgumentIsPartOfTheKey) {
  const Problem base = Make("x=4,y=2", "f32[64{x},64] partial{y}", "f32[64,64{x}]");
  std::vector<std::function<void(Problem&)>> changes = {
      [](Problem& p) { p = Make("x=2,y=4", "f32[64{x},64] partial{y}", "f32[64,64{x}]"); },
      [](Problem& p) { p.from = *ParseValidType(p.mesh, "f32[64{x},64]"); },
      [](Problem& p) { p.to = *ParseValidType(p.mesh, "f32[64,64{x,y}]"); },
      [](Problem& p) { p.from.element_type = p.to.element_type = ElementType::kBF16; },
      [](Problem& p) { p.from.dims[1].size = p.to.dims[1].size = 32; },
      [](Problem& p) { p.options.strategy = Strategy::kOptimal; },
      [](Problem& p) { p.options.objective = Objective::kBytes; },
      [](Problem& p) { p.options.max_states = 7; },
      [](Problem& p) { p.options.sub_axes = false; },
      [](Problem& p) {
        p.options.cost_model = CostModel(AxisCost{5.0, 100.5});
      },
      [](Problem& p) {
        p.options.cost_model.SetAxis("y", AxisCost{5.0, 100.0});
      },
      [](Problem& p) {
        p.options.cost_model.SetAxis("y", AxisCost{7.0, 100.0});
      },
      [](Problem& p) {
        p.options.cost_model.SetAxis("x", AxisCost{5.0, 100.0});
      },
  };
  PlanCache cache;
  ASSERT_TRUE(cache.Synthesize(base.mesh, base.from, base.to, base.options).ok());
  int64_t misses = 1;
  for (size_t i = 0; i < changes.size(); ++i) {
    SCOPED_TRACE(i);
    Problem p = base;
    changes[i](p);
    ExpectSameAsSynthesize(cache.Synthesize(p.mesh, p.from, p.to, p.options), p);
    EXPECT_EQ(cache.stats().misses, ++misses);
    EXPECT_EQ(cache.stats().hits, 0);
  }
}

// A type built through the API with an axis named "x,y" prints like the valid {x,y}; the key
// must still tell them apart (one is an error, the other a plan).
TEST(PlanCache, KeysDoNotMergeWhatPrintsAlike) {
  Problem valid = Make("x=2,y=2", "f32[8{x,y}]", "f32[8]");
  Problem odd = valid;
  odd.from.dims[0].axes = {"x,y"};
  ASSERT_EQ(ToString(odd.from), ToString(valid.from));
  PlanCache cache;
  absl::StatusOr<std::shared_ptr<const Plan>> plan =
      cache.Synthesize(valid.mesh, valid.from, valid.to);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::shared_ptr<const Plan>> error = cache.Synthesize(odd.mesh, odd.from, odd.to);
  EXPECT_TRUE(absl::IsInvalidArgument(error.status())) << error.status();
  ExpectSameAsSynthesize(error, odd);
  EXPECT_EQ(cache.stats().misses, 2);
}

TEST(PlanCache, ErrorsAreRememberedToo) {
  Problem p = Make("x=2,y=2", "f32[8{x}]", "f32[8]");
  p.to = *ParseType("f32[8] partial{y}");  // No collective creates a pending sum.
  PlanCache cache;
  absl::StatusOr<std::shared_ptr<const Plan>> first = cache.Synthesize(p.mesh, p.from, p.to);
  EXPECT_TRUE(absl::IsInvalidArgument(first.status())) << first.status();
  absl::StatusOr<std::shared_ptr<const Plan>> second = cache.Synthesize(p.mesh, p.from, p.to);
  EXPECT_EQ(second.status(), first.status());
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().weight, 1);
}

TEST(PlanCache, EvictsTheLeastRecentlyUsed) {
  PlanCache cache(PlanCache::Limits{.max_results = 2});
  const Problem a = Make("x=4", "f32[64{x}]", "f32[64]");
  const Problem b = Make("x=4", "f32[64]", "f32[64{x}]");
  const Problem c = Make("x=4", "f32[64{x},8]", "f32[64,8{x}]");
  auto get = [&](const Problem& p) { ASSERT_TRUE(cache.Synthesize(p.mesh, p.from, p.to).ok()); };
  get(a);
  get(b);
  get(a);  // Hit: b is now the least recently used.
  get(c);  // Evicts b.
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_EQ(cache.stats().results, 2);
  get(a);
  get(c);
  EXPECT_EQ(cache.stats().hits, 3);
  get(b);  // A miss again; evicts a.
  EXPECT_EQ(cache.stats().misses, 4);
  EXPECT_EQ(cache.stats().evictions, 2);
  cache.Clear();
  EXPECT_EQ(cache.stats().results, 0);
  EXPECT_EQ(cache.stats().weight, 0);
  get(c);
  EXPECT_EQ(cache.stats().misses, 5);
}

TEST(PlanCache, WeightBoundsWhatIsKept) {
  // A permute on 8 devices: one step and a pair per moved device.
  const Problem p = Make("x=2,y=4", "f32[64{x,y}]", "f32[64{y,x}]");
  absl::StatusOr<Plan> plan = Synthesize(p.mesh, p.from, p.to);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t weight = PlanWeight(*plan);
  ASSERT_GT(weight, 2);

  PlanCache small(PlanCache::Limits{.max_weight = weight - 1});
  absl::StatusOr<std::shared_ptr<const Plan>> kept_not = small.Synthesize(p.mesh, p.from, p.to);
  ASSERT_TRUE(kept_not.ok());
  EXPECT_EQ(PlanToJson(**kept_not), PlanToJson(*plan));  // Returned, but too heavy to keep.
  EXPECT_EQ(small.stats().results, 0);
  EXPECT_EQ(small.stats().weight, 0);

  PlanCache exact(PlanCache::Limits{.max_weight = weight});
  ASSERT_TRUE(exact.Synthesize(p.mesh, p.from, p.to).ok());
  EXPECT_EQ(exact.stats().weight, weight);
  const Problem light = Make("x=2,y=4", "f32[64{x}]", "f32[64]");
  ASSERT_TRUE(exact.Synthesize(light.mesh, light.from, light.to).ok());
  EXPECT_EQ(exact.stats().evictions, 1);  // Both together exceed the bound.
  EXPECT_EQ(exact.stats().results, 1);
}

}  // namespace
}  // namespace reshard
