// Unit tests for the reference interpreter. Every expected buffer below was computed by hand
// from DESIGN §2 (the comments show the working), never by running the code under test: the
// interpreter is the oracle for everything else, so nothing may be its own oracle.
#include "interp/interpreter.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Readable buffers in gtest failure messages.
void PrintTo(const Buffer& buffer, std::ostream* os) {
  *os << "shape [" << absl::StrJoin(buffer.shape, ",") << "] data {"
      << absl::StrJoin(buffer.data, ",") << "}";
}

namespace {

Mesh MeshOf(const std::string& text) {
  absl::StatusOr<Mesh> mesh = ParseMesh(text);
  if (!mesh.ok()) {
    ADD_FAILURE() << "bad test mesh " << text << ": " << mesh.status();
    return Mesh();
  }
  return *mesh;
}

DistType TypeOf(const std::string& text) {
  absl::StatusOr<DistType> type = ParseType(text);
  if (!type.ok()) {
    ADD_FAILURE() << "bad test type " << text << ": " << type.status();
    return DistType();
  }
  return *type;
}

Buffer Buf(std::vector<int64_t> shape, std::vector<double> data) {
  return Buffer{std::move(shape), std::move(data)};
}

bool Contains(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

constexpr int64_t kF32 = 4;

// Summand p of element e of a partial source (Materialize's data).
double Summand(int64_t e, int64_t p) {
  return static_cast<double>(SummandValue(e, p, kSummandModulus));
}
// Integral values as messages print them.
std::string Text(double value) { return absl::StrCat(static_cast<int64_t>(value)); }

// Runs `op` on `buffers` with f32 accounting, starting from zero received bytes.
absl::Status RunOp(const Mesh& mesh, const Collective& op, DeviceBuffers& buffers,
                   std::vector<int64_t>& received) {
  received.assign(mesh.num_devices(), 0);
  return ExecuteCollective(mesh, op, kF32, buffers, received);
}

// --- Materialize. ---

TEST(MaterializeTest, OneDimensionalSharded) {
  // Global {1,2,3,4}; device x gets elements 2x, 2x+1.
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2"), TypeOf("f32[4{x}]"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({2}, {1, 2}), Buf({2}, {3, 4})}));
}

TEST(MaterializeTest, Replicated) {
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2"), TypeOf("f32[3]"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({3}, {1, 2, 3}), Buf({3}, {1, 2, 3})}));
}

TEST(MaterializeTest, TwoDimensionalSharded) {
  // Global 4x2, row r col c = 2r + c + 1:  [1 2; 3 4; 5 6; 7 8]. Local shape [2,1]; device
  // (x,y) holds rows 2x..2x+1 of column y.
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2,y=2"), TypeOf("f32[4{x},2{y}]"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({2, 1}, {1, 3}), Buf({2, 1}, {2, 4}), Buf({2, 1}, {5, 7}),
                                     Buf({2, 1}, {6, 8})}));
}

TEST(MaterializeTest, MultiAxisDimensionIsMajorToMinor) {
  // 4{y,x} on x=2,y=2: block index = 2y + x. Devices (0,0),(0,1),(1,0),(1,1) -> blocks 0,2,1,3.
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2,y=2"), TypeOf("f32[4{y,x}]"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({1}, {1}), Buf({1}, {3}), Buf({1}, {2}), Buf({1}, {4})}));
}

TEST(MaterializeTest, PartialSummands) {
  // Device p holds summand p of each element; the summands add up to CanonicalValue.
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2"), TypeOf("f32[2] partial{x}"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({2}, {Summand(0, 0), Summand(1, 0)}),
                                     Buf({2}, {Summand(0, 1), Summand(1, 1)})}));
  for (int64_t e : {0, 1}) EXPECT_EQ(CanonicalValue(e, 2), Summand(e, 0) + Summand(e, 1));
  EXPECT_EQ(CanonicalValue(5, 1), 6);  // One summand: e + 1.
}

TEST(MaterializeTest, SummandsHaveNoCommonPattern) {
  // No two summands of one element are equal or in the ratio p + 1 (the former pattern), and
  // they stay within [1, kSummandModulus].
  for (int64_t e = 0; e < 64; ++e) {
    for (int64_t p = 0; p < 8; ++p) {
      const double v = Summand(e, p);
      EXPECT_GE(v, 1);
      EXPECT_LE(v, kSummandModulus);
      for (int64_t q = 0; q < p; ++q) EXPECT_NE(v, Summand(e, q)) << e << " " << p << " " << q;
    }
  }
}

