// local_array.cc — see local_array.h.
#include "runtime/local_array.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "typesys/check.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {

LocalArray::LocalArray(std::vector<int64_t> shape, ElementType element_type,
                       MemoryTracker* tracker)
    : shape_(std::move(shape)), element_type_(element_type) {
  num_elements_ = 1;
  for (int64_t size : shape_) {
    RESHARD_CHECK(size >= 1) << "LocalArray dimensions are >= 1 (validated types)";
    num_elements_ *= size;
  }
  size_bytes_ = num_elements_ * ElementBytes(element_type_);
  // new T[] default-initialises: no memset of buffers that are about to be overwritten.
  data_.reset(new std::byte[size_bytes_]);
  Track(tracker);
}

LocalArray& LocalArray::operator=(LocalArray&& other) noexcept {
  if (this == &other) return *this;
  Track(nullptr);
  shape_ = std::move(other.shape_);
  element_type_ = other.element_type_;
  num_elements_ = other.num_elements_;
  size_bytes_ = other.size_bytes_;
  data_ = std::move(other.data_);
  // The bytes stay counted once: the tracker follows the data.
  tracker_ = other.tracker_;
  other.tracker_ = nullptr;
  other.shape_.clear();
  other.num_elements_ = 0;
  other.size_bytes_ = 0;
  return *this;
}

void LocalArray::Track(MemoryTracker* tracker) {
  if (tracker_ != nullptr) tracker_->Sub(size_bytes_);
  tracker_ = tracker;
  if (tracker_ != nullptr) tracker_->Add(size_bytes_);
}

// --- Codecs. ---

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {  // inf / NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // zero
    bits = sign;
  } else {  // subnormal: value = mantissa * 2^-24, exact in float
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf / NaN (keep NaN quiet and non-zero)
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                         // below 2^-14: subnormal half (or zero)
    // Scale to units of 2^-24 and round to nearest even.
    float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact (power of two)
    float rounded = std::nearbyint(scaled);                  // default mode: ties to even
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t half = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ffu);
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
  return sign | static_cast<uint16_t>(half);
}

float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToBFloat16(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // NaN
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);  // nearest even
  return static_cast<uint16_t>((f + rounding) >> 16);
}

int64_t ExactIntegerLimit(ElementType type) {
  switch (type) {
    case ElementType::kF16:
      return int64_t{1} << 11;
    case ElementType::kBF16:
      return int64_t{1} << 8;
    case ElementType::kF32:
      return int64_t{1} << 24;
    case ElementType::kF64:
      return int64_t{1} << 53;
    case ElementType::kI8:
      return 127;
    case ElementType::kI32:
      return std::numeric_limits<int32_t>::max();
    case ElementType::kI64:
      return std::numeric_limits<int64_t>::max();
  }
  RESHARD_CHECK(false) << "unknown element type";
  return 0;
}

void StoreInteger(ElementType type, int64_t value, std::byte* p) {
  switch (type) {
    case ElementType::kF16: {
      uint16_t h = FloatToHalf(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
    case ElementType::kBF16: {
      uint16_t h = FloatToBFloat16(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
    case ElementType::kF32: {
      float f = static_cast<float>(value);
      std::memcpy(p, &f, 4);
      return;
    }
    case ElementType::kF64: {
      double d = static_cast<double>(value);
      std::memcpy(p, &d, 8);
      return;
    }
    case ElementType::kI8: {
      int8_t i = static_cast<int8_t>(value);
      std::memcpy(p, &i, 1);
      return;
    }
    case ElementType::kI32: {
      int32_t i = static_cast<int32_t>(value);
      std::memcpy(p, &i, 4);
      return;
    }
    case ElementType::kI64:
      std::memcpy(p, &value, 8);
      return;
  }
}

namespace {

bool DoubleToInteger(double d, int64_t* value) {
  // 2^63 itself is out of range; every double below it converts exactly when integral.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
  if (d != std::floor(d)) return false;
  *value = static_cast<int64_t>(d);
  return true;
}

}  // namespace

bool LoadInteger(ElementType type, const std::byte* p, int64_t* value) {
  switch (type) {
    case ElementType::kF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return DoubleToInteger(HalfToFloat(h), value);
    }
    case ElementType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return DoubleToInteger(BFloat16ToFloat(h), value);
    }
    case ElementType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return DoubleToInteger(f, value);
    }
    case ElementType::kF64: {
      double d;
      std::memcpy(&d, p, 8);
      return DoubleToInteger(d, value);
    }
    case ElementType::kI8: {
      int8_t i;
      std::memcpy(&i, p, 1);
      *value = i;
      return true;
    }
    case ElementType::kI32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      *value = i;
      return true;
    }
    case ElementType::kI64:
      std::memcpy(value, p, 8);
      return true;
  }
  return false;
}

int64_t LargestPrimeAtMost(int64_t n) {
  RESHARD_CHECK(n >= 2 && n < (int64_t{1} << 31)) << "n = " << n;
  for (int64_t candidate = n;; --candidate) {
    bool prime = candidate >= 2;
    for (int64_t d = 2; prime && d * d <= candidate; ++d) prime = candidate % d != 0;
    if (prime) return candidate;
  }
}

// --- Canonical data. ---

