// shardy_baseline_test.cc — the Shardy-style reference pass (internal::ShardySteps, the
// baseline of reshard-bench's sub-axis section): its plans type-check and compute the target
// on the reference interpreter for every sub-axis case of bench/cases.txt and a few hand cases,
// and it moves part of an axis where Shardy does (the x=2,y=4 example: 512 B).
// Properties: the same on random whole-axis cases (tests/generators.h) and on those cases with
// two adjacent axes merged into one, named by its pieces (random sub-axis cases).
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "synth/baselines.h"
#include "tests/generators.h"
#include "tests/test_util.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using test::M;
using test::T;

struct Case {
  std::string mesh, from, to;
};

// The cases below bench/cases.txt's "--- sub-axes" header.
std::vector<Case> SubAxisCases() {
  std::ifstream in(RESHARD_BENCH_CASES);
  EXPECT_TRUE(in.good()) << "cannot open " << RESHARD_BENCH_CASES;
  std::vector<Case> cases;
  bool in_section = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# --- ", 0) == 0) in_section = line.find("sub-axes") != std::string::npos;
    std::string body(absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
    if (!in_section || body.empty()) continue;
    std::vector<std::string> parts = absl::StrSplit(body, ';');
    EXPECT_EQ(parts.size(), 3u) << line;
    if (parts.size() != 3) continue;
    cases.push_back(Case{std::string(absl::StripAsciiWhitespace(parts[0])),
                         std::string(absl::StripAsciiWhitespace(parts[1])),
                         std::string(absl::StripAsciiWhitespace(parts[2]))});
  }
  return cases;
}

// ShardySteps as a checked plan; fails the test (and returns nullopt-like empty plan) on error.
Plan ShardyPlan(const Mesh& mesh, const DistType& from, const DistType& to,
                bool* fell_back = nullptr) {
  absl::StatusOr<std::vector<Step>> steps = internal::ShardySteps(mesh, from, to, fell_back);
  EXPECT_TRUE(steps.ok()) << steps.status();
  Plan plan;
  plan.mesh = mesh;
  plan.source = from;
  plan.target = to;
  plan.strategy = "shardy-style";
  if (steps.ok()) plan.steps = *steps;
  if (!plan.steps.empty()) plan.steps.back().type = to;  // The caller's spelling.
  if (absl::Status s = CheckSteps(mesh, from, plan.steps); s.ok()) {
    plan.metrics = ComputeMetrics(mesh, from, plan.steps, plan.cost_model);
  } else {
    ADD_FAILURE() << s;
  }
  return plan;
}

void ExpectCorrect(const Plan& plan) {
  EXPECT_TRUE(CheckPlan(plan).ok()) << CheckPlan(plan);
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->bytes_received_total, plan.metrics.bytes_received_total);
  EXPECT_GE(plan.metrics.bytes_received_total, plan.metrics.lower_bound_bytes_total);
}

std::string Describe(const Plan& plan) {
  std::string out = ToString(plan.source);
  for (const Step& step : plan.steps) {
    out += "\n  " + ToString(step.op) + " -> " + ToString(step.type);
  }
  return out;
}

TEST(ShardyBaselineTest, BenchSubAxisCasesTypeCheckAndRun) {
  const std::vector<Case> cases = SubAxisCases();
  EXPECT_GE(cases.size(), 12u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mesh + " ; " + c.from + " ; " + c.to);
    Mesh mesh = M(c.mesh);
    Plan plan = ShardyPlan(mesh, T(mesh, c.from), T(mesh, c.to));
    SCOPED_TRACE(Describe(plan));
    ExpectCorrect(plan);
  }
}

TEST(ShardyBaselineTest, SwapOfUnequalAxesMovesPartOfAnAxis) {
  // Shardy splits y into y:(1)2 and y:(2)2: a permute and an all-to-all over y:(2)2, 512 B,
  // where whole-axis collectives need 960 B (the lower bound is 384 B).
  Mesh mesh = M("x=2,y=4");
  bool fell_back = true;
  Plan plan = ShardyPlan(mesh, T(mesh, "f32[8{x},16{y}]"), T(mesh, "f32[8{y},16{x}]"), &fell_back);
  SCOPED_TRACE(Describe(plan));
  ExpectCorrect(plan);
  EXPECT_FALSE(fell_back);
  EXPECT_EQ(plan.metrics.bytes_received_total, 512);
  EXPECT_EQ(plan.metrics.lower_bound_bytes_total, 384);
  bool sub_axis_collective = false;
  for (const Step& step : plan.steps) sub_axis_collective |= HasSubAxes(mesh, step.op);
  EXPECT_TRUE(sub_axis_collective);
}

