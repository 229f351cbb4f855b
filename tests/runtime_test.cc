// runtime_test.cc — the MPI runtime's local parts (no MPI calls): pack/unpack helpers, box
// copies, f16/bf16 codecs, memory tracking and the canonical data used to check results.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "runtime/local_array.h"
#include "runtime/pack.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {
namespace {

std::vector<int32_t> Iota(int64_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::byte* Bytes(std::vector<int32_t>& v) { return reinterpret_cast<std::byte*>(v.data()); }

TEST(PackTest, LayoutAroundADimension) {
  PieceLayout layout = PieceLayoutOf({4, 6, 5}, /*dim=*/1, /*k=*/3, /*element_bytes=*/4);
  EXPECT_EQ(layout.outer, 4);
  EXPECT_EQ(layout.k, 3);
  EXPECT_EQ(layout.chunk_bytes, 2 * 5 * 4);
  EXPECT_TRUE(NeedsPacking(layout));
  EXPECT_FALSE(NeedsPacking(PieceLayoutOf({4, 6}, 0, 2, 4)));  // leading dimension
  EXPECT_FALSE(NeedsPacking(PieceLayoutOf({1, 6}, 1, 2, 4)));  // unit outer dimensions
}

// Splitting [3,4] along dim 1 into 2 pieces: piece p holds columns 2p, 2p+1 of every row.
TEST(PackTest, SplitMakesPiecesContiguousAndConcatInverts) {
  std::vector<int32_t> a = Iota(12);  // a[r][c] = 4r + c
  PieceLayout layout = PieceLayoutOf({3, 4}, 1, 2, 4);
  std::vector<int32_t> split(12);
  SplitPieces(Bytes(a), Bytes(split), layout);
  EXPECT_EQ(split, (std::vector<int32_t>{0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11}));
  std::vector<int32_t> back(12);
  ConcatPieces(Bytes(split), Bytes(back), layout);
  EXPECT_EQ(back, a);
  std::vector<int32_t> piece(6);
  CopyPiece(Bytes(a), Bytes(piece), layout, 1);
  EXPECT_EQ(piece, (std::vector<int32_t>{2, 3, 6, 7, 10, 11}));
}

// The all_gather along a non-leading dimension: blocks [2,1] from 3 ranks arrive one after
// the other and must interleave into [2,3].
TEST(PackTest, ConcatInterleavesGatheredBlocks) {
  std::vector<int32_t> received = {10, 11, 20, 21, 30, 31};  // rank p sent {p0, p1}
  std::vector<int32_t> out(6);
  ConcatPieces(Bytes(received), Bytes(out), PieceLayoutOf({2, 3}, 1, 3, 4));
  EXPECT_EQ(out, (std::vector<int32_t>{10, 20, 30, 11, 21, 31}));
}

TEST(PackTest, CopyBoxPacksAndUnpacks) {
  std::vector<int32_t> a = Iota(24);  // [2,3,4]
  std::vector<int32_t> box(2 * 2 * 2);
  CopyBox(Bytes(a), {2, 3, 4}, {0, 1, 2}, Bytes(box), {2, 2, 2}, {0, 0, 0}, {2, 2, 2}, 4);
  EXPECT_EQ(box, (std::vector<int32_t>{6, 7, 10, 11, 18, 19, 22, 23}));
  std::vector<int32_t> b(24, -1);
  CopyBox(Bytes(box), {2, 2, 2}, {0, 0, 0}, Bytes(b), {2, 3, 4}, {0, 1, 2}, {2, 2, 2}, 4);
  for (int64_t i = 0; i < 24; ++i) {
    bool inside = (i % 12) / 4 >= 1 && i % 4 >= 2;
    EXPECT_EQ(b[i], inside ? a[i] : -1) << i;
  }
  // Full trailing dimensions merge into one run; the result is the same.
  std::vector<int32_t> rows(12);
  CopyBox(Bytes(a), {2, 3, 4}, {1, 0, 0}, Bytes(rows), {1, 3, 4}, {0, 0, 0}, {1, 3, 4}, 4);
  EXPECT_EQ(rows, std::vector<int32_t>(a.begin() + 12, a.end()));
  // Rank 0 copies the one element.
  int32_t x = 42, y = 0;
  CopyBox(reinterpret_cast<std::byte*>(&x), {}, {}, reinterpret_cast<std::byte*>(&y), {}, {}, {},
          4);
  EXPECT_EQ(y, 42);
}

TEST(CodecTest, HalfAndBFloat16KeepExactIntegers) {
  for (int v = 0; v <= 2048; ++v) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(static_cast<float>(v))), v) << v;
  }
  for (int v = 0; v <= 256; ++v) {
    EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v))), v) << v;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);        // overflow to inf
  EXPECT_EQ(HalfToFloat(FloatToHalf(2049.0f)), 2048.0f);  // tie to even
  EXPECT_EQ(HalfToFloat(FloatToHalf(2051.0f)), 2052.0f);
  EXPECT_EQ(HalfToFloat(0x0001), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(5.9604644775390625e-08f), 0x0001);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xc000);
}