namespace {

// Calls row(local_offset, global_offset) for every row (run of the last dimension) of
// device's block of `type`, with element offsets into the local buffer and the global array.
template <typename RowFn>
void ForEachRow(const Mesh& mesh, const DistType& type, int64_t device, RowFn row) {
  std::vector<int64_t> local = LocalShape(mesh, type);
  std::vector<int64_t> offset = BlockOffset(mesh, type, device);
  const int rank = type.rank();
  if (rank == 0) {
    row(0, 0, 1);
    return;
  }
  // Global row-major strides.
  std::vector<int64_t> stride(rank, 1);
  for (int i = rank - 2; i >= 0; --i) stride[i] = stride[i + 1] * type.dims[i + 1].size;
  const int64_t row_length = local[rank - 1];
  std::vector<int64_t> index(rank, 0);  // odometer over all dimensions but the last
  int64_t local_offset = 0;
  while (true) {
    int64_t global = 0;
    for (int i = 0; i < rank; ++i) global += (offset[i] + index[i]) * stride[i];
    row(local_offset, global, row_length);
    local_offset += row_length;
    int i = rank - 2;
    for (; i >= 0; --i) {
      if (++index[i] < local[i]) break;
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

std::string IndexString(const std::vector<int64_t>& shape, int64_t linear) {
  std::vector<int64_t> index(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    index[i] = linear % shape[i];
    linear /= shape[i];
  }
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}

}  // namespace

absl::StatusOr<CanonicalData> CanonicalData::Create(const Mesh& mesh, const DistType& source) {
  const int64_t summands = NumSummands(mesh, source);
  const int64_t limit = ExactIntegerLimit(source.element_type);
  CanonicalData data;
  data.summands_ = summands;
  if (summands == 1) {
    data.modulus_ = LargestPrimeAtMost(std::min<int64_t>(limit, (int64_t{1} << 31) - 1));
    return data;
  }
  // Sums of S summands of at most M each stay within the limit.
  data.modulus_ = std::min(kSummandModulus, limit / summands);
  if (data.modulus_ < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "element type ", std::string(ElementTypeName(source.element_type)),
        " cannot hold the checked sums of ", summands, " summands exactly (values up to 2·",
        summands, " > ", limit, "); use a wider element type"));
  }
  return data;
}

template <typename F>
void CanonicalData::ForEachValue(int64_t global, int64_t length, int64_t summand, F f) const {
  if (summands_ == 1) {
    // (e mod M) + 1, stepping the residue rather than dividing per element.
    int64_t residue = global % modulus_;
    for (int64_t l = 0; l < length; ++l) {
      if (!f(l, residue + 1)) return;
      if (++residue == modulus_) residue = 0;
    }
    return;
  }
  for (int64_t l = 0; l < length; ++l) {
    const int64_t value = summand >= 0 ? SummandValue(global + l, summand, modulus_)
                                       : SummandSum(global + l, summands_, modulus_);
    if (!f(l, value)) return;
  }
}

void CanonicalData::Fill(const Mesh& mesh, const DistType& source, int64_t device,
                         LocalArray& array) const {
  RESHARD_CHECK(array.shape() == LocalShape(mesh, source) &&
                array.element_type() == source.element_type)
      << "Fill needs an array of the source's local shape";
  const int64_t summand = SummandIndex(mesh, source, device);
  const int64_t element_bytes = ElementBytes(source.element_type);
  const ElementType type = source.element_type;
  std::byte* data = array.data();
  ForEachRow(mesh, source, device, [&](int64_t local, int64_t global, int64_t length) {
    std::byte* row = data + local * element_bytes;
    ForEachValue(global, length, summand, [&](int64_t l, int64_t value) {
      StoreInteger(type, value, row + l * element_bytes);
      return true;
    });
  });
}

absl::Status CanonicalData::Check(const Mesh& mesh, const DistType& type, int64_t device,
                                  const LocalArray& array) const {
  std::vector<int64_t> local_shape = LocalShape(mesh, type);
  if (array.shape() != local_shape || array.element_type() != type.element_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", device, " holds a buffer of shape [", absl::StrJoin(array.shape(), ","),
        "] ", std::string(ElementTypeName(array.element_type())), ", but ", ToString(type),
        " has local shape [", absl::StrJoin(local_shape, ","), "]"));
  }
  const int64_t element_bytes = ElementBytes(type.element_type);
  const std::byte* data = array.data();
  absl::Status status;
  ForEachRow(mesh, type, device, [&](int64_t local, int64_t global, int64_t length) {
    if (!status.ok()) return;
    const std::byte* row = data + local * element_bytes;
    ForEachValue(global, length, /*summand=*/-1, [&](int64_t l, int64_t expected) {
      int64_t actual = 0;
      bool integral = LoadInteger(type.element_type, row + l * element_bytes, &actual);
      if (!integral || actual != expected) {
        status = absl::InvalidArgumentError(absl::StrCat(
            "device ", device, " at local index ", IndexString(local_shape, local + l),
            " (global element ", global + l, ") of ", ToString(type), ": expected ", expected,
            ", got ", integral ? absl::StrCat(actual) : std::string("a non-integer")));
        return false;
      }
      return true;
    });
  });
  return status;
}

}  // namespace reshard
