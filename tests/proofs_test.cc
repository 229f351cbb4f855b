// Tests of the Z3 certificates (proofs/): lemmas, synthesized plans proved, mutated plans
// refuted with counterexamples that the reference interpreter confirms, plans that cannot
// execute reported as errors, and the obligation interface.
#include <z3++.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proofs/lemmas.h"
#include "proofs/obligation.h"
#include "proofs/plan_certificate.h"
#include "proofs/verify.h"
#include "synth/synthesize.h"
#include "tests/proofs_support.h"
#include "tests/test_util.h"
#include "typesys/collective.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

using ::reshard::testing::ConfirmCounterexample;
using ::reshard::testing::InterpreterVerdict;
using ::testing::HasSubstr;

using ::reshard::test::M;
using ::reshard::test::T;

Plan Synth(const std::string& mesh, const std::string& from, const std::string& to,
           Strategy strategy = Strategy::kNormal, Objective objective = Objective::kModeledTime) {
  Plan plan;
  Mesh m = M(mesh);
  SynthesisOptions options;
  options.strategy = strategy;
  options.objective = objective;
  absl::StatusOr<Plan> p = Synthesize(m, T(m, from), T(m, to), options);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : plan;
}

// simple_solver: Z3's plain SMT kernel, as VerifyPlan (reshard verify) uses for certificates.
PlanCertificate Certify(const Plan& plan, bool simple_solver = false) {
  ProveOptions options;
  options.simple_solver = simple_solver;
  absl::StatusOr<PlanCertificate> c =
      CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps, options);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// A mutated plan must be refuted, and the interpreter must agree with the counterexample.
void ExpectRefutedAndConfirmed(const Plan& mutated) {
  PlanCertificate cert = Certify(mutated);
  ASSERT_EQ(cert.obligation.status, ObligationStatus::kRefuted)
      << ObligationToText(cert.obligation);
  ASSERT_TRUE(cert.obligation.counterexample.has_value());
  EXPECT_EQ(ConfirmCounterexample(mutated.mesh, mutated.source, mutated.target, mutated.steps,
                                  *cert.obligation.counterexample),
            "")
      << ObligationToText(cert.obligation);
}

TEST(Lemmas, AllProved) {
  for (const Obligation& o : ProveTypingLemmas({})) {
    EXPECT_EQ(o.status, ObligationStatus::kProved) << ObligationToText(o);
    EXPECT_FALSE(o.encoding.empty()) << o.name;
    std::cout << "[ lemma    ] " << o.name << " " << ObligationStatusName(o.status) << " "
              << o.solver_ms << " ms\n";
  }
}

TEST(Obligation, ProveAndRefuteSimpleClaims) {
  z3::context ctx;
  z3::expr x = ctx.int_const("x");
  Obligation proved = ProveClaim("t.proved", "x + 0 = x", x + 0 == x, {});
  EXPECT_EQ(proved.status, ObligationStatus::kProved);
  EXPECT_THAT(proved.encoding, HasSubstr("assert"));
  Obligation refuted = ProveClaim("t.refuted", "x > 0", x > 0, {}, [&](const z3::model& m) {
    return Counterexample{"x is not positive", {{"x", m.eval(x, true).to_string()}}};
  });
  EXPECT_EQ(refuted.status, ObligationStatus::kRefuted);
  ASSERT_TRUE(refuted.counterexample.has_value());
  EXPECT_TRUE(refuted.counterexample->Field("x").has_value());
  EXPECT_THAT(ObligationToJson(refuted), HasSubstr("\"status\":\"refuted\""));
}

TEST(Obligation, SortMismatchIsAnErrorNotAnException) {
  z3::context ctx;
  z3::expr x = ctx.int_const("x");
  z3::expr b = ctx.bool_const("b");
  // Asserting a non-Boolean is a Z3 error; it must come back as kError.
  Obligation o = RefuteViolation("t.error", "ill-sorted", x, {}, {}, {b});
  EXPECT_EQ(o.status, ObligationStatus::kError);
  EXPECT_THAT(o.message, HasSubstr("Z3"));
}

