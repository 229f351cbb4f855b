// interpreter.cc — the reference interpreter (see interpreter.h).
//
// Written for obviousness, not speed: every collective is spelled out on whole buffers, group by
// group, exactly as DESIGN §2 describes it. The typing rules (ApplyRule, CheckStep) are never
// consulted, so the interpreter can catch a typing rule and a synthesizer that agree on a
// wrong answer.
#include "interp/interpreter.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

// Group computations and messages are linear in the device count; beyond this the interpreter
// stops being a quick oracle and a typo in a mesh is the likelier explanation.
constexpr int64_t kMaxInterpretedDevices = 4096;
// Replicated layouts multiply the global array by the device count, and all_gather can grow
// buffers without bound on ill-typed plans, so the sum of all buffer sizes is capped as well
// (2^26 doubles = 512 MiB).
constexpr int64_t kMaxBufferElements = int64_t{1} << 26;

// --- Formatting. ---

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

std::string DeviceString(const Mesh& mesh, int64_t device) {
  std::vector<int64_t> coordinates = mesh.Coordinates(device);
  std::vector<std::string> parts;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    parts.push_back(absl::StrCat(mesh.axes()[a].name, "=", coordinates[a]));
  }
  return absl::StrCat("device ", device, " (", absl::StrJoin(parts, ","), ")");
}

// Values are exact integers in every correct run; print them without exponents so a message
// can be compared with a hand computation.
std::string ValueString(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

// --- Dense row-major arrays. ---

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t size : shape) n *= size;
  return n;
}

std::vector<int64_t> Unflatten(int64_t linear, absl::Span<const int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    index[i] = linear % shape[i];
    linear /= shape[i];
  }
  return index;
}

// A buffer viewed as [outer, shape[dim], inner] around dimension `dim`.
struct DimView {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

DimView ViewAround(const Buffer& buffer, int dim) {
  DimView view;
  for (int i = 0; i < dim; ++i) view.outer *= buffer.shape[i];
  view.size = buffer.shape[dim];
  for (size_t i = dim + 1; i < buffer.shape.size(); ++i) view.inner *= buffer.shape[i];
  return view;
}

// Piece `p` of `buffer` split into `k` equal parts along `dim` (size divisible by k).
Buffer Piece(const Buffer& buffer, int dim, int64_t k, int64_t p) {
  DimView view = ViewAround(buffer, dim);
  int64_t piece_size = view.size / k;
  Buffer piece;
  piece.shape = buffer.shape;
  piece.shape[dim] = piece_size;
  piece.data.reserve(view.outer * piece_size * view.inner);
  for (int64_t o = 0; o < view.outer; ++o) {
    auto begin = buffer.data.begin() + (o * view.size + p * piece_size) * view.inner;
    piece.data.insert(piece.data.end(), begin, begin + piece_size * view.inner);
  }
  return piece;
}

// Concatenation along `dim` of buffers whose shapes agree everywhere else.
Buffer Concat(const std::vector<const Buffer*>& parts, int dim) {
  Buffer result;
  result.shape = parts.front()->shape;
  result.shape[dim] = 0;
  for (const Buffer* part : parts) result.shape[dim] += part->shape[dim];
  DimView result_view = ViewAround(result, dim);
  result.data.reserve(result_view.outer * result_view.size * result_view.inner);
  for (int64_t o = 0; o < result_view.outer; ++o) {
    for (const Buffer* part : parts) {
      int64_t chunk = part->shape[dim] * result_view.inner;
      auto begin = part->data.begin() + o * chunk;
      result.data.insert(result.data.end(), begin, begin + chunk);
    }
  }
  return result;
}

Buffer Sum(const std::vector<const Buffer*>& parts) {
  Buffer result = *parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    for (size_t e = 0; e < result.data.size(); ++e) result.data[e] += parts[i]->data[e];
  }
  return result;
}

// --- Input checks. ---