TEST(MaterializeTest, PartialAndSharded) {
  // f32[2{y}] partial{x} on x=2,y=2: device (x,y) holds summand x of element y.
  absl::StatusOr<DeviceBuffers> buffers =
      Materialize(MeshOf("x=2,y=2"), TypeOf("f32[2{y}] partial{x}"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({1}, {Summand(0, 0)}), Buf({1}, {Summand(1, 0)}),
                                     Buf({1}, {Summand(0, 1)}), Buf({1}, {Summand(1, 1)})}));
}

TEST(MaterializeTest, RankZero) {
  absl::StatusOr<DeviceBuffers> buffers = Materialize(MeshOf("x=2"), TypeOf("f32[]"));
  ASSERT_TRUE(buffers.ok()) << buffers.status();
  EXPECT_EQ(*buffers, (DeviceBuffers{Buf({}, {1}), Buf({}, {1})}));
}

TEST(MaterializeTest, RejectsInvalidAndOversizedInput) {
  EXPECT_EQ(Materialize(MeshOf("x=2"), TypeOf("f32[3{x}]")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Materialize(MeshOf("x=2"), TypeOf("f32[4{z}]")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Materialize(Mesh(), TypeOf("f32[4]")).status().code(),
            absl::StatusCode::kInvalidArgument);

  absl::Status too_big = Materialize(MeshOf("x=2"), TypeOf("f32[16777216,2{x}]")).status();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(too_big.message(), "at most")) << too_big;

  // 2^23 elements, but 4 summands: over the limit together.
  absl::Status too_many_summands =
      Materialize(MeshOf("x=4"), TypeOf("f32[8388608] partial{x}")).status();
  EXPECT_EQ(too_many_summands.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(too_many_summands.message(), "summands")) << too_many_summands;

  absl::Status too_many_devices = Materialize(MeshOf("x=4097"), TypeOf("f32[4097{x}]")).status();
  EXPECT_EQ(too_many_devices.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(too_many_devices.message(), "devices")) << too_many_devices;
}

// --- Individual collectives. ---

TEST(ExecuteCollectiveTest, AllGather) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"x"}, 0), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({4}, {1, 2, 3, 4}), Buf({4}, {1, 2, 3, 4})}));
  // (k-1)B = 1 * 2 elements * 4 bytes.
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8}));
}

TEST(ExecuteCollectiveTest, AllGatherInnerDimension) {
  // [2,1] columns {1,3} and {2,4} side by side: [1 2; 3 4].
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2, 1}, {1, 3}), Buf({2, 1}, {2, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"x"}, 1), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2, 2}, {1, 2, 3, 4}), Buf({2, 2}, {1, 2, 3, 4})}));
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8}));
}

TEST(ExecuteCollectiveTest, AllGatherOverThree) {
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1}, {5}), Buf({1}, {6}), Buf({1}, {7})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"x"}, 0), buffers, received).ok());
  Buffer all = Buf({3}, {5, 6, 7});
  EXPECT_EQ(buffers, (DeviceBuffers{all, all, all}));
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8, 8}));  // (3-1) * 4 bytes
}

TEST(ExecuteCollectiveTest, AllSlice) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({4}, {1, 2, 3, 4}), Buf({4}, {1, 2, 3, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllSlice({"x"}, 0), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2}, {1, 2}), Buf({2}, {3, 4})}));
  EXPECT_EQ(received, (std::vector<int64_t>{0, 0}));
}

TEST(ExecuteCollectiveTest, AllSliceInnerDimension) {
  // [1 2; 3 4] split into columns.
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2, 2}, {1, 2, 3, 4}), Buf({2, 2}, {1, 2, 3, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllSlice({"x"}, 1), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2, 1}, {1, 3}), Buf({2, 1}, {2, 4})}));
  EXPECT_EQ(received, (std::vector<int64_t>{0, 0}));
}

TEST(ExecuteCollectiveTest, AllToAllConcat0Split1) {
  // The 4x4 array 1..16 split by rows: device 0 rows 0-1, device 1 rows 2-3.
  // Split along columns: device 0 pieces {1,2,5,6} | {3,4,7,8}; device 1 pieces
  // {9,10,13,14} | {11,12,15,16}. Device q concatenates piece q of 0 then of 1 along rows.
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                           Buf({2, 4}, {9, 10, 11, 12, 13, 14, 15, 16})};
  std::vector<int64_t> received;
  ASSERT_TRUE(
      RunOp(mesh, Collective::AllToAll({"x"}, /*concat_dim=*/0, /*split_dim=*/1), buffers, received)
          .ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({4, 2}, {1, 2, 5, 6, 9, 10, 13, 14}),
                                    Buf({4, 2}, {3, 4, 7, 8, 11, 12, 15, 16})}));
  // (k-1)/k B = 1/2 * 8 elements * 4 bytes.
  EXPECT_EQ(received, (std::vector<int64_t>{16, 16}));
}