TEST(PlanCertificate, SynthesizedPlansAreProved) {
  const char* cases[][3] = {
      {"x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]"},
      {"x=2,y=2", "f32[8{x,y}]", "f32[8{y,x}]"},
      {"x=4,y=2", "f32[8{x},16,8{y}]", "f32[8,16{x,y},8]"},
      {"x1=2,x2=2,y1=3,y2=2", "f32[12{x1,x2},12{y1,y2}]", "f32[12{y1,y2},12{x1,x2}]"},
      {"x=2,y=2", "f32[8,8] partial{x,y}", "f32[8{x},8]"},
      {"x=2,y=2", "f32[8,8] partial{x,y}", "f32[8,8{y}] partial{x}"},
      {"x=2", "f32[]", "f32[]"},
  };
  for (const auto& c : cases) {
    for (Strategy s : {Strategy::kNormal, Strategy::kNaive}) {
      Plan plan = Synth(c[0], c[1], c[2], s);
      absl::StatusOr<PlanVerification> v = VerifyPlan(plan, {});
      ASSERT_TRUE(v.ok()) << v.status();
      for (const Obligation& o : v->obligations) {
        if (o.name == "plan.memory_bound" && s == Strategy::kNaive) continue;
        EXPECT_EQ(o.status, ObligationStatus::kProved)
            << c[0] << " " << c[1] << " -> " << c[2] << "\n"
            << ObligationToText(o);
      }
    }
  }
}

TEST(PlanCertificate, SwappedPermutePairsAreRefuted) {
  Plan plan = Synth("x=2,y=4", "f32[16{x,y},4]", "f32[16{y,x},4]");
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].op.kind, CollectiveKind::kCollectivePermute);
  auto& pairs = plan.steps[0].op.source_target_pairs;
  ASSERT_GE(pairs.size(), 2u);
  std::swap(pairs[0].second, pairs[1].second);
  ExpectRefutedAndConfirmed(plan);
}

TEST(PlanCertificate, ReversedAxesInMultiAxisCollectiveAreRefuted) {
  // Under the bytes objective: the time objective moves this latency-bound array one piece
  // at a time.
  Plan plan = Synth("x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]", Strategy::kNormal,
                    Objective::kBytes);
  ASSERT_EQ(plan.steps.size(), 1u);
  AxisList& axes = plan.steps[0].op.mesh_axes;
  ASSERT_EQ(axes.size(), 2u);
  std::reverse(axes.begin(), axes.end());
  ExpectRefutedAndConfirmed(plan);
  PlanCertificate cert = Certify(plan);
  // The declared type after the all_to_all is the one that disagrees with the data.
  EXPECT_THAT(cert.obligation.counterexample->Field("first_disagreeing_step").value_or(""),
              HasSubstr("1 (all_to_all"));
}

TEST(PlanCertificate, WrongSliceDimensionIsRefuted) {
  Plan plan = Synth("x=2,y=2", "f32[8,8]", "f32[8{x},8{y}]");
  ASSERT_EQ(plan.steps.size(), 2u);
  for (Step& step : plan.steps) {
    ASSERT_EQ(step.op.kind, CollectiveKind::kAllSlice);
    step.op.dim = 1 - step.op.dim;  // Same local shape, wrong elements.
  }
  ExpectRefutedAndConfirmed(plan);
  // A single wrong dimension changes the local shape: refuted as local_shape.
  Plan one = Synth("x=2", "f32[8,4]", "f32[8{x},4]");
  one.steps[0].op.dim = 1;
  ExpectRefutedAndConfirmed(one);
  EXPECT_EQ(Certify(one).obligation.counterexample->Field("kind"), "local_shape");
}

TEST(PlanCertificate, WrongGatherDimensionIsRefuted) {
  Plan plan = Synth("x=2,y=2", "f32[8{x},8{y}]", "f32[8,8]");
  ASSERT_EQ(plan.steps.size(), 2u);
  for (Step& step : plan.steps) {
    ASSERT_EQ(step.op.kind, CollectiveKind::kAllGather);
    step.op.dim = 1 - step.op.dim;
  }
  ExpectRefutedAndConfirmed(plan);
}

TEST(PlanCertificate, DroppedStepIsRefuted) {
  Plan plan = Synth("x1=2,x2=2,y1=3,y2=2", "f32[12{x1,x2},12{y1,y2}]",
                    "f32[12{y1,y2},12{x1,x2}]");
  ASSERT_GE(plan.steps.size(), 2u);
  for (size_t drop = 0; drop < plan.steps.size(); ++drop) {
    Plan mutated = plan;
    mutated.steps.erase(mutated.steps.begin() + drop);
    SCOPED_TRACE(drop);
    ExpectRefutedAndConfirmed(mutated);
  }
}

