// Unit tests of typesys: meshes, types, typing rules, metrics, plan JSON.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "typesys/axis_name.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using ::reshard::test::M;
using ::reshard::test::T;

std::string ErrorOf(const absl::Status& status) {
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(MeshTest, ParsesAndPrints) {
  Mesh mesh = M(" x = 2 , y=4 ");
  EXPECT_EQ(mesh.ToString(), "x=2,y=4");
  EXPECT_EQ(mesh.num_devices(), 8);
  EXPECT_EQ(mesh.AxisIndex("y"), 1);
  EXPECT_EQ(mesh.AxisIndex("z"), -1);
}

TEST(MeshTest, FindsAxesByNameOfAnyLength) {
  // Names of up to 15 bytes are compared as AxisNames (two packed words), longer ones as
  // text; prefixes, extensions and names that differ only in the middle, in byte 8 or in
  // their last byte must not match, by text or by AxisName.
  Mesh mesh =
      M("a=2,ab=2,abcdefg=2,abcdefgh=2,abcdefghi=2,pipeline_stage=2,pipeline_stagf=2,"
        "abcdefghijklmno=2,abcdefghijklmnop=2,abcdefghijklmnopq=2,abcdefghXjklmno=2");
  const std::vector<std::string> names = {"a",
                                          "ab",
                                          "abcdefg",
                                          "abcdefgh",
                                          "abcdefghi",
                                          "pipeline_stage",
                                          "pipeline_stagf",
                                          "abcdefghijklmno",
                                          "abcdefghijklmnop",
                                          "abcdefghijklmnopq",
                                          "abcdefghXjklmno"};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(mesh.AxisIndex(names[i]), static_cast<int>(i)) << names[i];
    EXPECT_EQ(mesh.AxisIndex(AxisName(names[i])), static_cast<int>(i)) << names[i];
  }
  for (const char* absent :
       {"", "b", "abc", "abcdefgi", "abcdefghij", "pipeline_stagg", "abcdefghijklmnn",
        "abcdefghijklmn", "abcdefghijklmnoq", "abcdefghijklmnoQ", "bbcdefghijklmno"}) {
    EXPECT_EQ(mesh.AxisIndex(absent), -1) << absent;
    EXPECT_EQ(mesh.AxisIndex(AxisName(absent)), -1) << absent;
  }
  EXPECT_EQ(mesh.AxisIndex(std::string_view("a\0", 2)), -1);
  EXPECT_EQ(mesh.AxisIndex(std::string_view("abcdefgh\0", 9)), -1);
  // A mesh without names of 8-15 bytes has no such keys, and finds none.
  EXPECT_EQ(M("x=2,tensor=4").AxisIndex("tensor:(1)2"), -1);
  // The atoms of a refined mesh of production-style names (8-15 bytes each).
  absl::StatusOr<AxisRefinement> refined =
      AxisRefinement::Create(M("data=2,tensor=8"), {}, /*prime_factors=*/true);
  ASSERT_TRUE(refined.ok()) << refined.status();
  const Mesh& atoms = refined->refined();
  ASSERT_EQ(atoms.num_axes(), 4);
  for (int i = 0; i < atoms.num_axes(); ++i) {
    EXPECT_EQ(atoms.AxisIndex(atoms.axes()[i].name), i) << atoms.axes()[i].name;
  }
  EXPECT_EQ(atoms.AxisIndex("tensor:(1)4"), -1);
  // Sub-axes resolve whether or not the mesh has them as atoms.
  Mesh x = M("x=8,y=2");
  EXPECT_EQ(x.Resolve("x:(2)2").index, 0);
  EXPECT_EQ(x.Resolve("x:(2)2").stride, 2);
  EXPECT_EQ(x.Resolve("x:(2)2").size, 2);
  EXPECT_EQ(x.AxisIndex("x:(2)2"), -1);
  EXPECT_EQ(x.AxisSize("x:(1)4"), 4);
}