TEST(ExecuteCollectiveTest, AllToAllConcat1Split0) {
  // The inverse of the previous test: split rows, put the column blocks side by side.
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({4, 2}, {1, 2, 5, 6, 9, 10, 13, 14}),
                           Buf({4, 2}, {3, 4, 7, 8, 11, 12, 15, 16})};
  std::vector<int64_t> received;
  ASSERT_TRUE(
      RunOp(mesh, Collective::AllToAll({"x"}, /*concat_dim=*/1, /*split_dim=*/0), buffers, received)
          .ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                    Buf({2, 4}, {9, 10, 11, 12, 13, 14, 15, 16})}));
  EXPECT_EQ(received, (std::vector<int64_t>{16, 16}));
}

TEST(ExecuteCollectiveTest, AllToAllOverThree) {
  // Device p holds {3p+1, 3p+2, 3p+3}; device q receives element q of every device.
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1, 3}, {1, 2, 3}), Buf({1, 3}, {4, 5, 6}), Buf({1, 3}, {7, 8, 9})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllToAll({"x"}, 0, 1), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({3, 1}, {1, 4, 7}), Buf({3, 1}, {2, 5, 8}),
                                    Buf({3, 1}, {3, 6, 9})}));
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8, 8}));  // 2/3 * 12 bytes
}

TEST(ExecuteCollectiveTest, AllReduce) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {2, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllReduce({"x"}), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2}, {3, 6}), Buf({2}, {3, 6})}));
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8}));  // 2 * 1/2 * 8 bytes
}

TEST(ExecuteCollectiveTest, AllReduceRoundsBytesUp) {
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1}, {1}), Buf({1}, {2}), Buf({1}, {4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllReduce({"x"}), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {7}), Buf({1}, {7}), Buf({1}, {7})}));
  // 2 * 2/3 * 4 bytes = 5.33, rounded up.
  EXPECT_EQ(received, (std::vector<int64_t>{6, 6, 6}));
}

TEST(ExecuteCollectiveTest, AllReduceOnlyWithinGroups) {
  // Over y on x=2,y=2: groups {0,1} and {2,3}.
  Mesh mesh = MeshOf("x=2,y=2");
  DeviceBuffers buffers = {Buf({1}, {1}), Buf({1}, {2}), Buf({1}, {10}), Buf({1}, {20})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllReduce({"y"}), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {3}), Buf({1}, {3}), Buf({1}, {30}), Buf({1}, {30})}));
}

TEST(ExecuteCollectiveTest, ReduceScatter) {
  // Sum {3,6}; device i keeps element i.
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {2, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::ReduceScatter({"x"}, 0), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {3}), Buf({1}, {6})}));
  EXPECT_EQ(received, (std::vector<int64_t>{4, 4}));  // 1/2 * 8 bytes
}

TEST(ExecuteCollectiveTest, ReduceScatterInnerDimension) {
  // Sum [11 22; 33 44]; device 0 keeps column 0, device 1 column 1.
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2, 2}, {1, 2, 3, 4}), Buf({2, 2}, {10, 20, 30, 40})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::ReduceScatter({"x"}, 1), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2, 1}, {11, 33}), Buf({2, 1}, {22, 44})}));
  EXPECT_EQ(received, (std::vector<int64_t>{8, 8}));
}

// Device d of x=2,y=2 holds {10 + d}: device (x,y) = 2x + y.
DeviceBuffers Tagged() { return {Buf({1}, {10}), Buf({1}, {11}), Buf({1}, {12}), Buf({1}, {13})}; }

TEST(ExecuteCollectiveTest, GroupOrderFollowsListedAxes) {
  Mesh mesh = MeshOf("x=2,y=2");
  std::vector<int64_t> received;

  // [x,y]: index 2x + y, so group order is devices 0,1,2,3.
  DeviceBuffers xy = Tagged();
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"x", "y"}, 0), xy, received).ok());
  Buffer xy_order = Buf({4}, {10, 11, 12, 13});
  EXPECT_EQ(xy, (DeviceBuffers{xy_order, xy_order, xy_order, xy_order}));
  EXPECT_EQ(received, (std::vector<int64_t>{12, 12, 12, 12}));

  // [y,x]: index 2y + x, so group order is devices 0,2,1,3.
  DeviceBuffers yx = Tagged();
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"y", "x"}, 0), yx, received).ok());
  Buffer yx_order = Buf({4}, {10, 12, 11, 13});
  EXPECT_EQ(yx, (DeviceBuffers{yx_order, yx_order, yx_order, yx_order}));
}