TEST(PlanCertificate, DroppedAllReduceIsRefuted) {
  Plan plan = Synth("x=2,y=2", "f32[8,8] partial{x}", "f32[8,8{y}]");
  auto it = std::find_if(plan.steps.begin(), plan.steps.end(), [](const Step& s) {
    return s.op.kind == CollectiveKind::kAllReduce || s.op.kind == CollectiveKind::kReduceScatter;
  });
  ASSERT_NE(it, plan.steps.end());
  Plan mutated = plan;
  if (it->op.kind == CollectiveKind::kReduceScatter) {
    // Replace the reduce_scatter by the slice it performs, minus the sum.
    mutated.steps[it - plan.steps.begin()].op.kind = CollectiveKind::kAllSlice;
  } else {
    mutated.steps.erase(mutated.steps.begin() + (it - plan.steps.begin()));
  }
  ExpectRefutedAndConfirmed(mutated);
  EXPECT_EQ(Certify(mutated).obligation.counterexample->Field("kind"), "term_count");

  // One all_reduce, or its recursive-halving chain under the default model: drop it all.
  Plan reduce = Synth("x=4", "f32[8] partial{x}", "f32[8]");
  ASSERT_FALSE(reduce.steps.empty());
  reduce.steps.clear();
  ExpectRefutedAndConfirmed(reduce);
}

TEST(PlanCertificate, ExtraReductionOverReplicatedAxisIsRefuted) {
  // Summing 2 replicated copies doubles every value.
  Plan plan = Synth("x=2,y=2", "f32[8] partial{x}", "f32[8]");
  plan.steps.push_back(Step{Collective::AllReduce({"y"}), plan.target});
  ExpectRefutedAndConfirmed(plan);
}

TEST(PlanCertificate, SummandsExchangedWithinAKeptPartialGroupAreProved) {
  // A permute that swaps the two summands of a kept partial group (ill-typed by CheckPermute,
  // which keeps summand indices) leaves every group sum intact: the interpreter accepts it,
  // and so must the certificate (it checks each summand once per group, not per device).
  Mesh mesh = M("x=2");
  DistType t = T(mesh, "f32[4] partial{x}");
  std::vector<Step> steps = {Step{Collective::Permute({{0, 1}, {1, 0}}), t}};
  absl::StatusOr<PlanCertificate> cert = CertifyPlan(mesh, t, t, steps);
  ASSERT_TRUE(cert.ok());
  EXPECT_EQ(cert->obligation.status, ObligationStatus::kProved)
      << ObligationToText(cert->obligation);
  bool cannot_execute = false;
  EXPECT_TRUE(InterpreterVerdict(mesh, t, t, steps, &cannot_execute).ok());
}

TEST(PlanCertificate, SummandCountedTwiceIsRefuted) {
  // Device 1 overwrites its summand with device 0's: the x-group sums summand 0 twice.
  Mesh mesh = M("x=2");
  DistType from = T(mesh, "f32[4] partial{x}");
  DistType to = T(mesh, "f32[4]");
  std::vector<Step> steps = {Step{Collective::Permute({{0, 1}}), from},
                             Step{Collective::AllReduce({"x"}), to}};
  absl::StatusOr<PlanCertificate> cert = CertifyPlan(mesh, from, to, steps);
  ASSERT_TRUE(cert.ok());
  ASSERT_EQ(cert->obligation.status, ObligationStatus::kRefuted);
  EXPECT_EQ(cert->obligation.counterexample->Field("kind"), "summand_twice");
  EXPECT_EQ(ConfirmCounterexample(mesh, from, to, steps, *cert->obligation.counterexample), "");
}