absl::Status CheckMesh(const Mesh& mesh) {
  if (mesh.num_axes() == 0 || mesh.num_devices() < 1) {
    return absl::InvalidArgumentError("the mesh has no axes (a default-constructed Mesh?)");
  }
  if (mesh.num_devices() > kMaxInterpretedDevices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh ", mesh.ToString(), " has ", mesh.num_devices(),
        " devices; the reference interpreter handles at most ", kMaxInterpretedDevices));
  }
  return absl::OkStatus();
}

// The buffers are the caller's data, so a shape/data disagreement is bad input, not a bug.
absl::Status CheckBufferShapes(const Mesh& mesh, const DeviceBuffers& buffers) {
  if (static_cast<int64_t>(buffers.size()) != mesh.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat("expected one buffer per device (",
                                                   mesh.num_devices(), "), got ", buffers.size()));
  }
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    const Buffer& buffer = buffers[d];
    int64_t elements = 1;
    bool consistent = true;
    for (int64_t size : buffer.shape) {
      // Bounding by the data size keeps the product from overflowing.
      if (size < 0 || (size > 0 && elements > static_cast<int64_t>(buffer.data.size()) / size)) {
        consistent = false;
        break;
      }
      elements *= size;
    }
    if (!consistent || elements != static_cast<int64_t>(buffer.data.size())) {
      return absl::InvalidArgumentError(absl::StrCat("the buffer of ", DeviceString(mesh, d),
                                                     " has shape ", ShapeString(buffer.shape),
                                                     " but ", buffer.data.size(), " elements"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTotalSize(int64_t total_elements, absl::string_view what) {
  if (total_elements > kMaxBufferElements) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " would hold ", total_elements,
                     " elements over all devices; the reference interpreter holds at most ",
                     kMaxBufferElements));
  }
  return absl::OkStatus();
}

absl::Status CheckDim(int64_t dim, const std::string& attribute, const Mesh& mesh, int64_t device,
                      const Buffer& buffer) {
  if (dim < 0 || dim >= static_cast<int64_t>(buffer.shape.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(attribute, " ", dim, " is out of range for the rank-", buffer.shape.size(),
                     " buffer ", ShapeString(buffer.shape), " of ", DeviceString(mesh, device)));
  }
  return absl::OkStatus();
}

absl::Status CheckDivisible(int64_t dim, int64_t k, const std::string& attribute, const Mesh& mesh,
                            int64_t device, const Buffer& buffer) {
  if (buffer.shape[dim] % k != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(attribute, " ", dim, ": size ", buffer.shape[dim], " of the buffer ",
                     ShapeString(buffer.shape), " of ", DeviceString(mesh, device),
                     " is not divisible by the group size ", k));
  }
  return absl::OkStatus();
}

// The groups of a collective over `axes`, each listed in group order.
std::vector<std::vector<int64_t>> Groups(const Mesh& mesh, const AxisList& axes) {
  std::vector<std::vector<int64_t>> groups;
  int64_t k = mesh.GroupSize(axes);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    if (mesh.IndexOver(d, axes) != 0) continue;
    std::vector<int64_t> group = mesh.Group(d, axes);
    // The oracle relies on the mesh's group order; a wrong order would silently permute data.
    RESHARD_CHECK(static_cast<int64_t>(group.size()) == k) << "group size of " << d;
    for (int64_t i = 0; i < k; ++i) {
      RESHARD_CHECK(mesh.IndexOver(group[i], axes) == i) << "group order of " << d;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

absl::Status CheckSameShapes(const Mesh& mesh, const std::vector<int64_t>& group,
                             const DeviceBuffers& buffers) {
  for (int64_t device : group) {
    if (buffers[device].shape != buffers[group.front()].shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffers in one group differ in shape: ", DeviceString(mesh, group.front()),
                       " has ", ShapeString(buffers[group.front()].shape), ", ",
                       DeviceString(mesh, device), " has ", ShapeString(buffers[device].shape)));
    }
  }
  return absl::OkStatus();
}