TEST(ExecuteCollectiveTest, SingleAxisGroups) {
  Mesh mesh = MeshOf("x=2,y=2");
  std::vector<int64_t> received;

  // Over y: groups {0,1}, {2,3}.
  DeviceBuffers over_y = Tagged();
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"y"}, 0), over_y, received).ok());
  EXPECT_EQ(over_y, (DeviceBuffers{Buf({2}, {10, 11}), Buf({2}, {10, 11}), Buf({2}, {12, 13}),
                                   Buf({2}, {12, 13})}));

  // Over x: groups {0,2}, {1,3}.
  DeviceBuffers over_x = Tagged();
  ASSERT_TRUE(RunOp(mesh, Collective::AllGather({"x"}, 0), over_x, received).ok());
  EXPECT_EQ(over_x, (DeviceBuffers{Buf({2}, {10, 12}), Buf({2}, {11, 13}), Buf({2}, {10, 12}),
                                   Buf({2}, {11, 13})}));
}

TEST(ExecuteCollectiveTest, AllSliceGroupIndexFollowsListedAxes) {
  // Over [y,x], device (x,y) keeps piece 2y + x: devices 0,1,2,3 keep pieces 0,2,1,3.
  Mesh mesh = MeshOf("x=2,y=2");
  Buffer all = Buf({4}, {1, 2, 3, 4});
  DeviceBuffers buffers = {all, all, all, all};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllSlice({"y", "x"}, 0), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {1}), Buf({1}, {3}), Buf({1}, {2}), Buf({1}, {4})}));
}

TEST(ExecuteCollectiveTest, AllToAllGroupOrderFollowsListedAxes) {
  // Over [y,x] the group order is devices 0,2,1,3 (indices 0..3). Device with index q
  // receives element q of each member, in member order.
  Mesh mesh = MeshOf("x=2,y=2");
  DeviceBuffers buffers = {Buf({4}, {1, 2, 3, 4}), Buf({4}, {5, 6, 7, 8}),
                           Buf({4}, {9, 10, 11, 12}), Buf({4}, {13, 14, 15, 16})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::AllToAll({"y", "x"}, 0, 0), buffers, received).ok());
  // Members in order: dev0 {1,2,3,4}, dev2 {9,..}, dev1 {5,..}, dev3 {13,..}.
  // dev0 (q=0): {1,9,5,13}; dev2 (q=1): {2,10,6,14}; dev1 (q=2): {3,11,7,15};
  // dev3 (q=3): {4,12,8,16}.
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({4}, {1, 9, 5, 13}), Buf({4}, {3, 11, 7, 15}),
                                    Buf({4}, {2, 10, 6, 14}), Buf({4}, {4, 12, 8, 16})}));
  EXPECT_EQ(received, (std::vector<int64_t>{12, 12, 12, 12}));  // 3/4 * 16 bytes
}

TEST(ExecuteCollectiveTest, PermuteSwapAndKeep) {
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1}, {1}), Buf({1}, {2}), Buf({1}, {3})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::Permute({{0, 1}, {1, 0}}), buffers, received).ok());
  // Device 2 is no target and keeps its buffer.
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {2}), Buf({1}, {1}), Buf({1}, {3})}));
  EXPECT_EQ(received, (std::vector<int64_t>{4, 4, 0}));
}

TEST(ExecuteCollectiveTest, PermuteCycleReadsBeforeWrites) {
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1}, {1}), Buf({1}, {2}), Buf({1}, {3})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::Permute({{0, 1}, {1, 2}, {2, 0}}), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({1}, {3}), Buf({1}, {1}), Buf({1}, {2})}));
  EXPECT_EQ(received, (std::vector<int64_t>{4, 4, 4}));
}

TEST(ExecuteCollectiveTest, PermuteToSelfReceivesNothing) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  std::vector<int64_t> received;
  ASSERT_TRUE(RunOp(mesh, Collective::Permute({{1, 1}}), buffers, received).ok());
  EXPECT_EQ(buffers, (DeviceBuffers{Buf({2}, {1, 2}), Buf({2}, {3, 4})}));
  EXPECT_EQ(received, (std::vector<int64_t>{0, 0}));
}

TEST(ExecuteCollectiveTest, BytesAccumulateAndUseElementSize) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  std::vector<int64_t> received = {100, 200};
  // f64: (k-1) * 2 elements * 8 bytes = 16.
  ASSERT_TRUE(ExecuteCollective(mesh, Collective::AllGather({"x"}, 0), 8, buffers, received).ok());
  EXPECT_EQ(received, (std::vector<int64_t>{116, 216}));
}

// --- Errors. ---

