// local_array.h — one rank's buffer of a distributed array, memory accounting, element codecs
// and the canonical test data of the MPI runtime. Nothing here calls MPI.
//
//   MemoryTracker tracker;
//   LocalArray a({2, 8}, ElementType::kF32, &tracker);  // 64 uninitialised bytes, tracked
//   tracker.live_bytes();                                // 64
//   CanonicalData data = *CanonicalData::Create(mesh, source);  // value modulus for f32
//   data.Fill(mesh, source, /*device=*/3, a);            // device 3's block of the array
//   absl::Status ok = data.Check(mesh, target, 3, a);    // after the plan ran
//
// Canonical data (the interpreter's, with values kept small enough that every sum stays exact
// in the element type; docs/runtime.md "Checking"): global element e of a source with one
// summand has value (e mod M) + 1, with M the largest prime at most the largest integer the
// element type represents exactly (capped at 2^31 - 1); with S > 1 summands the device holding
// summand p holds SummandValue(e, p, M) (typesys/dist_type.h), pseudo-random in [1, M], with
// M = min(kSummandModulus, limit / S), and the sum over the partial group is their sum. When
// the array has at most M elements (one summand), or M == kSummandModulus (several), the values
// are exactly the interpreter's.
#ifndef RESHARD_RUNTIME_LOCAL_ARRAY_H_
#define RESHARD_RUNTIME_LOCAL_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {

// Counts the bytes of live LocalArrays that point to it, and the high-water mark. Not
// thread-safe (one per rank).
class MemoryTracker {
 public:
  void Add(int64_t bytes) {
    live_bytes_ += bytes;
    if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
  }
  void Sub(int64_t bytes) { live_bytes_ -= bytes; }
  // Forgets the history: the peak becomes what is live now.
  void ResetPeak() { peak_bytes_ = live_bytes_; }

  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }

 private:
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

// A dense row-major array of `element_type` owned by one rank: the local block of a
// distributed array, or (shape {n}, i8) a scratch buffer of n bytes. Move-only. Its bytes are
// counted by its tracker (if any) from construction until destruction or Track(nullptr).
// Contents start uninitialised: the executor writes every byte before reading it.
class LocalArray {
 public:
  LocalArray() = default;
  LocalArray(std::vector<int64_t> shape, ElementType element_type,
             MemoryTracker* tracker = nullptr);
  ~LocalArray() { Track(nullptr); }
  LocalArray(LocalArray&& other) noexcept { *this = std::move(other); }
  LocalArray& operator=(LocalArray&& other) noexcept;
  LocalArray(const LocalArray&) = delete;
  LocalArray& operator=(const LocalArray&) = delete;

  // Moves the accounting of this array's bytes to `tracker` (nullptr: no longer counted).
  void Track(MemoryTracker* tracker);

  const std::vector<int64_t>& shape() const { return shape_; }
  ElementType element_type() const { return element_type_; }
  int64_t num_elements() const { return num_elements_; }
  int64_t size_bytes() const { return size_bytes_; }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  bool empty() const { return data_ == nullptr; }

 private:
  std::vector<int64_t> shape_;
  ElementType element_type_ = ElementType::kI8;
  int64_t num_elements_ = 0;
  int64_t size_bytes_ = 0;
  std::unique_ptr<std::byte[]> data_;
  MemoryTracker* tracker_ = nullptr;
};

// --- Element codecs. f16 is IEEE binary16, bf16 the upper half of a binary32; conversions
// from float round to nearest even (so exact integers within range convert exactly). ---
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

// Largest integer N such that every integer in [0, N] is exactly representable in `type`:
// f16 2^11, bf16 2^8, f32 2^24, f64 2^53, i8 127, i32 2^31 - 1, i64 2^63 - 1.
int64_t ExactIntegerLimit(ElementType type);
// Stores `value` (which must be exactly representable) as one element at `p`.
void StoreInteger(ElementType type, int64_t value, std::byte* p);
// Loads the element at `p`; false when it is not an integer (a fraction, NaN, inf) or out of
// int64 range.
bool LoadInteger(ElementType type, const std::byte* p, int64_t* value);

// The canonical data of one run (see the file comment).
class CanonicalData {
 public:
  // For a plan starting at `source` (valid on `mesh`). InvalidArgument when the element type
  // cannot hold 2·S exactly for S summands (e.g. bf16 with 256 summands): no modulus of at
  // least 2 keeps the sums exact, so nothing could be checked soundly.
  static absl::StatusOr<CanonicalData> Create(const Mesh& mesh, const DistType& source);

  // M (see the file comment).
  int64_t modulus() const { return modulus_; }
  int64_t summands() const { return summands_; }

  // Writes device `device`'s block of `source` (its summand for partial types) into `array`,
  // which must have source's local shape and element type.
  void Fill(const Mesh& mesh, const DistType& source, int64_t device, LocalArray& array) const;

  // OK when `array` holds device `device`'s block of the full sum under `type` (element e's
  // value, or the sum of its S summands). For a partial `type` pass the array after summing
  // over the partial group.
  // InvalidArgument naming the device, local index, global element, expected and actual value.
  absl::Status Check(const Mesh& mesh, const DistType& type, int64_t device,
                     const LocalArray& array) const;

 private:
  // f(l, value) for elements global .. global + length - 1: the summand `summand` holds, or
  // with summand < 0 the full sum; stops when f returns false.
  template <typename F>
  void ForEachValue(int64_t global, int64_t length, int64_t summand, F f) const;

  int64_t modulus_ = 1;
  int64_t summands_ = 1;
};

// Largest prime <= n (n >= 2). Trial division; n below 2^31.
int64_t LargestPrimeAtMost(int64_t n);

}  // namespace reshard

#endif  // RESHARD_RUNTIME_LOCAL_ARRAY_H_