TEST(AxisNameTest, HoldsShortNamesInPlaceAndInternsLongOnes) {
  // Around the 15-byte boundary: both kinds read back, compare by name, and never equal a
  // name of the other kind or a prefix.
  const std::string fifteen = "abcdefghijklmno", sixteen = "abcdefghijklmnop";
  const AxisName a = fifteen, b = sixteen, c = std::string_view(sixteen);
  EXPECT_EQ(a.view(), fifteen);
  EXPECT_EQ(b.view(), sixteen);
  EXPECT_EQ(b, c);
  EXPECT_EQ(b.view().data(), c.view().data());  // One interned copy.
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(AxisName("abcdefghijklmn") == a);
  EXPECT_FALSE(AxisName("abcdefghijklmnopq") == b);
  EXPECT_EQ(AxisName(std::string_view("a\0", 2)).size(), 2u);
  EXPECT_FALSE(AxisName(std::string_view("a\0", 2)) == AxisName("a"));
  EXPECT_TRUE(AxisName().empty());
  EXPECT_EQ(AxisName(""), AxisName());
  // Against text, either side.
  EXPECT_TRUE(a == fifteen);
  EXPECT_TRUE(b == "abcdefghijklmnop");
  EXPECT_TRUE(std::string_view("y:(1)2") == AxisName("y:(1)2"));
  // Byte order, as std::string's.
  std::vector<AxisName> sorted = {"y", sixteen, "x:(2)2", "", fifteen, "x"};
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> texts;
  for (const AxisName& n : sorted) texts.push_back(n.str());
  EXPECT_EQ(texts, (std::vector<std::string>{"", fifteen, sixteen, "x", "x:(2)2", "y"}));
  EXPECT_EQ(JoinAxes(AxisList{"x", sixteen, "y:(1)2"}, ","), "x," + sixteen + ",y:(1)2");
  EXPECT_EQ(JoinAxes(AxisList{}, ","), "");
  // Hashing agrees with equality (absl containers key by AxisName).
  absl::flat_hash_set<AxisName> set = {a, b, "x"};
  EXPECT_TRUE(set.contains(AxisName(fifteen)));
  EXPECT_TRUE(set.contains(AxisName(sixteen)));
  EXPECT_FALSE(set.contains(AxisName("y")));
}

TEST(MeshTest, RowMajorCoordinates) {
  Mesh mesh = M("x=2,y=4");
  EXPECT_EQ(mesh.Coordinates(5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(mesh.DeviceId({1, 3}), 7);
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(mesh.DeviceId(mesh.Coordinates(d)), d);
}

TEST(MeshTest, GroupsFollowListedAxisOrder) {
  Mesh mesh = M("x=2,y=4");
  EXPECT_EQ(mesh.Group(5, {"y"}), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.Group(5, {"x"}), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(mesh.Group(0, {"x", "y"}), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // y major, x minor: the order of devices 0..7 interleaves.
  EXPECT_EQ(mesh.Group(0, {"y", "x"}), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(mesh.IndexOver(5, {"y", "x"}), 3);
  EXPECT_EQ(mesh.IndexOver(5, {"x", "y"}), 5);
}

TEST(MeshTest, RejectsBadMeshes) {
  EXPECT_NE(ErrorOf(ParseMesh("").status()).find("empty"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=2,x=3").status()).find("appears twice"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=0").status()).find("size 0"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=-3").status()).find("size -3"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x").status()).find("name=size"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=two").status()).find("'two'"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("1x=2").status()).find("identifier"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=99999999999999999999").status()).find("64-bit"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseMesh("x=4096,y=4096").status()).find("more than"), std::string::npos);
}

TEST(TypeTest, ParsePrintCanonical) {
  for (const char* text : {"f32[16{x,y},8] partial{z}", "f32[]", "bf16[4,4{y}]", "i8[] partial{x}",
                           "i64[2{x},3,4{y,z}]"}) {
    absl::StatusOr<DistType> type = ParseType(text);
    ASSERT_TRUE(type.ok()) << text << ": " << type.status();
    EXPECT_EQ(ToString(*type), text);
  }
}

TEST(TypeTest, WhitespaceAndEmptyBraces) {
  absl::StatusOr<DistType> type = ParseType("  f32 [ 16 { x , y } , 8{} ]  partial { z }  ");
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(ToString(*type), "f32[16{x,y},8] partial{z}");
  EXPECT_EQ(ToString(*ParseType("f32[8] partial{}")), "f32[8]");
}

TEST(TypeTest, PartialIsASet) {
  EXPECT_EQ(*ParseType("f32[8] partial{x,y}"), *ParseType("f32[8] partial{y,x}"));
  EXPECT_FALSE(*ParseType("f32[8{x,y}]") == *ParseType("f32[8{y,x}]"));
}

TEST(TypeTest, SyntaxErrorsNameThePosition) {
  EXPECT_NE(ErrorOf(ParseType("f33[8]").status()).find("unknown element type 'f33'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[8{x}").status()).find("offset"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[8{x,}]").status()).find("mesh axis name"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[-8]").status()).find("dimension size"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[99999999999999999999]").status()).find("overflows"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[8] sum{x}").status()).find("partial"), std::string::npos);
  EXPECT_NE(ErrorOf(ParseType("f32[8] partial{x} x").status()).find("after the type"),
            std::string::npos);
  ErrorOf(ParseType("").status());
}