void ExpectInvalid(const Mesh& mesh, const Collective& op, DeviceBuffers buffers,
                   absl::string_view message_part) {
  const DeviceBuffers before = buffers;
  std::vector<int64_t> received(mesh.num_devices(), 7);
  absl::Status status = ExecuteCollective(mesh, op, kF32, buffers, received);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(Contains(status.message(), message_part))
      << "message: " << status.message() << "\nexpected to contain: " << message_part;
  // A failed op leaves everything as it was.
  EXPECT_EQ(buffers, before);
  EXPECT_EQ(received, std::vector<int64_t>(mesh.num_devices(), 7));
}

TEST(ExecuteCollectiveErrorTest, NotDivisible) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers odd = {Buf({3}, {1, 2, 3}), Buf({3}, {1, 2, 3})};
  ExpectInvalid(mesh, Collective::AllSlice({"x"}, 0), odd, "not divisible");
  ExpectInvalid(mesh, Collective::ReduceScatter({"x"}, 0), odd, "not divisible");
  ExpectInvalid(mesh, Collective::AllToAll({"x"}, 0, 0), odd, "not divisible");
}

TEST(ExecuteCollectiveErrorTest, DimensionOutOfRange) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  ExpectInvalid(mesh, Collective::AllGather({"x"}, 1), buffers, "out of range");
  ExpectInvalid(mesh, Collective::AllSlice({"x"}, -1), buffers, "out of range");
  ExpectInvalid(mesh, Collective::AllToAll({"x"}, 0, 2), buffers, "split_axis 2");
  ExpectInvalid(mesh, Collective::AllToAll({"x"}, 3, 0), buffers, "concat_axis 3");
  ExpectInvalid(mesh, Collective::ReduceScatter({"x"}, 5), buffers, "out of range");
}

TEST(ExecuteCollectiveErrorTest, BadMeshAxes) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  ExpectInvalid(mesh, Collective::AllGather({"z"}, 0), buffers, "'z'");
  ExpectInvalid(mesh, Collective::AllReduce({"x", "x"}), buffers, "twice");
  ExpectInvalid(mesh, Collective::AllGather({}, 0), buffers, "empty");
  ExpectInvalid(mesh, Collective::AllReduce({}), buffers, "empty");
}

TEST(ExecuteCollectiveErrorTest, ShapesDifferWithinGroup) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({4}, {3, 4, 5, 6})};
  ExpectInvalid(mesh, Collective::AllGather({"x"}, 0), buffers, "differ in shape");
  ExpectInvalid(mesh, Collective::AllReduce({"x"}), buffers, "differ in shape");
}

TEST(ExecuteCollectiveErrorTest, BadPermutePairs) {
  Mesh mesh = MeshOf("x=3");
  DeviceBuffers buffers = {Buf({1}, {1}), Buf({1}, {2}), Buf({1}, {3})};
  ExpectInvalid(mesh, Collective::Permute({{0, 1}, {2, 1}}), buffers, "twice as a target");
  ExpectInvalid(mesh, Collective::Permute({{0, 1}, {0, 2}}), buffers, "twice as a source");
  ExpectInvalid(mesh, Collective::Permute({{0, 3}}), buffers, "device 3");
  ExpectInvalid(mesh, Collective::Permute({{-1, 0}}), buffers, "device -1");
}

TEST(ExecuteCollectiveErrorTest, MalformedCall) {
  Mesh mesh = MeshOf("x=2");
  // Wrong number of buffers.
  ExpectInvalid(mesh, Collective::AllReduce({"x"}), {Buf({1}, {1})}, "one buffer per device");
  // Shape and data disagree.
  ExpectInvalid(mesh, Collective::AllReduce({"x"}), {Buf({2}, {1}), Buf({2}, {1, 2})},
                "but 1 elements");
  // Stray attributes from another kind.
  Collective reduce = Collective::AllReduce({"x"});
  reduce.dim = 0;
  ExpectInvalid(mesh, reduce, {Buf({2}, {1, 2}), Buf({2}, {3, 4})}, "takes no dimension");
  Collective permute = Collective::Permute({{0, 1}, {1, 0}});
  permute.mesh_axes = {"x"};
  ExpectInvalid(mesh, permute, {Buf({2}, {1, 2}), Buf({2}, {3, 4})}, "takes no mesh_axes");
  Collective gather = Collective::AllGather({"x"}, 0);
  gather.source_target_pairs = {{0, 1}};
  ExpectInvalid(mesh, gather, {Buf({2}, {1, 2}), Buf({2}, {3, 4})}, "source_target_pairs");

  DeviceBuffers buffers = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  std::vector<int64_t> short_received = {0};
  EXPECT_EQ(
      ExecuteCollective(mesh, Collective::AllReduce({"x"}), kF32, buffers, short_received).code(),
      absl::StatusCode::kInvalidArgument);
  std::vector<int64_t> received = {0, 0};
  EXPECT_EQ(ExecuteCollective(mesh, Collective::AllReduce({"x"}), 0, buffers, received).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExecuteCollectiveErrorTest, RepeatedGatherCannotExhaustMemory) {
  // all_gather on replicated data doubles the buffers each time; an ill-typed plan could do
  // it forever. The interpreter refuses instead of allocating.
  // 1024 devices reach the cap on the second gather (1024^3 elements) with little memory.
  Mesh mesh = MeshOf("x=1024");
  DeviceBuffers buffers(mesh.num_devices(), Buf({1}, {1}));
  std::vector<int64_t> received(mesh.num_devices(), 0);
  absl::Status status;
  for (int i = 0; i < 10 && status.ok(); ++i) {
    status = ExecuteCollective(mesh, Collective::AllGather({"x"}, 0), kF32, buffers, received);
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), "at most")) << status;
}