std::vector<const Buffer*> Members(const std::vector<int64_t>& group,
                                   const DeviceBuffers& buffers) {
  std::vector<const Buffer*> members;
  for (int64_t device : group) members.push_back(&buffers[device]);
  return members;
}

int64_t Bytes(const Buffer& buffer, int64_t element_bytes) {
  return static_cast<int64_t>(buffer.data.size()) * element_bytes;
}

// Executes `op` into `out` and `received` (fresh, per device) without touching `in`, so that a
// failing op leaves the caller's buffers as they were.
absl::Status Execute(const Mesh& mesh, const Collective& op, int64_t element_bytes,
                     const DeviceBuffers& in, DeviceBuffers& out, std::vector<int64_t>& received) {
  out = in;
  if (absl::Status s = CheckCollectiveShape(mesh, op); !s.ok()) return s;
  switch (op.kind) {
    case CollectiveKind::kAllSlice: {
      int64_t k = mesh.GroupSize(op.mesh_axes);
      for (const std::vector<int64_t>& group : Groups(mesh, op.mesh_axes)) {
        if (absl::Status s = CheckSameShapes(mesh, group, in); !s.ok()) return s;
        const Buffer& first = in[group.front()];
        if (absl::Status s = CheckDim(op.dim, "slice_axis", mesh, group.front(), first); !s.ok()) {
          return s;
        }
        if (absl::Status s = CheckDivisible(op.dim, k, "slice_axis", mesh, group.front(), first);
            !s.ok()) {
          return s;
        }
        for (int64_t i = 0; i < k; ++i) {
          out[group[i]] = Piece(in[group[i]], op.dim, k, i);
        }
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kAllGather: {
      int64_t k = mesh.GroupSize(op.mesh_axes);
      std::vector<std::vector<int64_t>> groups = Groups(mesh, op.mesh_axes);
      int64_t total = 0;
      for (const std::vector<int64_t>& group : groups) {
        if (absl::Status s = CheckSameShapes(mesh, group, in); !s.ok()) return s;
        if (absl::Status s =
                CheckDim(op.dim, "gather_axis", mesh, group.front(), in[group.front()]);
            !s.ok()) {
          return s;
        }
        total += k * k * static_cast<int64_t>(in[group.front()].data.size());
      }
      if (absl::Status s = CheckTotalSize(total, "the all_gather result"); !s.ok()) return s;
      for (const std::vector<int64_t>& group : groups) {
        Buffer gathered = Concat(Members(group, in), op.dim);
        for (int64_t device : group) {
          out[device] = gathered;
          for (int64_t other : group) {
            if (other != device) received[device] += Bytes(in[other], element_bytes);
          }
        }
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kAllToAll: {
      int64_t k = mesh.GroupSize(op.mesh_axes);
      for (const std::vector<int64_t>& group : Groups(mesh, op.mesh_axes)) {
        if (absl::Status s = CheckSameShapes(mesh, group, in); !s.ok()) return s;
        const Buffer& first = in[group.front()];
        if (absl::Status s = CheckDim(op.dim, "concat_axis", mesh, group.front(), first); !s.ok()) {
          return s;
        }
        if (absl::Status s = CheckDim(op.split_dim, "split_axis", mesh, group.front(), first);
            !s.ok()) {
          return s;
        }
        if (absl::Status s =
                CheckDivisible(op.split_dim, k, "split_axis", mesh, group.front(), first);
            !s.ok()) {
          return s;
        }
        // Member q receives piece q of every member p, in group order.
        for (int64_t q = 0; q < k; ++q) {
          std::vector<Buffer> pieces;
          for (int64_t p = 0; p < k; ++p) {
            pieces.push_back(Piece(in[group[p]], op.split_dim, k, q));
            if (p != q) received[group[q]] += Bytes(pieces.back(), element_bytes);
          }
          std::vector<const Buffer*> parts;
          for (const Buffer& piece : pieces) parts.push_back(&piece);
          out[group[q]] = Concat(parts, op.dim);
        }
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kAllReduce: {
      int64_t k = mesh.GroupSize(op.mesh_axes);
      for (const std::vector<int64_t>& group : Groups(mesh, op.mesh_axes)) {
        if (absl::Status s = CheckSameShapes(mesh, group, in); !s.ok()) return s;
        Buffer sum = Sum(Members(group, in));
        for (int64_t device : group) {
          out[device] = sum;
          int64_t b = Bytes(in[device], element_bytes);
          received[device] += (2 * (k - 1) * b + k - 1) / k;  // ceil(2(k-1)B/k)
        }
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kReduceScatter: {
      int64_t k = mesh.GroupSize(op.mesh_axes);
      for (const std::vector<int64_t>& group : Groups(mesh, op.mesh_axes)) {
        if (absl::Status s = CheckSameShapes(mesh, group, in); !s.ok()) return s;
        const Buffer& first = in[group.front()];
        if (absl::Status s = CheckDim(op.dim, "scatter_axis", mesh, group.front(), first);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = CheckDivisible(op.dim, k, "scatter_axis", mesh, group.front(), first);
            !s.ok()) {
          return s;
        }
        Buffer sum = Sum(Members(group, in));
        for (int64_t i = 0; i < k; ++i) {
          out[group[i]] = Piece(sum, op.dim, k, i);
          // B is divisible by k because the scattered dimension is.
          received[group[i]] += (k - 1) * (Bytes(in[group[i]], element_bytes) / k);
        }
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kCollectivePermute: {
      int64_t total = 0;
      for (const Buffer& buffer : in) total += static_cast<int64_t>(buffer.data.size());
      for (const auto& [source, target] : op.source_target_pairs) {
        total += static_cast<int64_t>(in[source].data.size()) -
                 static_cast<int64_t>(in[target].data.size());
      }
      if (absl::Status s = CheckTotalSize(total, "the collective_permute result"); !s.ok()) {
        return s;
      }
      // Reading from `in` and writing to `out` makes every read happen before any write.
      for (const auto& [source, target] : op.source_target_pairs) {
        out[target] = in[source];
        if (source != target) received[target] += Bytes(in[source], element_bytes);
      }
      return absl::OkStatus();
    }

    case CollectiveKind::kAllToAllV: {
      // Every device's output starts unwritten; each transfer copies a box element by element,
      // and every output element must be written exactly once.
      const int64_t n = mesh.num_devices();
      const size_t rank = op.out_shape.size();
      for (int64_t e : op.out_shape) {
        if (e < 0) return absl::InvalidArgumentError("out_shape has a negative extent");
      }
      const int64_t out_elements = NumElements(op.out_shape);
      if (absl::Status s = CheckTotalSize(n * out_elements, "the all_to_all_v result"); !s.ok()) {
        return s;
      }
      std::vector<std::vector<bool>> written(n, std::vector<bool>(out_elements, false));
      for (int64_t d = 0; d < n; ++d) {
        out[d].shape = op.out_shape;
        out[d].data.assign(out_elements, 0.0);
      }
      for (const Transfer& t : op.transfers) {
        std::string where = absl::StrCat("transfer ", t.source, " -> ", t.target);
        if (t.source < 0 || t.source >= n || t.target < 0 || t.target >= n) {
          return absl::InvalidArgumentError(absl::StrCat(where, " names a device out of range"));
        }
        const Buffer& from = in[t.source];
        if (t.shape.size() != rank || t.source_offset.size() != rank ||
            t.target_offset.size() != rank || from.shape.size() != rank) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": rank mismatch"));
        }
        for (size_t i = 0; i < rank; ++i) {
          if (t.shape[i] < 0 || t.source_offset[i] < 0 || t.target_offset[i] < 0 ||
              t.source_offset[i] + t.shape[i] > from.shape[i] ||
              t.target_offset[i] + t.shape[i] > op.out_shape[i]) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": box leaves a buffer in dimension ", i));
          }
        }
        const int64_t volume = NumElements(t.shape);
        BoxCursor src(t.shape, from.shape, t.source_offset);
        BoxCursor dst(t.shape, op.out_shape, t.target_offset);
        for (int64_t l = 0; l < volume; ++l, src.Next(), dst.Next()) {
          const int64_t to = dst.linear();
          if (written[t.target][to]) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": writes an element of device ", t.target, " twice"));
          }
          written[t.target][to] = true;
          out[t.target].data[to] = from.data[src.linear()];
        }
        if (t.source != t.target) received[t.target] += volume * element_bytes;
      }
      for (int64_t d = 0; d < n; ++d) {
        if (std::find(written[d].begin(), written[d].end(), false) != written[d].end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("device ", d, "'s output is not completely written"));
        }
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective kind ", static_cast<int>(op.kind)));
}

bool IsKnownKind(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllSlice:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kAllToAllV:
      return true;
  }
  return false;
}

// Checks that `type` (valid on `mesh`) is small enough to interpret with the values of a
// `summands`-summand source.
absl::Status CheckInterpretable(const Mesh& mesh, const DistType& type, int64_t summands) {
  int64_t global = GlobalElements(type);
  if (summands < 1 || global > kMaxInterpretedElements / summands) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(type), " has ", global, " global elements and ", summands,
                     " summands; the reference interpreter handles at most ",
                     kMaxInterpretedElements, " elements times summands"));
  }
  return CheckTotalSize(mesh.num_devices() * LocalElements(mesh, type),
                        absl::StrCat(ToString(type), " on mesh ", mesh.ToString()));
}