TEST(TypeTest, ValidationMessages) {
  Mesh mesh = M("x=2,y=4");
  auto error = [&](const char* text) {
    return ErrorOf(Validate(mesh, *ParseType(text)));
  };
  EXPECT_NE(error("f32[8{q}]").find("unknown mesh axis 'q' in dimension 0"), std::string::npos);
  EXPECT_NE(error("f32[8{x},8{x}]").find("'x' is used twice"), std::string::npos);
  EXPECT_NE(error("f32[8{x}] partial{x}").find("dimension 0 and partial"), std::string::npos);
  EXPECT_NE(error("f32[0]").find("size 0"), std::string::npos);
  EXPECT_NE(error("f32[12{x,y}]").find("size 12, not divisible by 8"), std::string::npos);
  EXPECT_NE(error("f32[4611686018427387904,4]").find("overflows"), std::string::npos);
  EXPECT_NE(error("f64[1152921504606846976]").find("overflows"), std::string::npos);
  EXPECT_NE(error("f32[1099511627776,16384]").find("too large"), std::string::npos);
}

TEST(TypeTest, LocalShapesAndBlocks) {
  Mesh mesh = M("x=2,y=4");
  DistType type = T(mesh, "f32[16{x,y},8] ");
  EXPECT_EQ(LocalShape(mesh, type), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(LocalBytes(mesh, type), 64);
  // Device 6 = (x=1, y=2): block 1*4+2 = 6 in dimension 0.
  EXPECT_EQ(BlockIndex(mesh, type, 6), (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(BlockOffset(mesh, type, 6), (std::vector<int64_t>{12, 0}));
  DistType reversed = T(mesh, "f32[16{y,x},8]");
  EXPECT_EQ(BlockIndex(mesh, reversed, 6), (std::vector<int64_t>{5, 0}));
  DistType partial = T(mesh, "f32[8{y}] partial{x}");
  EXPECT_EQ(SummandIndex(mesh, partial, 6), 1);
  EXPECT_EQ(NumSummands(mesh, partial), 2);
  EXPECT_EQ(AxisUse(partial, "x"), kPartial);
  EXPECT_EQ(AxisUse(partial, "y"), 0);
  EXPECT_EQ(GlobalElements(T(mesh, "f32[]")), 1);
}

TEST(TypeTest, SameLocalShapeComparesPerDimension) {
  Mesh mesh = M("x=2,y=4");
  const DistType a = T(mesh, "f32[16{x,y},8]");       // local [2, 8]
  EXPECT_TRUE(SameLocalShape(mesh, a, T(mesh, "f32[16{y,x},8]")));
  EXPECT_TRUE(SameLocalShape(mesh, a, T(mesh, "f32[2,32{y}] partial{x}")));  // [2, 8] too
  EXPECT_FALSE(SameLocalShape(mesh, a, T(mesh, "f32[16{y},8{x}]")));  // [4, 4]: same size
  EXPECT_FALSE(SameLocalShape(mesh, a, T(mesh, "f32[16{x,y}]")));     // another rank
  EXPECT_TRUE(SameLocalShape(mesh, T(mesh, "f32[]"), T(mesh, "f32[] partial{x}")));
}

TEST(RuleTest, EachCollective) {
  Mesh mesh = M("x=2,y=4,z=2");
  auto apply = [&](const char* in, const Collective& op) {
    absl::StatusOr<DistType> out = ApplyRule(mesh, T(mesh, in), op);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) {
      EXPECT_EQ(ToString(ApplyAcceptedRule(T(mesh, in), op)), ToString(*out));
    }
    return out.ok() ? ToString(*out) : "";
  };
  EXPECT_EQ(apply("f32[16{x},8]", Collective::AllSlice({"y"}, 0)), "f32[16{x,y},8]");
  EXPECT_EQ(apply("f32[16{x,y},8]", Collective::AllGather({"y"}, 0)), "f32[16{x},8]");
  EXPECT_EQ(apply("f32[16{x,y},8]", Collective::AllGather({"x", "y"}, 0)), "f32[16,8]");
  EXPECT_EQ(apply("f32[16{x,y},8]", Collective::AllToAll({"x", "y"}, 0, 1)), "f32[16,8{x,y}]");
  EXPECT_EQ(apply("f32[16{x,y},8{z}]", Collective::AllToAll({"y"}, 0, 1)), "f32[16{x},8{z,y}]");
  EXPECT_EQ(apply("f32[16,8] partial{x,z}", Collective::AllReduce({"z"})), "f32[16,8] partial{x}");
  EXPECT_EQ(apply("f32[16,8] partial{x,z}", Collective::ReduceScatter({"z", "x"}, 1)),
            "f32[16,8{z,x}]");
}

TEST(RuleTest, BrokenRulesAreNamed) {
  Mesh mesh = M("x=2,y=4");
  auto error = [&](const char* in, const Collective& op) {
    return ErrorOf(ApplyRule(mesh, T(mesh, in), op).status());
  };
  EXPECT_NE(error("f32[8{x,y}]", Collective::AllGather({"x"}, 0)).find("does not end with [x]"),
            std::string::npos);
  EXPECT_NE(error("f32[8{x}]", Collective::AllSlice({"x"}, 0)).find("already used"),
            std::string::npos);
  EXPECT_NE(error("f32[4{x}]", Collective::AllSlice({"y"}, 0)).find("cannot be split 8 ways"),
            std::string::npos);
  EXPECT_NE(error("f32[8]", Collective::AllSlice({"y"}, 1)).find("out of range"),
            std::string::npos);
  EXPECT_NE(error("f32[8{x},8]", Collective::AllToAll({"x"}, 0, 0)).find("same dimension"),
            std::string::npos);
  EXPECT_NE(error("f32[8]", Collective::AllReduce({"x"})).find("not a partial axis"),
            std::string::npos);
  EXPECT_NE(error("f32[8]", Collective::AllGather({}, 0)).find("mesh_axes is empty"),
            std::string::npos);
  EXPECT_NE(error("f32[8{x}]", Collective::AllGather({"x", "x"}, 0)).find("'x' twice"),
            std::string::npos);
  EXPECT_NE(error("f32[8{x}]", Collective::AllGather({"w"}, 0))
                .find("names 'w', which is not an axis"),
            std::string::npos);
}

TEST(RuleTest, PermuteRealisesBlocks) {
  Mesh mesh = M("x=2,y=2");
  DistType xy = T(mesh, "f32[8{x,y}]");
  DistType yx = T(mesh, "f32[8{y,x}]");
  // Devices 1 (x=0,y=1) and 2 (x=1,y=0) swap blocks; 0 and 3 keep theirs.
  EXPECT_TRUE(CheckPermute(mesh, xy, Collective::Permute({{1, 2}, {2, 1}}), yx).ok());
  EXPECT_NE(ErrorOf(CheckPermute(mesh, xy, Collective::Permute({{1, 2}}), yx)).find("device 1"),
            std::string::npos);
  EXPECT_NE(ErrorOf(CheckPermute(mesh, xy, Collective::Permute({{1, 2}, {1, 3}}), yx))
                .find("twice as a source"),
            std::string::npos);
  EXPECT_NE(ErrorOf(CheckPermute(mesh, xy, Collective::Permute({{1, 9}}), yx)).find("device 9"),
            std::string::npos);
  EXPECT_NE(ErrorOf(CheckPermute(mesh, xy, Collective::Permute({}), T(mesh, "f32[8{x}]")))
                .find("local shapes differ"),
            std::string::npos);
}

TEST(MetricsTest, BytesPerTable) {
  Mesh mesh = M("x=2,y=4");
  DistType in = T(mesh, "f32[16{x,y},8]");  // 64 local bytes
  EXPECT_EQ(BytesReceived(mesh, in, Collective::AllGather({"y"}, 0), 0), 3 * 64);
  EXPECT_EQ(BytesReceived(mesh, in, Collective::AllToAll({"x", "y"}, 0, 1), 3), 7 * 8);
  EXPECT_EQ(BytesReceived(mesh, in, Collective::AllSlice({}, 1), 3), 0);
  DistType partial = T(mesh, "f32[3] partial{y}");  // 12 bytes, ring all_reduce 2*3/4*12 = 18
  EXPECT_EQ(BytesReceived(mesh, partial, Collective::AllReduce({"y"}), 0), 18);
  DistType scalar = T(mesh, "f32[] partial{x,y}");  // 4 bytes, 2*7/8*4 = 7
  EXPECT_EQ(BytesReceived(mesh, scalar, Collective::AllReduce({"x", "y"}), 0), 7);
}

TEST(MetricsTest, LowerBound) {
  Mesh mesh = M("x=2,y=4");
  // One all_to_all: each device keeps 2 of its 16 elements.
  EXPECT_EQ(LowerBoundBytesTotal(mesh, T(mesh, "f32[16{x,y},8]"), T(mesh, "f32[16,8{x,y}]")),
            8 * 14 * 4);
  // Gathering to replicated: each device lacks 128 - 16 elements.
  EXPECT_EQ(LowerBoundBytesTotal(mesh, T(mesh, "f32[16{x,y},8]"), T(mesh, "f32[16,8]")),
            8 * 112 * 4);
  // Slicing needs nothing.
  EXPECT_EQ(LowerBoundBytesTotal(mesh, T(mesh, "f32[16,8]"), T(mesh, "f32[16{y},8{x}]")), 0);
  // Reducing needs every target element once.
  EXPECT_EQ(LowerBoundBytesTotal(mesh, T(mesh, "f32[16,8] partial{x}"), T(mesh, "f32[16{x},8]")),
            8 * 64 * 4);
}

Plan SwapPlan(const Mesh& mesh) {
  Plan plan;
  plan.mesh = mesh;
  plan.source = T(mesh, "f32[8{x,y}]");
  plan.target = T(mesh, "f32[8{y,x}]");
  plan.strategy = "hand";
  plan.steps = {Step{Collective::Permute({{1, 2}, {2, 1}}), plan.target}};
  plan.metrics = ComputeMetrics(mesh, plan.source, plan.steps);
  return plan;
}

TEST(PlanTest, MetricsWithAKnownLowerBound) {
  // A permute between the two holders of one block, then group collectives (which every
  // device receives alike): per-device and total bytes add up across both kinds, and the
  // overload that takes the lower bound computes everything else the same.
  Mesh mesh = M("x=2,y=3");
  const DistType from = T(mesh, "f32[12{y},6]");  // 96 B per device.
  const std::vector<Step> steps = {
      Step{Collective::Permute({{0, 3}, {3, 0}}), from},
      Step{Collective::AllToAll({"y"}, 0, 1), T(mesh, "f32[12,6{y}]")},
      Step{Collective::AllGather({"y"}, 1), T(mesh, "f32[12,6]")},
  };
  ASSERT_TRUE(CheckSteps(mesh, from, steps).ok()) << CheckSteps(mesh, from, steps);
  const Metrics full = ComputeMetrics(mesh, from, steps, CostModel());
  EXPECT_EQ(full.bytes_received_max, 96 + 64 + 192);
  EXPECT_EQ(full.bytes_received_total, 2 * 96 + 6 * (64 + 192));
  EXPECT_EQ(full.lower_bound_bytes_total, LowerBoundBytesTotal(mesh, from, steps.back().type));
  EXPECT_EQ(ComputeMetrics(mesh, from, steps, CostModel(), full.lower_bound_bytes_total), full);
}

TEST(PlanTest, CheckAndMetrics) {
  Mesh mesh = M("x=2,y=2");
  Plan plan = SwapPlan(mesh);
  EXPECT_TRUE(CheckPlan(plan).ok()) << CheckPlan(plan);
  EXPECT_EQ(plan.metrics.peak_local_bytes, 8);
  EXPECT_EQ(plan.metrics.bytes_received_max, 8);
  EXPECT_EQ(plan.metrics.bytes_received_total, 16);
  EXPECT_EQ(plan.metrics.lower_bound_bytes_total, 16);
  plan.steps.push_back(Step{Collective::AllGather({"y"}, 0), T(mesh, "f32[8]")});
  std::string message = ErrorOf(CheckPlan(plan));
  EXPECT_NE(message.find("step 2 (all_gather mesh_axes=[y] gather_axis=0)"), std::string::npos)
      << message;
}

TEST(PlanTest, JsonRoundTrip) {
  Mesh mesh = M("x=2,y=2");
  Plan plan = SwapPlan(mesh);
  std::string json = PlanToJson(plan);
  EXPECT_EQ(json,
            R"({"mesh":"x=2,y=2","from":"f32[8{x,y}]","to":"f32[8{y,x}]","strategy":"hand",)"
            R"("steps":[{"op":"collective_permute","mesh_axes":[],"source_target_pairs":[[1,2],)"
            R"([2,1]],"type":"f32[8{y,x}]"}],"metrics":{"peak_local_bytes":8,)"
            R"("bytes_received_max":8,"bytes_received_total":16,"lower_bound_bytes_total":16,)"
            R"("cost_us":5.0}})");
  absl::StatusOr<Plan> back = PlanFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->steps, plan.steps);
  EXPECT_EQ(back->metrics, plan.metrics);
  EXPECT_EQ(PlanToJson(*back), json);
}

TEST(CostModelTest, RingFormulasPerAxis) {
  Mesh mesh = M("x=2,y=4");
  absl::StatusOr<CostModel> model = ParseCostModel(" x = 1.5:300 , y=10:25");
  ASSERT_TRUE(model.ok()) << model.status();
  DistType t = T(mesh, "f32[16{x,y},1000]");  // 2x1000 f32 = 8000 bytes per device.
  const double b = 8000;
  auto us = [](double bytes, double gbps) { return bytes / (gbps * 1e3); };
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllGather({"y"}, 0)),
                   3 * 10 + us(3 * b, 25));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllGather({"x", "y"}, 0)),
                   7 * 10 + us(7 * b, 25));  // Limited by the slower axis y.
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllToAll({"x", "y"}, 0, 1)),
                   7 * 10 + us(7.0 / 8 * b, 25));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllSlice({"x"}, 1)), 0);
  DistType p = T(mesh, "f32[16,1000] partial{x}");
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, p, Collective::AllReduce({"x"})),
                   2 * 1.5 + us(64000, 300));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, p, Collective::ReduceScatter({"x"}, 0)),
                   1.5 + us(32000, 300));
  // Devices 0 and 4 differ only in x (fast); 0 and 1 only in y (slow).
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::Permute({{0, 4}, {4, 0}})),
                   1.5 + us(b, 300));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::Permute({{0, 4}, {1, 0}})),
                   10 + us(b, 25));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::Permute({})), 0);
  EXPECT_EQ(model->ToString(), "x=1.5:300,y=10:25");
  // Defaults: 5 us, 100 GB/s on every axis.
  EXPECT_DOUBLE_EQ(CostModel().StepCostUs(mesh, t, Collective::AllGather({"x"}, 0)),
                   5 + us(b, 100));
  // Every link costs the same then: one message, or nothing when no pair moves.
  EXPECT_DOUBLE_EQ(CostModel().StepCostUs(mesh, t, Collective::Permute({{0, 4}, {1, 0}})),
                   5 + us(b, 100));
  EXPECT_DOUBLE_EQ(CostModel().StepCostUs(mesh, t, Collective::Permute({{3, 3}})), 0);
}