TEST(PlanCertificate, CounterexampleConfirmedWhereCanonicalValuesCollided) {
  // Found by ProofsProperty.Z3VerdictEqualsInterpreterWithSubAxes: normal's plan with two
  // permute targets swapped. Z3 refutes it at device 33, local [0,1,1], which holds element 33
  // (summand 0) where element 16 belongs; with summands (e+1)(p+1) the values coincided there
  // ((33+1)·1 = (16+1)·2), so the target group's sum was right at that index (the plan is
  // still wrong elsewhere). The confirmation must see the wrong element.
  Mesh mesh = M("x=3,y=3,z=6");
  DistType from = T(mesh, "i8[9{y},2,3{z:(2)3}] partial{x,z:(1)2}");
  DistType to = T(mesh, "i8[9{z:(2)3,y},2,3] partial{x,z:(1)2}");
  absl::StatusOr<Plan> plan = Synthesize(mesh, from, to, SynthesisOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<Step> steps = plan->steps;
  ASSERT_EQ(steps[0].op.kind, CollectiveKind::kCollectivePermute);
  auto& pairs = steps[0].op.source_target_pairs;
  ASSERT_GE(pairs.size(), 15u);
  std::swap(pairs[6].second, pairs[14].second);
  absl::StatusOr<PlanCertificate> cert = CertifyPlan(mesh, from, to, steps);
  ASSERT_TRUE(cert.ok()) << cert.status();
  ASSERT_EQ(cert->obligation.status, ObligationStatus::kRefuted);
  const Counterexample& cex = *cert->obligation.counterexample;
  EXPECT_EQ(ConfirmCounterexample(mesh, from, to, steps, cex), "")
      << ObligationToText(cert->obligation);
}

TEST(PlanCertificate, DirectPlansAreProved) {
  // Strategy direct: one all_to_all_v (after an all_reduce for partial sources).
  const char* cases[][3] = {
      {"x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]"},
      {"x=2,y=2", "f32[8{x,y}]", "f32[8{y,x}]"},
      {"x=4,y=2", "f32[8{x},16,8{y}]", "f32[8,16{x,y},8]"},
      {"x=2,y=3", "f32[12{x},6{y}]", "f32[12{y},6{x}]"},
      {"x=2,y=2", "f32[8,8] partial{x,y}", "f32[8{x},8]"},
      {"x=2,y=2", "f32[8,8] partial{x,y}", "f32[8,8{y}] partial{x}"},
      // Blocks that do not align: devices receive different numbers of boxes, so the
      // transfers form several classes (TransferClasses).
      {"x=5,y=3", "f32[30{x},4]", "f32[30{y},4]"},
      {"x=3,y=4", "f32[12{x},12{y}]", "f32[12{y},12{x}]"},
  };
  int with_v = 0;
  for (const auto& c : cases) {
    Plan plan = Synth(c[0], c[1], c[2], Strategy::kDirect);
    for (const Step& step : plan.steps) with_v += step.op.kind == CollectiveKind::kAllToAllV;
    absl::StatusOr<PlanVerification> v = VerifyPlan(plan, {});
    ASSERT_TRUE(v.ok()) << v.status();
    for (const Obligation& o : v->obligations) {
      EXPECT_EQ(o.status, ObligationStatus::kProved)
          << c[0] << " " << c[1] << " -> " << c[2] << "\n"
          << ObligationToText(o);
    }
  }
  EXPECT_GE(with_v, 4);  // The cases exercise all_to_all_v, not only a fallback.
}

// The all_to_all_v of the direct plan for `from` -> `to` (the plan's only such step).
Plan DirectPlan(const std::string& mesh, const std::string& from, const std::string& to,
                size_t* v_step) {
  Plan plan = Synth(mesh, from, to, Strategy::kDirect);
  *v_step = plan.steps.size();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (plan.steps[s].op.kind == CollectiveKind::kAllToAllV) *v_step = s;
  }
  EXPECT_LT(*v_step, plan.steps.size()) << "no all_to_all_v in the direct plan";
  return plan;
}