std::vector<int64_t> GlobalShape(const DistType& type) {
  std::vector<int64_t> shape;
  for (const Dim& dim : type.dims) shape.push_back(dim.size);
  return shape;
}

int64_t MaxLocalBytes(const DeviceBuffers& buffers, int64_t element_bytes) {
  int64_t peak = 0;
  for (const Buffer& buffer : buffers) peak = std::max(peak, Bytes(buffer, element_bytes));
  return peak;
}

// Why `type` cannot be the result of a plan starting at `source`, or "" when it can.
std::string EndpointMismatch(const DistType& source, const DistType& type) {
  if (type.element_type != source.element_type) {
    return absl::StrCat("element type ", std::string(ElementTypeName(type.element_type)),
                        " differs from the source's ",
                        std::string(ElementTypeName(source.element_type)));
  }
  if (GlobalShape(type) != GlobalShape(source)) {
    return absl::StrCat("global shape ", ShapeString(GlobalShape(type)),
                        " differs from the source's ", ShapeString(GlobalShape(source)));
  }
  return "";
}

}  // namespace

absl::StatusOr<DeviceBuffers> Materialize(const Mesh& mesh, const DistType& type) {
  if (absl::Status s = CheckMesh(mesh); !s.ok()) return s;
  if (absl::Status s = Validate(mesh, type); !s.ok()) return s;
  if (absl::Status s = CheckInterpretable(mesh, type, NumSummands(mesh, type)); !s.ok()) {
    return s;
  }
  std::vector<int64_t> global_shape = GlobalShape(type);
  std::vector<int64_t> local_shape = LocalShape(mesh, type);
  int64_t local_elements = NumElements(local_shape);
  const bool summed = NumSummands(mesh, type) > 1;
  DeviceBuffers buffers(mesh.num_devices());
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    std::vector<int64_t> offset = BlockOffset(mesh, type, d);
    const int64_t summand = SummandIndex(mesh, type, d);
    Buffer& buffer = buffers[d];
    buffer.shape = local_shape;
    buffer.data.resize(local_elements);
    BoxCursor global(local_shape, global_shape, offset);
    for (int64_t l = 0; l < local_elements; ++l, global.Next()) {
      const int64_t e = global.linear();
      buffer.data[l] = static_cast<double>(summed ? SummandValue(e, summand, kSummandModulus)
                                                  : e + 1);
    }
  }
  return buffers;
}