// An axis of size 1 exchanges nothing: a slow link on it does not slow the group.
TEST(CostModelTest, SizeOneAxesDoNotSlowAGroup) {
  Mesh mesh = M("u=1,y=4");
  absl::StatusOr<CostModel> model = ParseCostModel("u=100:1,y=10:25");
  ASSERT_TRUE(model.ok()) << model.status();
  DistType t = T(mesh, "f32[16{u,y},1000]");  // 4x1000 f32 = 16000 bytes per device.
  auto us = [](double bytes, double gbps) { return bytes / (gbps * 1e3); };
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllGather({"u", "y"}, 0)),
                   3 * 10 + us(3 * 16000.0, 25));
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, t, Collective::AllGather({"y"}, 0)),
                   model->StepCostUs(mesh, t, Collective::AllGather({"u", "y"}, 0)));
  DistType p = T(mesh, "f32[16,1000] partial{u}");
  EXPECT_DOUBLE_EQ(model->StepCostUs(mesh, p, Collective::AllReduce({"u"})), 0);
  EXPECT_EQ(model->Group(mesh, {"u"}), model->default_cost());
}

TEST(CostModelTest, FastestSkipsSizeOneAxes) {
  absl::StatusOr<CostModel> model = ParseCostModel("u=0.5:900,y=10:25,z=2:50");
  ASSERT_TRUE(model.ok()) << model.status();
  // u carries no message on u=1: the bound comes from y and z.
  EXPECT_EQ(model->Fastest(M("u=1,y=4,z=2")), (AxisCost{2, 50}));
  EXPECT_EQ(model->Fastest(M("u=2,y=4,z=2")), (AxisCost{0.5, 900}));
  EXPECT_EQ(model->Fastest(M("u=1")), (AxisCost{0.5, 900}));
}

