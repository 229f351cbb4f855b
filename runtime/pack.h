// pack.h — local data layout transforms of the MPI executor (no MPI here, so they are unit
// tested on their own in tests/runtime_pack_test.cc).
//
// MPI collectives move contiguous per-rank pieces. Splitting or concatenating a row-major
// array along dimension i > 0 interleaves pieces, so the executor packs before sending and
// unpacks after receiving. Around dimension `dim` split into k pieces, an array is viewed as
// [outer][k][chunk] (outer = product of the sizes before dim, chunk = bytes of one piece's
// slab: size[dim]/k · product of the sizes after dim · element bytes):
//
//   PieceLayout layout = PieceLayoutOf({4, 6}, /*dim=*/1, /*k=*/3, /*element_bytes=*/4);
//   // outer 4, k 3, chunk 8 bytes
//   SplitPieces(src, dst, layout);    // [outer][k][chunk] -> [k][outer][chunk]: piece p contiguous
//   ConcatPieces(src, dst, layout);   // [k][outer][chunk] -> [outer][k][chunk]: the inverse
//   CopyPiece(src, dst, layout, p);   // [outer][k][chunk] -> [outer][chunk] of piece p
//
// When outer == 1 both transforms are the identity and the executor skips them
// (NeedsPacking).
#ifndef RESHARD_RUNTIME_PACK_H_
#define RESHARD_RUNTIME_PACK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace reshard {

struct PieceLayout {
  int64_t outer = 1;
  int64_t k = 1;
  int64_t chunk_bytes = 0;

  int64_t total_bytes() const { return outer * k * chunk_bytes; }
  int64_t piece_bytes() const { return outer * chunk_bytes; }
};

// The layout of an array of `shape` split into `k` pieces along `dim`. Requires
// 0 <= dim < rank and shape[dim] divisible by k (aborts otherwise: the executor only calls it
// on type-checked steps).
PieceLayout PieceLayoutOf(absl::Span<const int64_t> shape, int dim, int64_t k,
                          int64_t element_bytes);

// True when the pieces are interleaved (outer > 1 and k > 1), i.e. Split/Concat move data.
inline bool NeedsPacking(const PieceLayout& layout) { return layout.outer > 1 && layout.k > 1; }

// [outer][k][chunk] -> [k][outer][chunk]. src and dst hold total_bytes() and do not overlap.
void SplitPieces(const std::byte* src, std::byte* dst, const PieceLayout& layout);
// [k][outer][chunk] -> [outer][k][chunk]. src and dst hold total_bytes() and do not overlap.
void ConcatPieces(const std::byte* src, std::byte* dst, const PieceLayout& layout);
// Piece p (0 <= p < k) of [outer][k][chunk] into dst ([outer][chunk], piece_bytes()).
void CopyPiece(const std::byte* src, std::byte* dst, const PieceLayout& layout, int64_t p);

// Copies the box of extent `box` starting at `src_offset` in a row-major array of
// `src_shape` into the box starting at `dst_offset` in an array of `dst_shape` (all of the
// same rank; rank 0 copies one element). The boxes must lie inside their arrays. Packing a box
// into a contiguous buffer is dst_shape = box, dst_offset = 0; unpacking the reverse.
void CopyBox(const std::byte* src, absl::Span<const int64_t> src_shape,
             absl::Span<const int64_t> src_offset, std::byte* dst,
             absl::Span<const int64_t> dst_shape, absl::Span<const int64_t> dst_offset,
             absl::Span<const int64_t> box, int64_t element_bytes);

}  // namespace reshard

#endif  // RESHARD_RUNTIME_PACK_H_
