// pack.cc — see pack.h.
#include "runtime/pack.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "typesys/check.h"

namespace reshard {

PieceLayout PieceLayoutOf(absl::Span<const int64_t> shape, int dim, int64_t k,
                          int64_t element_bytes) {
  RESHARD_CHECK(dim >= 0 && dim < static_cast<int>(shape.size())) << "dim " << dim;
  RESHARD_CHECK(k >= 1 && shape[dim] % k == 0) << "size " << shape[dim] << " / k " << k;
  PieceLayout layout;
  layout.k = k;
  for (int i = 0; i < dim; ++i) layout.outer *= shape[i];
  int64_t inner = 1;
  for (size_t i = dim + 1; i < shape.size(); ++i) inner *= shape[i];
  layout.chunk_bytes = shape[dim] / k * inner * element_bytes;
  return layout;
}

void SplitPieces(const std::byte* src, std::byte* dst, const PieceLayout& layout) {
  const int64_t c = layout.chunk_bytes;
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t p = 0; p < layout.k; ++p) {
      std::memcpy(dst + (p * layout.outer + o) * c, src + (o * layout.k + p) * c, c);
    }
  }
}

void ConcatPieces(const std::byte* src, std::byte* dst, const PieceLayout& layout) {
  const int64_t c = layout.chunk_bytes;
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t p = 0; p < layout.k; ++p) {
      std::memcpy(dst + (o * layout.k + p) * c, src + (p * layout.outer + o) * c, c);
    }
  }
}

void CopyPiece(const std::byte* src, std::byte* dst, const PieceLayout& layout, int64_t p) {
  RESHARD_CHECK(p >= 0 && p < layout.k) << "piece " << p;
  const int64_t c = layout.chunk_bytes;
  for (int64_t o = 0; o < layout.outer; ++o) {
    std::memcpy(dst + o * c, src + (o * layout.k + p) * c, c);
  }
}

void CopyBox(const std::byte* src, absl::Span<const int64_t> src_shape,
             absl::Span<const int64_t> src_offset, std::byte* dst,
             absl::Span<const int64_t> dst_shape, absl::Span<const int64_t> dst_offset,
             absl::Span<const int64_t> box, int64_t element_bytes) {
  const int rank = static_cast<int>(box.size());
  RESHARD_CHECK(src_shape.size() == box.size() && dst_shape.size() == box.size() &&
                src_offset.size() == box.size() && dst_offset.size() == box.size())
      << "CopyBox rank mismatch";
  if (rank == 0) {
    std::memcpy(dst, src, element_bytes);
    return;
  }
  for (int i = 0; i < rank; ++i) {
    RESHARD_CHECK(box[i] >= 1 && src_offset[i] >= 0 && dst_offset[i] >= 0 &&
                  src_offset[i] + box[i] <= src_shape[i] && dst_offset[i] + box[i] <= dst_shape[i])
        << "CopyBox: box leaves an array in dimension " << i;
  }
  // Element strides of both arrays.
  std::vector<int64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (int i = rank - 2; i >= 0; --i) {
    src_stride[i] = src_stride[i + 1] * src_shape[i + 1];
    dst_stride[i] = dst_stride[i + 1] * dst_shape[i + 1];
  }
  // Copy the longest contiguous run at once: trailing dimensions that the box spans entirely
  // in both arrays merge into the row.
  int row_dim = rank - 1;
  int64_t row = box[rank - 1];
  while (row_dim > 0 && box[row_dim] == src_shape[row_dim] && box[row_dim] == dst_shape[row_dim]) {
    --row_dim;
    row *= box[row_dim];
  }
  const int64_t row_bytes = row * element_bytes;
  std::vector<int64_t> index(rank, 0);  // odometer over dimensions < row_dim
  while (true) {
    int64_t s = 0, d = 0;
    for (int i = 0; i < rank; ++i) {
      int64_t at = i < row_dim ? index[i] : 0;
      s += (src_offset[i] + at) * src_stride[i];
      d += (dst_offset[i] + at) * dst_stride[i];
    }
    std::memcpy(dst + d * element_bytes, src + s * element_bytes, row_bytes);
    int i = row_dim - 1;
    for (; i >= 0; --i) {
      if (++index[i] < box[i]) break;
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

}  // namespace reshard