TEST(CostModelTest, UniformOnComparesTheMeshAxesOnly) {
  const Mesh mesh = M("x=2,y=4");
  EXPECT_TRUE(CostModel().UniformOn(mesh));  // The default model has no per-axis entries.
  auto parsed = [](const char* text) {
    absl::StatusOr<CostModel> model = ParseCostModel(text);
    EXPECT_TRUE(model.ok()) << text << ": " << model.status();
    return model.ok() ? *model : CostModel();
  };
  EXPECT_TRUE(parsed("*=2:50").UniformOn(mesh));
  EXPECT_TRUE(parsed("x=5:100,y=5:100").UniformOn(mesh));
  EXPECT_TRUE(parsed("z=1:300").UniformOn(mesh));  // z is not on this mesh.
  EXPECT_FALSE(parsed("y=1:300").UniformOn(mesh));
  EXPECT_FALSE(parsed("x=5:100,y=5:50").UniformOn(mesh));
  // A refined mesh's atoms take their axis's links.
  const absl::StatusOr<AxisRefinement> atoms =
      AxisRefinement::Create(M("x=4,y=4"), {}, /*prime_factors=*/true);
  ASSERT_TRUE(atoms.ok()) << atoms.status();
  EXPECT_TRUE(parsed("x=1:300,y=1:300").UniformOn(atoms->refined()));
  EXPECT_FALSE(parsed("x=1:300").UniformOn(atoms->refined()));
}