TEST(LocalArrayTest, TrackerFollowsTheData) {
  MemoryTracker tracker;
  {
    LocalArray a({2, 8}, ElementType::kF32, &tracker);
    EXPECT_EQ(tracker.live_bytes(), 64);
    LocalArray b({4}, ElementType::kF64, &tracker);
    EXPECT_EQ(tracker.peak_bytes(), 96);
    a = std::move(b);  // a's 64 bytes released, b's 32 now owned by a
    EXPECT_EQ(tracker.live_bytes(), 32);
    LocalArray c(std::move(a));
    EXPECT_EQ(tracker.live_bytes(), 32);
    c.Track(nullptr);
    EXPECT_EQ(tracker.live_bytes(), 0);
  }
  EXPECT_EQ(tracker.live_bytes(), 0);
  EXPECT_EQ(tracker.peak_bytes(), 96);
  tracker.ResetPeak();
  EXPECT_EQ(tracker.peak_bytes(), 0);
}

TEST(CanonicalDataTest, PrimeModulusPerElementType) {
  EXPECT_EQ(LargestPrimeAtMost(16777216), 16777213);
  EXPECT_EQ(LargestPrimeAtMost(2), 2);
  Mesh mesh = *ParseMesh("x=2,y=4");
  EXPECT_EQ(CanonicalData::Create(mesh, *ParseType("f32[8]"))->modulus(), 16777213);
  EXPECT_EQ(CanonicalData::Create(mesh, *ParseType("bf16[8]"))->modulus(), 251);
  EXPECT_EQ(CanonicalData::Create(mesh, *ParseType("i64[8]"))->modulus(), 2147483647);
  // 8 summands: their sum stays within bf16's 256 with summands up to 256 / 8.
  absl::StatusOr<CanonicalData> bf16 =
      CanonicalData::Create(mesh, *ParseType("bf16[8] partial{x,y}"));
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->modulus(), 32);
  EXPECT_EQ(bf16->summands(), 8);
  // f32 with 8 summands: the interpreter's range.
  EXPECT_EQ(CanonicalData::Create(mesh, *ParseType("f32[8] partial{x,y}"))->modulus(),
            kSummandModulus);
  // 256 summands: values of 1 only, nothing is checkable.
  Mesh big = *ParseMesh("x=256");
  EXPECT_FALSE(CanonicalData::Create(big, *ParseType("bf16[256] partial{x}")).ok());
  EXPECT_EQ(CanonicalData::Create(big, *ParseType("f32[256] partial{x}"))->modulus(), 65536);
}

// A group that counts one summand twice and misses another fails the check: with summands of
// a common pattern, (e+1)(p+1), devices holding summands {1,1,2,2} of four summed right.
TEST(CanonicalDataTest, WrongSummandsDoNotSumRight) {
  Mesh mesh = *ParseMesh("x=4");
  DistType source = *ParseType("i32[16] partial{x}");
  DistType target = *ParseType("i32[16]");
  CanonicalData data = *CanonicalData::Create(mesh, source);
  auto sum_of = [&](std::initializer_list<int64_t> devices) {
    std::vector<int32_t> sum(16, 0);
    for (int64_t d : devices) {
      LocalArray array({16}, ElementType::kI32);
      data.Fill(mesh, source, d, array);
      const int32_t* v = reinterpret_cast<const int32_t*>(array.data());
      for (int i = 0; i < 16; ++i) sum[i] += v[i];
    }
    LocalArray out({16}, ElementType::kI32);
    std::copy(sum.begin(), sum.end(), reinterpret_cast<int32_t*>(out.data()));
    return out;
  };
  EXPECT_TRUE(data.Check(mesh, target, 0, sum_of({0, 1, 2, 3})).ok());
  absl::Status wrong = data.Check(mesh, target, 0, sum_of({1, 1, 2, 2}));
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("global element 0"), std::string::npos) << wrong;
}