TEST(PlanCertificate, MutatedAllToAllVIsRefuted) {
  size_t v = 0;
  Plan plan = DirectPlan("x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]", &v);
  ASSERT_LT(v, plan.steps.size());
  ASSERT_EQ(Certify(plan).obligation.status, ObligationStatus::kProved);
  std::vector<Transfer>& transfers = plan.steps[v].op.transfers;
  // Swap the sources of two transfers with equal box shapes, different sources and different
  // targets: every element is still written once, but two boxes carry the wrong data.
  bool swapped = false;
  for (size_t a = 0; a < transfers.size() && !swapped; ++a) {
    for (size_t b = a + 1; b < transfers.size() && !swapped; ++b) {
      if (transfers[a].source != transfers[b].source &&
          transfers[a].target != transfers[b].target &&
          transfers[a].shape == transfers[b].shape) {
        std::swap(transfers[a].source, transfers[b].source);
        swapped = true;
      }
    }
  }
  ASSERT_TRUE(swapped);
  ExpectRefutedAndConfirmed(plan);

  // Shift a source offset within the buffer: the box reads neighbouring elements.
  Plan shifted = DirectPlan("x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]", &v);
  Transfer& t = shifted.steps[v].op.transfers.front();
  const std::vector<int64_t> in = LocalShape(shifted.mesh, shifted.source);
  bool moved = false;
  for (size_t i = 0; i < t.shape.size() && !moved; ++i) {
    if (t.source_offset[i] + t.shape[i] < in[i]) {
      ++t.source_offset[i];
      moved = true;
    } else if (t.source_offset[i] > 0) {
      --t.source_offset[i];
      moved = true;
    }
  }
  ASSERT_TRUE(moved);
  ExpectRefutedAndConfirmed(shifted);

  // Across a reduction: the direct plan of a partial source, with two sources swapped.
  Plan partial = DirectPlan("x=2,y=2", "f32[8{x},8] partial{y}", "f32[8{y},8]", &v);
  if (v < partial.steps.size()) {
    std::vector<Transfer>& ts = partial.steps[v].op.transfers;
    for (size_t a = 0; a < ts.size(); ++a) {
      for (size_t b = a + 1; b < ts.size(); ++b) {
        if (ts[a].source != ts[b].source && ts[a].target != ts[b].target &&
            ts[a].shape == ts[b].shape) {
          std::swap(ts[a].source, ts[b].source);
          ExpectRefutedAndConfirmed(partial);
          return;
        }
      }
    }
  }
}

// A large regular all_to_all_v: 256 devices, 64 transfers of one element into each (16384 in
// all), the transfer count of the slowest bench-suite plan on tiny buffers. The encoding groups
// the transfers into classes of target devices (proofs/plan_certificate.cc, TransferClasses);
// a single wrong transfer must still be found, with the device it writes named.
constexpr char kLargeMesh[] = "a=4,b=4,c=4,d=4";
constexpr char kLargeFrom[] = "f32[256{a,b,c,d},64]";
constexpr char kLargeTo[] = "f32[256{d},64{a,b,c}]";

TEST(PlanCertificate, LargeDirectPlanIsProvedCompactly) {
  size_t v = 0;
  Plan plan = DirectPlan(kLargeMesh, kLargeFrom, kLargeTo, &v);
  ASSERT_LT(v, plan.steps.size());
  ASSERT_EQ(plan.steps[v].op.transfers.size(), 16384u);
  PlanCertificate cert = Certify(plan);
  EXPECT_EQ(cert.obligation.status, ObligationStatus::kProved) << ObligationToText(cert.obligation);
  // One class of 64 positions, not 16384 definitions (each of those took ~70 bytes of SMT-LIB).
  EXPECT_LT(cert.obligation.encoding.size(), 200000u);
  std::cout << "[ large    ] 16384 transfers proved in " << cert.obligation.solver_ms
            << " ms, encoding " << cert.obligation.encoding.size() << " bytes\n";
}

// Refuted, confirmed on the interpreter, and the counterexample names the target device of one
// of the mutated transfers `xs` and a local index inside its box.
void ExpectTransferRefuted(const Plan& mutated, const std::vector<Transfer>& xs) {
  PlanCertificate cert = Certify(mutated, /*simple_solver=*/true);
  ASSERT_EQ(cert.obligation.status, ObligationStatus::kRefuted)
      << ObligationToText(cert.obligation);
  ASSERT_TRUE(cert.obligation.counterexample.has_value());
  const Counterexample& cex = *cert.obligation.counterexample;
  EXPECT_EQ(ConfirmCounterexample(mutated.mesh, mutated.source, mutated.target, mutated.steps,
                                  cex),
            "")
      << ObligationToText(cert.obligation);
  EXPECT_EQ(cex.Field("kind").value_or(""), "wrong_element") << cex.text;
  const std::string device = cex.Field("device").value_or("");
  const std::vector<int64_t> l =
      ::reshard::testing::ParseIndex(cex.Field("local_index").value_or("[]"));
  bool in_a_box = false;
  for (const Transfer& x : xs) {
    bool inside = device == absl::StrCat(x.target) && l.size() == x.shape.size();
    for (size_t i = 0; i < l.size() && inside; ++i) {
      inside = x.target_offset[i] <= l[i] && l[i] < x.target_offset[i] + x.shape[i];
    }
    in_a_box = in_a_box || inside;
  }
  EXPECT_TRUE(in_a_box) << cex.text;
  EXPECT_THAT(cex.Field("first_disagreeing_step").value_or(""), HasSubstr("all_to_all_v"))
      << cex.text;
  std::cout << "[ mutated  ] refuted in " << cert.obligation.solver_ms << " ms: " << cex.text
            << "\n";
}