TEST(CostModelTest, ParseErrors) {
  EXPECT_FALSE(ParseCostModel("x=1").ok());
  EXPECT_FALSE(ParseCostModel("x=1:0").ok());
  EXPECT_FALSE(ParseCostModel("x=-1:5").ok());
  EXPECT_FALSE(ParseCostModel("x=1:5,x=2:5").ok());
  EXPECT_FALSE(ParseCostModel("=1:5").ok());
  absl::StatusOr<CostModel> star = ParseCostModel("*=2:50,y=1:10");
  ASSERT_TRUE(star.ok());
  EXPECT_EQ(star->Axis("x"), (AxisCost{2, 50}));
  EXPECT_EQ(star->Axis("y"), (AxisCost{1, 10}));
  EXPECT_FALSE(CheckCostModel(M("x=2"), *star).ok());  // Names y.
}

TEST(CostModelTest, ValuesThatCouldOverflowACostAreRejected) {
  // Decimal numbers only, within [0, kMaxAlphaUs] and [kMinGbps, finite): beyond, a plan's
  // cost_us could overflow to infinity (printed as `inf us`, null in JSON).
  for (const char* text : {"x=1e308:1e-308", "x=1:1e-320", "x=1e10:100", "x=inf:100",
                           "x=1:inf", "x=nan:100", "x=0x10:100", "x=1:1e400"}) {
    EXPECT_FALSE(ParseCostModel(text).ok()) << text;
  }
  EXPECT_TRUE(ParseCostModel("x=1e9:1e-6,y=0:1e300").ok());
  CostModel model(AxisCost{1, 1e-9});  // Built through the API: Synthesize checks it.
  EXPECT_FALSE(CheckCostModel(M("x=2"), model).ok());
  model = CostModel();
  model.SetAxis("x", AxisCost{2e9, 100});
  EXPECT_FALSE(CheckCostModel(M("x=2"), model).ok());
}