// With a modulus above the element count the runtime's data is the interpreter's.
TEST(CanonicalDataTest, MatchesTheInterpreter) {
  Mesh mesh = *ParseMesh("x=2,y=2");
  for (const char* text : {"f32[4{x},6] partial{y}", "i32[6,4{y,x}]", "f64[2{y},3,4{x}]",
                           "f32[] partial{x,y}"}) {
    DistType type = *ParseType(text);
    absl::StatusOr<DeviceBuffers> expected = Materialize(mesh, type);
    ASSERT_TRUE(expected.ok()) << expected.status();
    CanonicalData data = *CanonicalData::Create(mesh, type);
    for (int64_t d = 0; d < mesh.num_devices(); ++d) {
      LocalArray array(LocalShape(mesh, type), type.element_type);
      data.Fill(mesh, type, d, array);
      ASSERT_EQ(array.num_elements(), static_cast<int64_t>((*expected)[d].data.size()));
      for (int64_t l = 0; l < array.num_elements(); ++l) {
        int64_t value = 0;
        ASSERT_TRUE(LoadInteger(type.element_type,
                                array.data() + l * ElementBytes(type.element_type), &value));
        EXPECT_EQ(static_cast<double>(value), (*expected)[d].data[l]) << text << " device " << d;
      }
    }
  }
}

// Sub-axes (reshard-mpi runs plans and types that name them): filling follows the
// interpreter, and a check tells the two halves of an axis apart.
TEST(CanonicalDataTest, SubAxisTypesMatchTheInterpreterAndCheck) {
  Mesh mesh = *ParseMesh("x=2,y=4");
  for (const char* text : {"f32[8{x},16{y:(1)2}] partial{y:(2)2}", "i32[8{y:(2)2,x},4{y:(1)2}]"}) {
    DistType type = *ParseType(text);
    absl::StatusOr<DeviceBuffers> expected = Materialize(mesh, type);
    ASSERT_TRUE(expected.ok()) << expected.status();
    absl::StatusOr<CanonicalData> data = CanonicalData::Create(mesh, type);
    ASSERT_TRUE(data.ok()) << data.status();
    for (int64_t d = 0; d < mesh.num_devices(); ++d) {
      LocalArray array(LocalShape(mesh, type), type.element_type);
      data->Fill(mesh, type, d, array);
      ASSERT_EQ(array.num_elements(), static_cast<int64_t>((*expected)[d].data.size()));
      for (int64_t l = 0; l < array.num_elements(); ++l) {
        int64_t value = 0;
        ASSERT_TRUE(LoadInteger(type.element_type,
                                array.data() + l * ElementBytes(type.element_type), &value));
        EXPECT_EQ(static_cast<double>(value), (*expected)[d].data[l]) << text << " device " << d;
      }
      // Check wants the full sum; a summand is the full value only without partial axes.
      if (type.partial.empty()) {
        EXPECT_TRUE(data->Check(mesh, type, d, array).ok()) << text << " device " << d;
      }
    }
  }
  // y's coordinate c has the digits (c / 2, c % 2) on y:(1)2 and y:(2)2; the two types hold
  // the same block exactly where both digits agree (y = 0 or 3: devices 0, 3, 4, 7).
  DistType major = *ParseType("f32[8{y:(1)2},4]");
  DistType minor = *ParseType("f32[8{y:(2)2},4]");
  CanonicalData data = *CanonicalData::Create(mesh, major);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    LocalArray array(LocalShape(mesh, major), major.element_type);
    data.Fill(mesh, major, d, array);
    EXPECT_TRUE(data.Check(mesh, major, d, array).ok()) << d;
    const int64_t y = d % 4;
    EXPECT_EQ(data.Check(mesh, minor, d, array).ok(), y == 0 || y == 3) << d;
  }
}

TEST(CanonicalDataTest, CheckAcceptsTheRightBlockAndRejectsAnother) {
  Mesh mesh = *ParseMesh("x=2,y=2");
  DistType type = *ParseType("f16[8{x},4{y}]");
  DistType other = *ParseType("f16[8{y},4{x}]");  // same local shape, other blocks
  CanonicalData data = *CanonicalData::Create(mesh, type);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    LocalArray array(LocalShape(mesh, type), type.element_type);
    data.Fill(mesh, type, d, array);
    EXPECT_TRUE(data.Check(mesh, type, d, array).ok());
    // Devices 0 and 3 hold the same blocks under both types.
    EXPECT_EQ(data.Check(mesh, other, d, array).ok(), d == 0 || d == 3) << d;
  }
  // Values wrap modulo a prime: an f32 array larger than the modulus still checks.
  Mesh line = *ParseMesh("x=2");
  DistType large = *ParseType("f32[4096,4098{x}]");
  CanonicalData wrapped = *CanonicalData::Create(line, large);
  LocalArray array(LocalShape(line, large), large.element_type);
  wrapped.Fill(line, large, 1, array);
  EXPECT_TRUE(wrapped.Check(line, large, 1, array).ok());
  std::memset(array.data(), 0, 4);
  absl::Status bad = wrapped.Check(line, large, 1, array);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("local index [0,0]"), absl::string_view::npos) << bad;
}

}  // namespace
}  // namespace reshard