TEST(ShardyBaselineTest, ValleyOrderOnPowerOfTwoMeshes) {
  // Shardy's order: slices, then permutes / all-to-alls, then gathers; never a gather before
  // a slice on these cases (sizes are powers of two, so no fallback).
  const char* cases[][3] = {
      {"x=2,y=2,z=2", "f32[64{x},64{y},64{z}]", "f32[64{z},64{x},64{y}]"},
      {"x=4,y=4", "f32[256{x},256]", "f32[256,256{y}]"},
      {"x=2,y=4,z=4", "f32[256{y},256] partial{x}", "f32[256{z},256{y}]"},
      {"x=2,y=8", "f32[32,32,32] partial{x}", "f32[32,32{y},32{x}]"},
      {"a=2,b=2,c=2,d=2", "f32[32{a},32{b},32,32] partial{c,d}", "f32[32,32,32{c},32{d}]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c[0]) + " " + c[1] + " -> " + c[2]);
    Mesh mesh = M(c[0]);
    bool fell_back = true;
    Plan plan = ShardyPlan(mesh, T(mesh, c[1]), T(mesh, c[2]), &fell_back);
    SCOPED_TRACE(Describe(plan));
    ExpectCorrect(plan);
    EXPECT_FALSE(fell_back);
    bool gathered = false;
    for (const Step& step : plan.steps) {
      if (step.op.kind == CollectiveKind::kAllGather) gathered = true;
      if (step.op.kind == CollectiveKind::kAllSlice) {
        EXPECT_FALSE(gathered);
      }
    }
  }
}

TEST(ShardyBaselineTest, SwapsPiecesOfMixedPrimeSizesWithoutGathering) {
  // x=6 split as x:(1)2 and x:(2)3 swapped between dimensions: the 2- and 3-sized pieces never
  // fit each other's capacity, so Shardy's order needs all-to-alls and a permute in between.
  Mesh mesh = M("x=6");
  bool fell_back = true;
  Plan plan = ShardyPlan(mesh, T(mesh, "f32[96{x:(1)2},96{x:(2)3}]"),
                         T(mesh, "f32[96{x:(2)3},96{x:(1)2}]"), &fell_back);
  SCOPED_TRACE(Describe(plan));
  ExpectCorrect(plan);
  EXPECT_FALSE(fell_back);
  for (const Step& step : plan.steps) EXPECT_NE(step.op.kind, CollectiveKind::kAllGather);
}

TEST(ShardyBaselineTest, FallbackGathersAndSlicesWhatTheRoundsLeave) {
  // Mixed prime sizes on a tiny array: x (6) must move to dimension 0 and y (3) enter
  // dimension 2. Dimension 2 has no capacity for y (|y| / gcd(|x|, |y|) = 1), so the slice puts
  // y on dimension 0, whose local size 2 then cannot take x by all-to-all (Shardy would pad);
  // the fallback gathers and slices, and the plan is still correct.
  Mesh mesh = M("x=6,y=3");
  bool fell_back = false;
  Plan plan =
      ShardyPlan(mesh, T(mesh, "bf16[6,1,6{x}]"), T(mesh, "bf16[6{x},1,6{y}]"), &fell_back);
  SCOPED_TRACE(Describe(plan));
  ExpectCorrect(plan);
  EXPECT_TRUE(fell_back);
}

TEST(ShardyBaselineTest, RejectsSubAxesThatDoNotNest) {
  Mesh mesh = M("x=6");
  absl::StatusOr<std::vector<Step>> steps = internal::ShardySteps(
      mesh, T(mesh, "f32[96{x:(1)2},96]"), T(mesh, "f32[96{x:(1)3},96]"));
  EXPECT_FALSE(steps.ok());
}


// The pass on random cases: a type-correct plan that ends at the target and computes it.
// The generated types are canonicalized first, as the CLI does: LowerBoundBytesTotal compares
// partial axes by spelling, so `partial{z:(2)4}` -> `partial{z:(2)2,z:(4)2}` would be priced as
// a reduction (reported; typesys is not this test's subject).
void CheckRandomCase(testing::ReshardCase c) {
  c.from = Canonicalize(c.mesh, c.from);
  c.to = Canonicalize(c.mesh, c.to);
  bool fell_back = false;
  absl::StatusOr<std::vector<Step>> steps = internal::ShardySteps(c.mesh, c.from, c.to, &fell_back);
  RC_ASSERT(steps.ok());
  if (fell_back) RC_TAG("fell back");
  Plan plan;
  plan.mesh = c.mesh;
  plan.source = c.from;
  plan.target = c.to;
  plan.steps = *steps;
  if (!plan.steps.empty()) {
    RC_ASSERT(plan.steps.back().type == Canonicalize(c.mesh, c.to));
    plan.steps.back().type = c.to;
  }
  const absl::Status check = CheckSteps(c.mesh, c.from, plan.steps);
  RC_LOG() << check << "\n" << Describe(plan) << "\n";
  RC_ASSERT(check.ok());
  plan.metrics = ComputeMetrics(c.mesh, c.from, plan.steps, plan.cost_model);
  RC_ASSERT(CheckPlan(plan).ok());
  RC_ASSERT(plan.metrics.bytes_received_total >= plan.metrics.lower_bound_bytes_total);
  absl::StatusOr<RunReport> report = RunPlan(plan);
  RC_ASSERT(report.ok());
  RC_LOG() << report->message << "\n";
  RC_ASSERT(report->ok);
  RC_ASSERT(report->bytes_received_total == plan.metrics.bytes_received_total);
}

RESHARD_PROP(ShardyBaselineProperty, CorrectOnWholeAxisCases, 500) {
  CheckRandomCase(*testing::GenReshardCase());
}

// A random case with sub-axes: two adjacent mesh axes of sizes a, b > 1 of a whole-axis case
// become the pieces `merged:(1)a` and `merged:(a)b` of one axis of size a·b, which numbers the
// devices exactly as the two axes did (row-major, the first major), so the case means the same
// on the coarser mesh. Cases without such a pair stay whole-axis.
testing::ReshardCase MergeAdjacentAxes(const testing::ReshardCase& c) {
  const std::vector<MeshAxis>& axes = c.mesh.axes();
  std::vector<int> pairs;
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    if (axes[i].size > 1 && axes[i + 1].size > 1) pairs.push_back(static_cast<int>(i));
  }
  if (pairs.empty()) return c;
  const int i = *rc::gen::elementOf(pairs);
  const int64_t a = axes[i].size, b = axes[i + 1].size;
  std::vector<MeshAxis> merged_axes;
  for (int k = 0; k < static_cast<int>(axes.size()); ++k) {
    if (k == i) merged_axes.push_back(MeshAxis{"merged", a * b});
    if (k != i && k != i + 1) merged_axes.push_back(axes[k]);
  }
  const std::string major = "merged:(1)" + std::to_string(a);
  const std::string minor = "merged:(" + std::to_string(a) + ")" + std::to_string(b);
  auto rename = [&](AxisList& refs) {
    for (AxisName& ref : refs) {
      if (ref == axes[i].name) ref = major;
      else if (ref == axes[i + 1].name) ref = minor;
    }
  };
  testing::ReshardCase out = c;
  absl::StatusOr<Mesh> mesh = Mesh::Create(merged_axes);
  RC_ASSERT(mesh.ok());
  out.mesh = *mesh;
  for (DistType* t : {&out.from, &out.to}) {
    for (Dim& dim : t->dims) rename(dim.axes);
    rename(t->partial);
    RC_ASSERT(Validate(out.mesh, *t).ok());
  }
  RC_TAG("sub-axes");
  return out;
}

RESHARD_PROP(ShardyBaselineProperty, CorrectOnSubAxisCases, 500) {
  CheckRandomCase(MergeAdjacentAxes(*testing::GenReshardCase()));
}

}  // namespace
}  // namespace reshard