// --- CheckBuffers. ---

TEST(CheckBuffersTest, AcceptsCanonicalLayouts) {
  Mesh mesh = MeshOf("x=2,y=2");
  EXPECT_TRUE(CheckBuffers(mesh, TypeOf("f32[4{x},2{y}]"), 1,
                           {Buf({2, 1}, {1, 3}), Buf({2, 1}, {2, 4}), Buf({2, 1}, {5, 7}),
                            Buf({2, 1}, {6, 8})})
                  .ok());
  // Partial groups over x are {0,2} and {1,3}: their sums are CanonicalValue(e, 2), e = 0, 1.
  const double v0 = CanonicalValue(0, 2), v1 = CanonicalValue(1, 2);
  EXPECT_TRUE(CheckBuffers(mesh, TypeOf("f32[2{y}] partial{x}"), 2,
                           {Buf({1}, {Summand(0, 0)}), Buf({1}, {Summand(1, 0)}),
                            Buf({1}, {Summand(0, 1)}), Buf({1}, {Summand(1, 1)})})
                  .ok());
  // Any split of the sum is fine.
  EXPECT_TRUE(CheckBuffers(mesh, TypeOf("f32[2{y}] partial{x}"), 2,
                           {Buf({1}, {0}), Buf({1}, {v1}), Buf({1}, {v0}), Buf({1}, {0})})
                  .ok());
  // A reduced two-summand source: every device holds the sums.
  EXPECT_TRUE(CheckBuffers(MeshOf("x=2"), TypeOf("f32[2]"), 2,
                           {Buf({2}, {v0, v1}), Buf({2}, {v0, v1})})
                  .ok());
}

TEST(CheckBuffersTest, DetectsSwappedDevices) {
  Mesh mesh = MeshOf("x=2");
  absl::Status status =
      CheckBuffers(mesh, TypeOf("f32[4{x}]"), 1, {Buf({2}, {3, 4}), Buf({2}, {1, 2})});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // Names the first wrong device, its coordinates, the local index and both values.
  EXPECT_TRUE(Contains(status.message(), "device 0 (x=0)")) << status;
  EXPECT_TRUE(Contains(status.message(), "[0]")) << status;
  EXPECT_TRUE(Contains(status.message(), "expected 1")) << status;
  EXPECT_TRUE(Contains(status.message(), "got 3")) << status;
}

TEST(CheckBuffersTest, DetectsSwappedDevicesInTwoDimensions) {
  // Devices 1 (0,1) and 2 (1,0) exchanged.
  Mesh mesh = MeshOf("x=2,y=2");
  absl::Status status = CheckBuffers(
      mesh, TypeOf("f32[4{x},2{y}]"), 1,
      {Buf({2, 1}, {1, 3}), Buf({2, 1}, {5, 7}), Buf({2, 1}, {2, 4}), Buf({2, 1}, {6, 8})});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), "device 1 (x=0,y=1)")) << status;
  EXPECT_TRUE(Contains(status.message(), "expected 2, got 5")) << status;
}

TEST(CheckBuffersTest, DetectsDoubleCountedSummand) {
  Mesh mesh = MeshOf("x=2");
  const Buffer summand0 = Buf({2}, {Summand(0, 0), Summand(1, 0)});
  const std::string expected =
      absl::StrCat("expected ", Text(CanonicalValue(0, 2)), " summed, got ");
  // Both devices hold summand 0.
  absl::Status status = CheckBuffers(mesh, TypeOf("f32[2] partial{x}"), 2, {summand0, summand0});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), absl::StrCat(expected, Text(2 * Summand(0, 0)))))
      << status;

  // Reduced but still claimed partial: each device holds the full sum, counted twice.
  const Buffer sums = Buf({2}, {CanonicalValue(0, 2), CanonicalValue(1, 2)});
  status = CheckBuffers(mesh, TypeOf("f32[2] partial{x}"), 2, {sums, sums});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), absl::StrCat(expected, Text(2 * CanonicalValue(0, 2)))))
      << status;
}