double CanonicalValue(int64_t element, int64_t summands) {
  return static_cast<double>(summands <= 1 ? element + 1
                                           : SummandSum(element, summands, kSummandModulus));
}

absl::Status ExecuteCollective(const Mesh& mesh, const Collective& op, int64_t element_bytes,
                               DeviceBuffers& buffers, std::vector<int64_t>& bytes_received) {
  if (absl::Status s = CheckMesh(mesh); !s.ok()) return s;
  if (!IsKnownKind(op.kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown collective kind ", static_cast<int>(op.kind)));
  }
  std::string context = ToString(op);
  if (element_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": element_bytes must be positive, got ", element_bytes));
  }
  if (static_cast<int64_t>(bytes_received.size()) != mesh.num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": bytes_received has ", bytes_received.size(),
                     " entries, expected one per device (", mesh.num_devices(), ")"));
  }
  if (absl::Status s = CheckBufferShapes(mesh, buffers); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": ", s.message()));
  }
  DeviceBuffers out;
  std::vector<int64_t> received(mesh.num_devices(), 0);
  if (absl::Status s = Execute(mesh, op, element_bytes, buffers, out, received); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": ", s.message()));
  }
  buffers = std::move(out);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) bytes_received[d] += received[d];
  return absl::OkStatus();
}