// all_to_all_v gathering f32[4{x}] on x=2: each device copies its half and receives the other.
Collective GatherV() {
  return Collective::AllToAllV({4}, {Transfer{0, 0, {0}, {0}, {2}}, Transfer{1, 0, {0}, {2}, {2}},
                                     Transfer{1, 1, {0}, {2}, {2}}, Transfer{0, 1, {0}, {0}, {2}}});
}

TEST(AllToAllVTest, RuleMetricsAndJson) {
  Mesh mesh = M("x=2");
  Plan plan;
  plan.mesh = mesh;
  plan.source = T(mesh, "f32[4{x}]");
  plan.target = T(mesh, "f32[4]");
  plan.strategy = "hand";
  plan.steps = {Step{GatherV(), plan.target}};
  plan.metrics = ComputeMetrics(mesh, plan.source, plan.steps);
  ASSERT_TRUE(CheckPlan(plan).ok()) << CheckPlan(plan);
  EXPECT_EQ(plan.metrics.bytes_received_total, 16);
  EXPECT_EQ(plan.metrics.bytes_received_max, 8);
  EXPECT_EQ(plan.metrics.peak_local_bytes, 8 + 16);  // Input and output live together.
  EXPECT_EQ(BytesReceived(mesh, plan.source, plan.steps[0].op, 1), 8);
  std::string json = PlanToJson(plan);
  EXPECT_NE(json.find(R"("op":"all_to_all_v","mesh_axes":[],"out_shape":[4],"transfers":[[0,0,[0],[0],[2]],)"),
            std::string::npos)
      << json;
  absl::StatusOr<Plan> back = PlanFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->steps, plan.steps);
  EXPECT_EQ(back->metrics, plan.metrics);
}

TEST(AllToAllVTest, RuleRejectsMissingWrongAndOverlappingBoxes) {
  Mesh mesh = M("x=2");
  DistType in = T(mesh, "f32[4{x}]"), out = T(mesh, "f32[4]");
  Collective missing = GatherV();
  missing.transfers.pop_back();
  EXPECT_NE(ErrorOf(CheckAllToAllV(mesh, in, missing, out)).find("write 2 of device 1's 4"),
            std::string::npos);
  Collective wrong = GatherV();
  wrong.transfers[1].target_offset = {0};  // Device 1's half lands on device 0's half.
  EXPECT_NE(ErrorOf(CheckAllToAllV(mesh, in, wrong, out)).find("global index"), std::string::npos);
  Collective outside = GatherV();
  outside.transfers[0].shape = {3};
  EXPECT_NE(ErrorOf(CheckAllToAllV(mesh, in, outside, out)).find("leaves a buffer"),
            std::string::npos);
  Collective shape = GatherV();
  shape.out_shape = {2};
  EXPECT_NE(ErrorOf(CheckAllToAllV(mesh, in, shape, out)).find("out_shape"), std::string::npos);
  EXPECT_FALSE(ApplyRule(mesh, in, GatherV()).ok());
}

TEST(AllToAllVTest, ManySmallBoxesAreCheckedForOverlapInLinearTime) {
  // 128 boxes of 1x2 elements per device (replicated source: each device sends every other
  // box): more pairs than elements, so the check marks elements instead of comparing pairs.
  Mesh mesh = M("x=2");
  DistType in = T(mesh, "f32[16,16]"), out = T(mesh, "f32[16,16]");
  Collective op = Collective::AllToAllV({16, 16}, {});
  for (int64_t target = 0; target < 2; ++target) {
    for (int64_t r = 0; r < 16; ++r) {
      for (int64_t c = 0; c < 16; c += 2) {
        op.transfers.push_back(Transfer{(r + c / 2) % 2, target, {r, c}, {r, c}, {1, 2}});
      }
    }
  }
  EXPECT_TRUE(CheckAllToAllV(mesh, in, op, out).ok()) << ErrorOf(CheckAllToAllV(mesh, in, op, out));
  // Row 3's box at column 4 moved to column 5: it overlaps the box at 6, and (3,4) is unwritten.
  Collective overlapping = op;
  overlapping.transfers[3 * 8 + 2].source_offset = {3, 5};
  overlapping.transfers[3 * 8 + 2].target_offset = {3, 5};
  EXPECT_NE(ErrorOf(CheckAllToAllV(mesh, in, overlapping, out)).find("same elements of device 0"),
            std::string::npos);
}