TEST(CheckBuffersTest, DetectsMissingReduction) {
  // Unreduced summands claimed as a replicated value.
  absl::Status status = CheckBuffers(MeshOf("x=2"), TypeOf("f32[2]"), 2,
                                     {Buf({2}, {Summand(0, 0), Summand(1, 0)}),
                                      Buf({2}, {Summand(0, 1), Summand(1, 1)})});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), absl::StrCat("expected ", Text(CanonicalValue(0, 2)),
                                                      ", got ", Text(Summand(0, 0)))))
      << status;
}

TEST(CheckBuffersTest, DetectsWrongShape) {
  // Right values, wrong layout: a row where a column is expected.
  absl::Status status = CheckBuffers(MeshOf("x=2"), TypeOf("f32[2,2{x}]"), 1,
                                     {Buf({1, 2}, {1, 3}), Buf({1, 2}, {2, 4})});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status.message(), "local shape [2,1]")) << status;
}

TEST(CheckBuffersTest, RejectsBadArguments) {
  Mesh mesh = MeshOf("x=2");
  DeviceBuffers good = {Buf({2}, {1, 2}), Buf({2}, {3, 4})};
  EXPECT_EQ(CheckBuffers(mesh, TypeOf("f32[4{x}]"), 0, good).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckBuffers(mesh, TypeOf("f32[4{q}]"), 1, good).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckBuffers(mesh, TypeOf("f32[4{x}]"), 1, {Buf({2}, {1, 2})}).code(),
            absl::StatusCode::kInvalidArgument);
}

// --- RunPlan. ---

Step StepOf(Collective op, const std::string& type) { return Step{std::move(op), TypeOf(type)}; }

TEST(RunPlanTest, AllToAllMovesShardedDimension) {
  Plan plan;
  plan.mesh = MeshOf("x=2,y=4");
  plan.source = TypeOf("f32[8{x},16]");
  plan.target = TypeOf("f32[8,16{x}]");
  plan.steps = {
      StepOf(Collective::AllToAll({"x"}, /*concat_dim=*/0, /*split_dim=*/1), "f32[8,16{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  // Local [4,16] and [8,8]: 64 f32 = 256 bytes each. Every device receives half of 256.
  EXPECT_EQ(report->peak_local_bytes, 256);
  EXPECT_EQ(report->bytes_received_max, 128);
  EXPECT_EQ(report->bytes_received_total, 8 * 128);
}

TEST(RunPlanTest, EmptyPlanOnEqualTypes) {
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4{x}]");
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->peak_local_bytes, 8);
  EXPECT_EQ(report->bytes_received_total, 0);
}

TEST(RunPlanTest, GatherThenSlicePeaksAtFullSize) {
  // f32[4{x}] -> all_gather -> f32[4] (16 bytes) -> all_slice over x on dim 0 -> f32[4{x}].
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::AllGather({"x"}, 0), "f32[4]"),
                StepOf(Collective::AllSlice({"x"}, 0), "f32[4{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->peak_local_bytes, 16);
  EXPECT_EQ(report->bytes_received_max, 8);
  EXPECT_EQ(report->bytes_received_total, 16);
}

TEST(RunPlanTest, ReduceScatterOfPartialSource) {
  // Summands {1,2,3,4} and {2,4,6,8}; sum {3,6,9,12} = (e+1) * 3, scattered in halves.
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4] partial{x}");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::ReduceScatter({"x"}, 0), "f32[4{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->peak_local_bytes, 16);
  EXPECT_EQ(report->bytes_received_max, 8);
  EXPECT_EQ(report->bytes_received_total, 16);
}

