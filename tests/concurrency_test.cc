// concurrency_test.cc — the core is safe to call from several threads (synth/synthesize.h):
// Synthesize, CheckPlan, PlanToJson and RunPlan called at once from several threads, on
// arguments the threads share, give what they give on one thread; so does a shared PlanCache,
// and so does interning long axis names (typesys/axis_name.h).
// scripts/test.sh also runs this binary under ThreadSanitizer (build-tsan/), which reports any
// data race between them.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "synth/plan_cache.h"
#include "synth/synthesize.h"
#include "typesys/axis_name.h"
#include "typesys/cost_model.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

struct Case {
  const char* mesh;
  const char* from;
  const char* to;
  const char* model;  // --axis-cost syntax; "" for the default model.
};

// Small enough for `optimal` and the interpreter; between them they take every path of
// Synthesize: a reduction split into chains, a permute, sub-axes in a type, a size-1 axis,
// the branch and bound of a heterogeneous model, a gather first.
const Case kCases[] = {
    {"x=4,y=4", "f32[64,64] partial{x}", "f32[64{x},64]", ""},
    {"x=2,y=2,z=2", "f32[16{x},16{y},16{z}]", "f32[16{z},16{x},16{y}]", ""},
    {"x=4,y=2", "f32[16{x:(1)2},8] partial{y}", "f32[16,8{x:(2)2}]", ""},
    {"x=2,y=1,z=4", "f32[32{z},8] partial{x}", "f32[32{x,y},8{z}]", ""},
    {"x=2,y=2", "f32[768,48{x}]", "f32[768,48{y,x}]", "x=1:300,y=5:100"},
    {"x=3,y=2", "f32[48,96{x,y}]", "f32[48{x},96]", ""},
    // Names beyond AxisName's 15 bytes, and their atoms, are interned by every call.
    {"data_parallel_replica=2,tensor_model_parallel=4",
     "f32[16{data_parallel_replica},16{tensor_model_parallel}]",
     "f32[16{tensor_model_parallel},16{data_parallel_replica}]", ""},
};

struct Call {
  Mesh mesh;
  DistType from, to;
  SynthesisOptions options;
};

// What a call gives, as text: the plan's JSON and the interpreter's verdict, or the error.
std::string Outcome(const Call& call) {
  absl::StatusOr<Plan> plan = Synthesize(call.mesh, call.from, call.to, call.options);
  if (!plan.ok()) return plan.status().ToString();
  std::string out = PlanToJson(*plan);
  if (absl::Status s = CheckPlan(*plan); !s.ok()) out += " check: " + s.ToString();
  absl::StatusOr<RunReport> report = RunPlan(*plan);
  out += !report.ok() ? " run: " + report.status().ToString()
                      : (report->ok ? " run ok" : " run: " + report->message);
  return out;
}

TEST(Concurrency, ThreadsGetTheSerialOutcomes) {
  std::vector<Call> calls;
  for (const Case& c : kCases) {
    absl::StatusOr<Mesh> mesh = ParseMesh(c.mesh);
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    absl::StatusOr<DistType> from = ParseValidType(*mesh, c.from);
    absl::StatusOr<DistType> to = ParseValidType(*mesh, c.to);
    ASSERT_TRUE(from.ok() && to.ok()) << c.from << " -> " << c.to;
    absl::StatusOr<CostModel> model = ParseCostModel(c.model);
    ASSERT_TRUE(model.ok()) << model.status();
    for (Strategy strategy : AllStrategies()) {
      SynthesisOptions options;
      options.strategy = strategy;
      options.cost_model = *model;
      calls.push_back(Call{*mesh, *from, *to, options});
    }
  }
  std::vector<std::string> serial;
  for (const Call& call : calls) serial.push_back(Outcome(call));

  // Each thread walks every call, from its own starting point so that different calls
  // overlap, and keeps its outcomes to itself; `calls` is shared and only read.
  constexpr int kThreads = 4;
  std::vector<std::vector<std::string>> outcomes(kThreads, std::vector<std::string>(calls.size()));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&calls, &outcomes, t] {
      for (size_t k = 0; k < calls.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(t) * calls.size() / kThreads) % calls.size();
        outcomes[t][i] = Outcome(calls[i]);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(outcomes[t][i], serial[i])
          << "thread " << t << ", " << StrategyName(calls[i].options.strategy) << " "
          << ToString(calls[i].from) << " -> " << ToString(calls[i].to);
    }
  }
  // Every call has a plan, and every plan runs correctly on the interpreter.
  int plans = 0;
  for (const std::string& outcome : serial) {
    if (outcome.front() != '{') continue;
    ++plans;
    EXPECT_NE(outcome.find(" run ok"), std::string::npos) << outcome;
  }
  EXPECT_EQ(plans, static_cast<int>(serial.size()));
}

// Threads sharing one PlanCache get Synthesize's answers, and ThreadSanitizer sees no race
// in its lookups, insertions and evictions.
TEST(Concurrency, ThreadsShareAPlanCache) {
  std::vector<Call> calls;
  for (const Case& c : kCases) {
    absl::StatusOr<Mesh> mesh = ParseMesh(c.mesh);
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    calls.push_back(Call{*mesh, *ParseValidType(*mesh, c.from), *ParseValidType(*mesh, c.to),
                         SynthesisOptions{.cost_model = *ParseCostModel(c.model)}});
  }
  PlanCache cache(PlanCache::Limits{.max_results = 3});  // Fewer than the calls: threads evict.
  constexpr int kThreads = 4;
  constexpr int kRounds = 24;
  std::vector<std::vector<std::shared_ptr<const Plan>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const Call& call = calls[(r + t) % calls.size()];
        absl::StatusOr<std::shared_ptr<const Plan>> plan =
            cache.Synthesize(call.mesh, call.from, call.to, call.options);
        got[t].push_back(plan.ok() ? *plan : nullptr);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRounds; ++r) {
      const Call& call = calls[(r + t) % calls.size()];
      ASSERT_NE(got[t][r], nullptr) << "thread " << t << ", round " << r;
      EXPECT_EQ(PlanToJson(*got[t][r]),
                PlanToJson(*Synthesize(call.mesh, call.from, call.to, call.options)));
    }
  }
  const PlanCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits + stats.misses, kThreads * kRounds);
  EXPECT_LE(stats.results, 3);
}

TEST(Concurrency, InternsLongAxisNamesOnce) {
  // Threads intern the same and different long axis names (typesys/axis_name.h) at once;
  // every value reads back and equal names share one copy.
  constexpr int kThreads = 4, kNames = 200;
  std::vector<std::vector<AxisName>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &made] {
      for (int i = 0; i < kNames; ++i) {
        made[t].push_back(AxisName("a_long_axis_name_" + std::to_string(i % (kNames / 2)) +
                                   (i % 2 == 0 ? "" : "_t" + std::to_string(t))));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kNames; ++i) {
      const std::string text = "a_long_axis_name_" + std::to_string(i % (kNames / 2)) +
                               (i % 2 == 0 ? "" : "_t" + std::to_string(t));
      EXPECT_EQ(made[t][i].view(), text);
      if (i % 2 == 0) {
        EXPECT_EQ(made[t][i].view().data(), made[0][i].view().data());
      }
    }
  }
}

}  // namespace
}  // namespace reshard