TEST(PlanTest, PlaceholderMeshAndInvalidTargetAreErrors) {
  // A default-constructed Mesh has no devices: Validate divided by zero.
  absl::StatusOr<DistType> scalar = ParseType("f32[8]");
  ASSERT_TRUE(scalar.ok());
  EXPECT_NE(ErrorOf(Validate(Mesh(), *scalar)).find("no axes"), std::string::npos);
  // An enum value outside ElementType (a caller's cast) aborted when the message printed it.
  DistType unknown_element = *scalar;
  unknown_element.element_type = static_cast<ElementType>(99);
  EXPECT_NE(ErrorOf(Validate(M("x=2"), unknown_element)).find("element type value 99"),
            std::string::npos);
  Plan placeholder;
  placeholder.source = placeholder.target = *scalar;
  EXPECT_FALSE(CheckPlan(placeholder).ok());
  // A target naming a sub-axis that does not fit reached Canonicalize, which aborted.
  Plan plan;
  plan.mesh = M("x=4");
  plan.source = T(plan.mesh, "f32[8{x}]");
  for (const char* target : {"f32[8{x:(2)4}]", "f32[8{q:(1)2}]"}) {
    absl::StatusOr<DistType> parsed = ParseType(target);
    ASSERT_TRUE(parsed.ok()) << target;
    plan.target = *parsed;
    EXPECT_NE(ErrorOf(CheckPlan(plan)).find("plan target"), std::string::npos) << target;
  }
}

TEST(PlanTest, JsonErrors) {
  EXPECT_NE(ErrorOf(PlanFromJson("{").status()).find("not valid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf(PlanFromJson("[]").status()).find("object"), std::string::npos);
  EXPECT_NE(ErrorOf(PlanFromJson(R"({"mesh":"x=2"})").status()).find("'from' is missing"),
            std::string::npos);
  std::string bad_step =
      R"({"mesh":"x=2","from":"f32[4{x}]","to":"f32[4]","steps":[{"op":"all_gather",)"
      R"("mesh_axes":["x"],"gather_axis":"0","type":"f32[4]"}]})";
  EXPECT_NE(ErrorOf(PlanFromJson(bad_step).status()).find("'gather_axis' must be a 64-bit"),
            std::string::npos);
  // 2^64 - 1 would wrap to -1.
  std::string wrapping = bad_step;
  wrapping.replace(wrapping.find("\"0\""), 3, "18446744073709551615");
  EXPECT_NE(ErrorOf(PlanFromJson(wrapping).status()).find("'gather_axis' must be a 64-bit"),
            std::string::npos);
  // A field of another op is not ignored.
  std::string foreign =
      R"({"mesh":"x=2","from":"f32[4{x}]","to":"f32[4]","steps":[{"op":"all_gather",)"
      R"("mesh_axes":["x"],"gather_axis":0,"split_axis":7,"type":"f32[4]"}]})";
  EXPECT_NE(ErrorOf(PlanFromJson(foreign).status())
                .find("'split_axis' does not belong to all_gather"),
            std::string::npos);
  // Nor a strategy that is not a string (verify's memory-bound obligation reads it).
  std::string numeric_strategy =
      R"({"mesh":"x=2","from":"f32[4{x}]","to":"f32[4]","strategy":1,"steps":[]})";
  EXPECT_NE(ErrorOf(PlanFromJson(numeric_strategy).status()).find("'strategy' must be a string"),
            std::string::npos);
  std::string wrong_rule =
      R"({"mesh":"x=2","from":"f32[4{x}]","to":"f32[4]","steps":[{"op":"all_gather",)"
      R"("mesh_axes":["x"],"gather_axis":0,"type":"f32[4{x}]"}]})";
  EXPECT_NE(ErrorOf(PlanFromJson(wrong_rule).status()).find("step 1"), std::string::npos);
  std::string wrong_end =
      R"({"mesh":"x=2","from":"f32[4{x}]","to":"f32[4]","steps":[]})";
  EXPECT_NE(ErrorOf(PlanFromJson(wrong_end).status()).find("not at its 'to' type"),
            std::string::npos);
}

}  // namespace
}  // namespace reshard