TEST(RunPlanTest, PermuteExchangingTheRightDevices) {
  // [4{x},2{y}] -> [4{y},2{x}]: device (x,y) needs block (y,x), so devices 1 and 2 swap.
  Plan plan;
  plan.mesh = MeshOf("x=2,y=2");
  plan.source = TypeOf("f32[4{x},2{y}]");
  plan.target = TypeOf("f32[4{y},2{x}]");
  plan.steps = {StepOf(Collective::Permute({{1, 2}, {2, 1}}), "f32[4{y},2{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->bytes_received_max, 8);
  EXPECT_EQ(report->bytes_received_total, 16);
}

TEST(RunPlanTest, PermuteExchangingTheWrongDevicesFails) {
  Plan plan;
  plan.mesh = MeshOf("x=2,y=2");
  plan.source = TypeOf("f32[4{x},2{y}]");
  plan.target = TypeOf("f32[4{y},2{x}]");
  plan.steps = {StepOf(Collective::Permute({{0, 3}, {3, 0}}), "f32[4{y},2{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  // Device 0 now holds device 3's {6,8} where 1 belongs.
  EXPECT_TRUE(Contains(report->message, "device 0 (x=0,y=0)")) << report->message;
  EXPECT_TRUE(Contains(report->message, "expected 1, got 6")) << report->message;
  // Measurements are still reported for a wrong plan.
  EXPECT_EQ(report->bytes_received_total, 16);
}

TEST(RunPlanTest, MissingStepFails) {
  // all_gather without the all_slice: the result is replicated, not sharded.
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::AllGather({"x"}, 0), "f32[4]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  EXPECT_TRUE(Contains(report->message, "local shape")) << report->message;
}

TEST(RunPlanTest, MislabelledIntermediateTypeFails) {
  // The data ends right, but step 0 claims its result is still sharded.
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::AllGather({"x"}, 0), "f32[4{x}]"),
                StepOf(Collective::AllSlice({"x"}, 0), "f32[4{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  EXPECT_TRUE(Contains(report->message, "after step 0")) << report->message;
  EXPECT_EQ(report->peak_local_bytes, 16);
}

TEST(RunPlanTest, ForgottenReductionFails) {
  // Dropping partial{x} without reducing leaves device 0 with summand 0 instead of the sum.
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4] partial{x}");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::AllSlice({"x"}, 0), "f32[4{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  EXPECT_TRUE(Contains(report->message, absl::StrCat("expected ", Text(CanonicalValue(0, 2)),
                                                     ", got ", Text(Summand(0, 0)))))
      << report->message;
}

TEST(RunPlanTest, WrongSummandsDoNotSumRight) {
  // The permute leaves devices 0 and 3 with copies of summands 1 and 2 (devices 1 and 2 keep
  // theirs): summands 0 and 3 are lost and 1 and 2 counted twice. With summands (e+1)(p+1) the
  // group still summed right, (1 + 2 + 3 + 4) == (2 + 2 + 3 + 3), and this plan passed.
  Plan plan;
  plan.mesh = MeshOf("x=2,y=2");
  plan.source = TypeOf("f32[4] partial{x,y}");
  plan.target = TypeOf("f32[4]");
  plan.steps = {StepOf(Collective::Permute({{1, 0}, {2, 3}}), "f32[4] partial{x,y}"),
                StepOf(Collective::AllReduce({"x", "y"}), "f32[4]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  EXPECT_TRUE(Contains(report->message, "after step 0 (collective_permute")) << report->message;
}

TEST(RunPlanTest, ChangedGlobalShapeFails) {
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[2{x}]");
  plan.steps = {StepOf(Collective::AllSlice({"x"}, 0), "f32[2{x}]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok);
  EXPECT_TRUE(Contains(report->message, "global shape")) << report->message;
}

TEST(RunPlanTest, UnexecutableOrOversizedPlanIsAnError) {
  Plan plan;
  plan.mesh = MeshOf("x=2");
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4{x}]");
  plan.steps = {StepOf(Collective::AllGather({"x"}, 3), "f32[4]")};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(report.status().message(), "step 0")) << report.status();

  Plan big;
  big.mesh = MeshOf("x=2");
  big.source = TypeOf("f32[33554432{x}]");
  big.target = big.source;
  EXPECT_EQ(RunPlan(big).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(RunPlan(Plan()).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// all_to_all_v gathering f32[4{x}] on x=2: each device copies its half and receives the other;
// peak counts input + output (8 + 16 bytes), bytes are the remote boxes only.
TEST(AllToAllVTest, GatherExecutesAndCountsInputPlusOutput) {
  Mesh mesh = MeshOf("x=2");
  Plan plan;
  plan.mesh = mesh;
  plan.source = TypeOf("f32[4{x}]");
  plan.target = TypeOf("f32[4]");
  plan.steps = {Step{Collective::AllToAllV({4}, {Transfer{0, 0, {0}, {0}, {2}},
                                                 Transfer{1, 0, {0}, {2}, {2}},
                                                 Transfer{1, 1, {0}, {2}, {2}},
                                                 Transfer{0, 1, {0}, {0}, {2}}}),
                     plan.target}};
  absl::StatusOr<RunReport> report = RunPlan(plan);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok) << report->message;
  EXPECT_EQ(report->bytes_received_total, 16);
  EXPECT_EQ(report->peak_local_bytes, 24);
  // A missing box leaves an output element unwritten: an execution error.
  plan.steps[0].op.transfers.pop_back();
  EXPECT_FALSE(RunPlan(plan).ok());
}

}  // namespace
}  // namespace reshard