TEST(PlanCertificate, OneWrongTransferAmongManyIsRefuted) {
  size_t v = 0;
  const Plan plan = DirectPlan(kLargeMesh, kLargeFrom, kLargeTo, &v);
  ASSERT_LT(v, plan.steps.size());
  const int64_t n = plan.mesh.num_devices();
  // Transfers of device 0 (the device the classes' coefficients are fitted from), of device 1
  // (a neighbour used for the fit), and of two devices in the middle of the mesh.
  for (size_t index : {size_t{5}, size_t{64 + 63}, size_t{8192 + 37}, size_t{16384 - 200}}) {
    SCOPED_TRACE(absl::StrCat("transfer ", index));
    // Another source device: every element is still written once, one carries wrong data.
    Plan source = plan;
    Transfer& s = source.steps[v].op.transfers[index];
    s.source = (s.source + 1) % n;
    ExpectTransferRefuted(source, {s});
    if (index % 2 == 1) continue;  // The offset mutations on devices 0 and 128 only.

    // The source offset shifted within the buffer: the box reads a neighbouring element.
    Plan shifted = plan;
    Transfer& t = shifted.steps[v].op.transfers[index];
    t.source_offset[1] += t.source_offset[1] + 1 < 64 ? 1 : -1;
    ExpectTransferRefuted(shifted, {t});

    // A wrong target offset: the box is written where another transfer of the same device
    // writes, which writes the box's old place instead (on its own, a moved box would leave
    // a hole and the op could not execute).
    Plan moved = plan;
    std::vector<Transfer>& ts = moved.steps[v].op.transfers;
    const size_t other = index % 64 == 0 ? index + 1 : index - 1;  // Same target device.
    ASSERT_EQ(ts[other].target, ts[index].target);
    std::swap(ts[index].target_offset, ts[other].target_offset);
    ExpectTransferRefuted(moved, {ts[index], ts[other]});
  }
}

// Every single-transfer mutation of small direct plans whose transfers form several classes:
// the verdict equals the interpreter's, and refutations are confirmed.
TEST(PlanCertificate, EverySingleTransferMutationAgreesWithTheInterpreter) {
  const char* cases[][3] = {
      {"x=5,y=3", "f32[30{x},4]", "f32[30{y},4]"},
      {"x=3,y=4", "f32[12{x},12{y}]", "f32[12{y},12{x}]"},
  };
  int refuted = 0;
  for (const auto& c : cases) {
    size_t v = 0;
    const Plan plan = DirectPlan(c[0], c[1], c[2], &v);
    ASSERT_LT(v, plan.steps.size());
    const size_t count = plan.steps[v].op.transfers.size();
    for (size_t index = 0; index < count; ++index) {
      for (int mutation = 0; mutation < 2; ++mutation) {
        Plan mutated = plan;
        Transfer& x = mutated.steps[v].op.transfers[index];
        if (mutation == 0) {
          x.source = (x.source + 1) % plan.mesh.num_devices();
        } else if (x.source_offset[0] > 0) {
          --x.source_offset[0];
        } else {
          ++x.source_offset[0];  // May leave the buffer: then both sides cannot execute.
        }
        SCOPED_TRACE(absl::StrCat(c[0], " ", c[1], " -> ", c[2], ": transfer ", index,
                                  " mutation ", mutation));
        bool cannot_execute = false;
        const absl::Status verdict = InterpreterVerdict(mutated.mesh, mutated.source,
                                                        mutated.target, mutated.steps,
                                                        &cannot_execute);
        PlanCertificate cert = Certify(mutated, /*simple_solver=*/true);
        if (cannot_execute) {
          EXPECT_EQ(cert.obligation.status, ObligationStatus::kError);
        } else if (verdict.ok()) {
          EXPECT_EQ(cert.obligation.status, ObligationStatus::kProved)
              << ObligationToText(cert.obligation);
        } else {
          ASSERT_EQ(cert.obligation.status, ObligationStatus::kRefuted) << verdict;
          EXPECT_EQ(ConfirmCounterexample(mutated.mesh, mutated.source, mutated.target,
                                          mutated.steps, *cert.obligation.counterexample),
                    "");
          ++refuted;
        }
      }
    }
  }
  EXPECT_GE(refuted, 20);
}