namespace {

// CheckBuffers; `sums` holds CanonicalValue of every global element when the source has
// several summands (each costs `source_summands` SummandValue calls, and a replicated type
// checks every element on many devices), computed on the first call that needs it so that
// RunPlan's checks of every step share it; unused for one summand (e + 1).
absl::Status CheckBuffersWith(const Mesh& mesh, const DistType& type, int64_t source_summands,
                              const DeviceBuffers& buffers, std::vector<double>& sums) {
  if (absl::Status s = CheckMesh(mesh); !s.ok()) return s;
  if (absl::Status s = Validate(mesh, type); !s.ok()) return s;
  if (source_summands < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("source_summands must be at least 1, got ", source_summands));
  }
  if (absl::Status s = CheckInterpretable(mesh, type, source_summands); !s.ok()) return s;
  if (absl::Status s = CheckBufferShapes(mesh, buffers); !s.ok()) return s;

  std::vector<int64_t> global_shape = GlobalShape(type);
  std::vector<int64_t> local_shape = LocalShape(mesh, type);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    if (buffers[d].shape != local_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          DeviceString(mesh, d), " holds a buffer of shape ", ShapeString(buffers[d].shape),
          ", but ", ToString(type), " has local shape ", ShapeString(local_shape)));
    }
  }

  if (source_summands > 1 && sums.empty()) {
    sums.resize(GlobalElements(type));
    for (int64_t e = 0; e < static_cast<int64_t>(sums.size()); ++e) {
      sums[e] = CanonicalValue(e, source_summands);
    }
  }
  // Non-partial types are the special case of singleton groups.
  AxisList partial = PartialInMeshOrder(mesh, type);
  int64_t local_elements = NumElements(local_shape);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    std::vector<int64_t> group = {d};
    if (!partial.empty()) {
      if (mesh.IndexOver(d, partial) != 0) continue;
      group = mesh.Group(d, partial);
    }
    std::vector<int64_t> offset = BlockOffset(mesh, type, d);
    BoxCursor global(local_shape, global_shape, offset);
    for (int64_t l = 0; l < local_elements; ++l, global.Next()) {
      double actual = 0;
      for (int64_t member : group) actual += buffers[member].data[l];
      const int64_t e = global.linear();
      double expected = source_summands > 1 ? sums[e] : static_cast<double>(e + 1);
      if (actual != expected) {
        std::string who = DeviceString(mesh, d);
        if (!partial.empty()) {
          who = absl::StrCat("the partial group [", absl::StrJoin(group, ","), "] of ", who);
        }
        return absl::InvalidArgumentError(absl::StrCat(
            who, " at local index ", ShapeString(Unflatten(l, local_shape)), " (global element ", e,
            ") of ", ToString(type), ": expected ", ValueString(expected),
            partial.empty() ? "" : " summed", ", got ", ValueString(actual)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBuffers(const Mesh& mesh, const DistType& type, int64_t source_summands,
                          const DeviceBuffers& buffers) {
  std::vector<double> sums;
  return CheckBuffersWith(mesh, type, source_summands, buffers, sums);
}

absl::StatusOr<RunReport> RunPlan(const Plan& plan) {
  const Mesh& mesh = plan.mesh;
  absl::StatusOr<DeviceBuffers> buffers = Materialize(mesh, plan.source);
  if (!buffers.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot materialize the source: ", buffers.status().message()));
  }
  if (absl::Status s = Validate(mesh, plan.target); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid target: ", s.message()));
  }
  const int64_t source_summands = NumSummands(mesh, plan.source);
  const int64_t element_bytes = ElementBytes(plan.source.element_type);
  // Every checked type has the source's global shape (EndpointMismatch runs first).
  std::vector<double> sums;

  RunReport report;
  report.peak_local_bytes = MaxLocalBytes(*buffers, element_bytes);
  std::vector<int64_t> received(mesh.num_devices(), 0);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    // all_to_all_v keeps each device's input alive until its output is complete: its
    // footprint is input + output (as Metrics::peak_local_bytes counts it).
    std::vector<int64_t> input_bytes;
    if (step.op.kind == CollectiveKind::kAllToAllV) {
      for (const Buffer& buffer : *buffers) input_bytes.push_back(Bytes(buffer, element_bytes));
    }
    if (absl::Status s = ExecuteCollective(mesh, step.op, element_bytes, *buffers, received);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("step ", i, ": ", s.message()));
    }
    for (size_t d = 0; d < input_bytes.size(); ++d) {
      report.peak_local_bytes =
          std::max(report.peak_local_bytes, input_bytes[d] + Bytes((*buffers)[d], element_bytes));
    }
    report.peak_local_bytes =
        std::max(report.peak_local_bytes, MaxLocalBytes(*buffers, element_bytes));
    // Declared step types are checked too: a plan whose intermediate types are not what the
    // buffers hold has wrong metrics and a wrong certificate even when its result is right.
    // The first such step is reported; execution goes on so the measurements stay complete.
    if (!report.message.empty()) continue;
    std::string context = absl::StrCat("after step ", i, " (", ToString(step.op), ")");
    if (std::string why = EndpointMismatch(plan.source, step.type); !why.empty()) {
      report.message =
          absl::StrCat(context, ": the declared type ", ToString(step.type), " has ", why);
      continue;
    }
    absl::Status s = Validate(mesh, step.type);
    if (s.ok()) s = CheckBuffersWith(mesh, step.type, source_summands, *buffers, sums);
    if (!s.ok()) {
      report.message = absl::StrCat(context, ": the buffers do not hold the declared type ",
                                    ToString(step.type), ": ", s.message());
    }
  }
  for (int64_t bytes : received) {
    report.bytes_received_max = std::max(report.bytes_received_max, bytes);
    report.bytes_received_total += bytes;
  }
  if (!report.message.empty()) return report;

  if (std::string why = EndpointMismatch(plan.source, plan.target); !why.empty()) {
    report.message = absl::StrCat("target ", ToString(plan.target), " has ", why);
    return report;
  }
  if (absl::Status s = CheckBuffersWith(mesh, plan.target, source_summands, *buffers, sums);
      !s.ok()) {
    report.message = absl::StrCat("the result does not hold the target ", ToString(plan.target),
                                  ": ", s.message());
    return report;
  }
  report.ok = true;
  return report;
}

}  // namespace reshard