// all_to_all with split_axis = concat_axis exchanges pieces within one dimension: once it
// scrambles the blocks (refuted, confirmed), twice it is the identity (proved).
TEST(PlanCertificate, AllToAllWithinOneDimensionAgreesWithTheInterpreter) {
  Mesh mesh = M("x=2,y=3");
  DistType type = T(mesh, "f32[12{x},6]");
  std::vector<Step> once = {Step{Collective::AllToAll({"x"}, 0, 0), type}};
  absl::StatusOr<PlanCertificate> cert = CertifyPlan(mesh, type, type, once);
  ASSERT_TRUE(cert.ok()) << cert.status();
  ASSERT_EQ(cert->obligation.status, ObligationStatus::kRefuted)
      << ObligationToText(cert->obligation);
  EXPECT_EQ(ConfirmCounterexample(mesh, type, type, once, *cert->obligation.counterexample), "");
  std::vector<Step> twice = {once[0], once[0]};
  cert = CertifyPlan(mesh, type, type, twice);
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_EQ(cert->obligation.status, ObligationStatus::kProved)
      << ObligationToText(cert->obligation);
  bool cannot_execute = false;
  EXPECT_TRUE(InterpreterVerdict(mesh, type, type, twice, &cannot_execute).ok());
}

// A permute on 256 devices that exchanges the axes (a,b) and (c,d): the certificate encodes
// its source function as one affine class instead of an ite chain over 240 pairs; a single
// exchanged pair is still refuted.
TEST(PlanCertificate, LargePermuteWithTwoTargetsExchangedIsRefuted) {
  const Plan plan = Synth(kLargeMesh, "f32[64{a,b},64{c,d}]", "f32[64{c,d},64{a,b}]");
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].op.kind, CollectiveKind::kCollectivePermute);
  EXPECT_EQ(Certify(plan).obligation.status, ObligationStatus::kProved);
  const size_t pairs = plan.steps[0].op.source_target_pairs.size();
  ASSERT_GE(pairs, 200u);
  for (size_t index : {size_t{0}, pairs / 2, pairs - 2}) {
    Plan mutated = plan;
    auto& p = mutated.steps[0].op.source_target_pairs;
    std::swap(p[index].second, p[index + 1].second);
    PlanCertificate cert = Certify(mutated);
    ASSERT_EQ(cert.obligation.status, ObligationStatus::kRefuted)
        << ObligationToText(cert.obligation);
    const Counterexample& cex = *cert.obligation.counterexample;
    EXPECT_EQ(ConfirmCounterexample(mutated.mesh, mutated.source, mutated.target, mutated.steps,
                                    cex),
              "")
        << cex.text;
    EXPECT_THAT((std::vector<std::string>{absl::StrCat(p[index].second),
                                          absl::StrCat(p[index + 1].second)}),
                ::testing::Contains(cex.Field("device").value_or("")))
        << cex.text;
  }
}

TEST(PlanCertificate, AllToAllVThatCannotExecuteIsAnError) {
  size_t v = 0;
  const Plan plan = DirectPlan("x=2,y=4", "f32[16{x,y},8]", "f32[16,8{x,y}]", &v);
  ASSERT_LT(v, plan.steps.size());
  auto expect_error = [&](const Plan& bad, const char* message) {
    PlanCertificate cert = Certify(bad);
    EXPECT_EQ(cert.obligation.status, ObligationStatus::kError)
        << ObligationToText(cert.obligation);
    EXPECT_THAT(cert.obligation.message, HasSubstr(message));
    bool cannot_execute = false;
    absl::Status verdict =
        InterpreterVerdict(bad.mesh, bad.source, bad.target, bad.steps, &cannot_execute);
    EXPECT_TRUE(cannot_execute) << verdict;
    EXPECT_THAT(std::string(verdict.message()), HasSubstr(message));
  };
  Plan dropped = plan;
  dropped.steps[v].op.transfers.pop_back();
  expect_error(dropped, "not completely written");
  Plan twice = plan;
  twice.steps[v].op.transfers.push_back(twice.steps[v].op.transfers.front());
  expect_error(twice, "twice");
  Plan outside = plan;
  outside.steps[v].op.transfers.front().target_offset[0] += 100;
  expect_error(outside, "box leaves a buffer");
  Plan no_device = plan;
  no_device.steps[v].op.transfers.front().source = 99;
  expect_error(no_device, "out of range");
}

TEST(PlanCertificate, PlansThatCannotExecuteAreErrors) {
  Mesh mesh = M("x=2,y=3");
  DistType from = T(mesh, "f32[8,6]");
  struct Bad {
    Collective op;
    const char* message;
  } bad[] = {
      {Collective::AllSlice({"x"}, 2), "out of range"},
      {Collective::AllSlice({"y"}, 0), "not divisible"},
      {Collective::AllGather({"z"}, 0), "not an axis"},
      {Collective::AllToAll({"x", "x"}, 0, 1), "twice"},
      {Collective::Permute({{0, 9}}), "names device 9"},
      {Collective::Permute({{0, 1}, {2, 1}}), "twice as a target"},
  };
  for (const Bad& b : bad) {
    std::vector<Step> steps = {Step{b.op, from}};
    absl::StatusOr<PlanCertificate> cert = CertifyPlan(mesh, from, from, steps);
    ASSERT_TRUE(cert.ok());
    EXPECT_EQ(cert->obligation.status, ObligationStatus::kError) << ToString(b.op);
    EXPECT_THAT(cert->obligation.message, HasSubstr(b.message));
    bool cannot_execute = false;
    EXPECT_FALSE(InterpreterVerdict(mesh, from, from, steps, &cannot_execute).ok());
    EXPECT_TRUE(cannot_execute) << ToString(b.op);
  }
}

TEST(PlanCertificate, BadInputIsInvalidArgument) {
  Mesh mesh = M("x=2");
  EXPECT_FALSE(CertifyPlan(mesh, T(mesh, "f32[8]"), T(mesh, "f32[4]"), {}).ok());
  EXPECT_FALSE(CertifyPlan(mesh, T(mesh, "f32[8]"), T(mesh, "f32[8] partial{x}"), {}).ok());
  DistType bad;
  bad.dims = {Dim{3, {"x"}}};
  EXPECT_FALSE(CertifyPlan(mesh, bad, bad, {}).ok());
}

TEST(PlanCertificate, TimeoutIsNeverProved) {
  // With a 1 ms budget on a large permute the answer may be unknown, never a wrong "proved"
  // for a wrong plan.
  Plan plan = Synth("a=4,b=4,c=4", "f32[64{a,b,c}]", "f32[64{c,b,a}]");
  ASSERT_FALSE(plan.steps.empty());
  std::swap(plan.steps[0].op.source_target_pairs[0].second,
            plan.steps[0].op.source_target_pairs[1].second);
  ProveOptions options;
  options.timeout_ms = 1;
  absl::StatusOr<PlanCertificate> cert =
      CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps, options);
  ASSERT_TRUE(cert.ok());
  EXPECT_NE(cert->obligation.status, ObligationStatus::kProved);
}

TEST(PlanCertificate, HugeTimeoutIsNoTimeout) {
  // A timeout beyond what a clock deadline can hold (INT64_MAX ms) once overflowed it: the
  // watchdog fired at once, and the interrupted checks came back unknown or, now and then,
  // sat with a meaningless model (a correct plan refuted).
  Plan plan = Synth("a=4,b=4,c=4", "f32[64{a,b,c}]", "f32[64{c,b,a}]");
  ProveOptions options;
  options.timeout_ms = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<PlanCertificate> cert =
        CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps, options);
    ASSERT_TRUE(cert.ok()) << cert.status();
    EXPECT_EQ(cert->obligation.status, ObligationStatus::kProved) << cert->obligation.message;
  }
}

TEST(Suite, ParsesCasesAndComments) {
  absl::StatusOr<std::vector<SuiteCase>> cases =
      ParseSuite("# comment\n\nx=2 | f32[8{x}] | f32[8] # trailing\nx=2|f32[8]|f32[8{x}]|naive\n");
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].line, 3);
  EXPECT_EQ((*cases)[0].strategy, "normal");
  EXPECT_EQ((*cases)[1].strategy, "naive");
  EXPECT_FALSE(ParseSuite("x=2 | f32[8]\n").ok());
  EXPECT_FALSE(ParseSuite("x=2 | | f32[8]\n").ok());
}

}  // namespace
}  // namespace reshard
