// Translation validation of a plan (see plan_certificate.h and docs/proofs.md).
//
// Encoding. A *term* is a symbolic (device coordinates, local index) pair: "the element at this
// local index of this device's buffer". The walk starts from one term — symbolic coordinates
// c_a ∈ [0,|a|) and a symbolic target local index l — and rewrites it through each step's
// backward index map, from the last step to the first. Reductions turn one term into k terms
// (one per group member, enumerated concretely), so after the walk the target element is the
// sum of the terms' source elements. All arithmetic is linear integer arithmetic: group
// indices are mixed-radix sums with constant strides, and the digits of a quotient by a
// constant (the concrete local sizes propagated forward from the source) are fresh variables
// with a linear definition (SplitIndex). all_to_all_v replaces a term by
// fresh read-position variables defined by one implication per transfer position of a class
// of target devices, with fields affine in the device coordinates (TransferClasses, StepBack);
// permutes read their source device from such classes too (PermuteClasses).
#include "proofs/plan_certificate.h"

#include <z3++.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

// Beyond this many terms per element the certificate gives up (kError): correct plans have at
// most one term per source summand, so only wildly wrong plans get here.
constexpr int64_t kMaxTerms = 4096;

using Exprs = std::vector<z3::expr>;

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

std::string StepName(size_t index, const Collective& op) {
  std::string text = ToString(op);
  if (text.size() > 160) text = absl::StrCat(text.substr(0, 157), "...");
  return absl::StrCat(index + 1, " (", text, ")");
}

// Mesh axes of a collective, resolved to mesh indices, with mixed-radix strides (first axis
// most significant) — the group order of Mesh::Group.
struct Axes {
  std::vector<int> index;
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
  int64_t k = 1;  // Group size.
};

Axes Resolve(const Mesh& mesh, const AxisList& names) {
  Axes axes;
  for (const AxisName& name : names) {
    int a = mesh.AxisIndex(name);
    axes.index.push_back(a);
    axes.size.push_back(mesh.axes()[a].size);
  }
  axes.stride.assign(names.size(), 1);
  for (int j = static_cast<int>(names.size()) - 2; j >= 0; --j) {
    axes.stride[j] = axes.stride[j + 1] * axes.size[j + 1];
  }
  for (int64_t s : axes.size) axes.k *= s;
  return axes;
}

Axes AllAxes(const Mesh& mesh) {
  AxisList names;
  for (const MeshAxis& a : mesh.axes()) names.push_back(a.name);
  return Resolve(mesh, names);
}

// g(c): the mixed-radix index of coordinates `coords` over `axes`.
z3::expr MixedRadix(z3::context& ctx, const Exprs& coords, const Axes& axes) {
  z3::expr sum = ctx.int_val(0);
  for (size_t j = 0; j < axes.index.size(); ++j) {
    sum = sum + coords[axes.index[j]] * ctx.int_val(axes.stride[j]);
  }
  return sum.simplify();
}

// Coordinates over `axes` := the digits of the concrete member index m.
void SetDigits(z3::context& ctx, Exprs& coords, const Axes& axes, int64_t m) {
  for (size_t j = 0; j < axes.index.size(); ++j) {
    coords[axes.index[j]] = ctx.int_val((m / axes.stride[j]) % axes.size[j]);
  }
}

// Coordinates over `axes` := digits(l div size), returning l mod size — as fresh variables r,
// c_j and q with the definition
//     l = (q·k + Σ_j c_j·stride_j)·size + r  ∧  0 ≤ r < size  ∧  0 ≤ c_j < |A_j|,
// appended to `definitions` (the query's assumptions). For every integer l exactly one
// (q, c, r) satisfies it (Euclidean division by size, then by k, then mixed radix), namely
// r = l mod size, c_j = ((l div size) div stride_j) mod |A_j| and q = (l div size) div k, so
// the definition is the div/mod form, written without nested div/mod: Z3 4.8.12 proved the
// 256-device all_gather bench plans in ≈ 10 ms this way and in 0.9–1.7 s with
// mod(div(div(l, size), stride_j), |A_j|).
z3::expr SplitIndex(z3::context& ctx, const z3::expr& l, int64_t size, const Axes& axes,
                    Exprs& coords, std::vector<z3::expr>& definitions) {
  const std::string prefix = absl::StrCat("s", definitions.size(), "_");
  z3::expr r = ctx.int_const((prefix + "r").c_str());
  z3::expr q = ctx.int_const((prefix + "q").c_str());
  z3::expr member = q * ctx.int_val(axes.k);
  z3::expr definition = r >= 0 && r < ctx.int_val(size);
  for (size_t j = 0; j < axes.index.size(); ++j) {
    z3::expr c = ctx.int_const(absl::StrCat(prefix, "c_", axes.index[j]).c_str());
    definition = definition && c >= 0 && c < ctx.int_val(axes.size[j]);
    member = member + c * ctx.int_val(axes.stride[j]);
    coords[axes.index[j]] = c;
  }
  definitions.push_back(definition && l == member * ctx.int_val(size) + r);
  return r;
}

// --- Forward shape propagation: the interpreter's preconditions, on shapes. ---

absl::Status CheckDim(int64_t dim, const char* attribute, const std::vector<int64_t>& shape) {
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) {
    return absl::InvalidArgumentError(absl::StrCat(attribute, " ", dim,
                                                   " is out of range for local shape ",
                                                   ShapeString(shape)));
  }
  return absl::OkStatus();
}

absl::Status CheckDivisible(int64_t dim, int64_t k, const char* attribute,
                            const std::vector<int64_t>& shape) {
  if (shape[dim] % k != 0) {
    return absl::InvalidArgumentError(absl::StrCat(attribute, " ", dim, ": size ", shape[dim],
                                                   " of local shape ", ShapeString(shape),
                                                   " is not divisible by the group size ", k));
  }
  return absl::OkStatus();
}

int64_t Volume(const std::vector<int64_t>& shape) {
  int64_t v = 1;
  for (int64_t e : shape) v *= e;
  return v;
}

// The interpreter's execution rule for all_to_all_v (ExecuteCollective), on shapes: every
// transfer names devices in range, has boxes of the buffers' rank inside the input (`in`) and
// the output (op.out_shape), and every element of every device's output is written exactly
// once. "Exactly once" is checked as: the boxes written into one device are pairwise disjoint
// and their volumes sum to the output's element count — equivalent to the interpreter's
// per-element bitmap, without allocating devices × elements flags for large buffers. A
// property of the op alone; no typing rule is consulted.
absl::Status CheckAllToAllVExecutes(const Mesh& mesh, const Collective& op,
                                    const std::vector<int64_t>& in) {
  const int64_t n = mesh.num_devices();
  const size_t rank = op.out_shape.size();
  for (int64_t e : op.out_shape) {
    if (e < 0) return absl::InvalidArgumentError("out_shape has a negative extent");
  }
  const int64_t out_elements = Volume(op.out_shape);
  std::vector<std::vector<const Transfer*>> by_target(n);
  std::vector<int64_t> written(n, 0);
  for (const Transfer& t : op.transfers) {
    std::string where = absl::StrCat("transfer ", t.source, " -> ", t.target);
    if (t.source < 0 || t.source >= n || t.target < 0 || t.target >= n) {
      return absl::InvalidArgumentError(absl::StrCat(where, " names a device out of range"));
    }
    if (t.shape.size() != rank || t.source_offset.size() != rank ||
        t.target_offset.size() != rank || in.size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": rank mismatch"));
    }
    for (size_t i = 0; i < rank; ++i) {
      if (t.shape[i] < 0 || t.source_offset[i] < 0 || t.target_offset[i] < 0 ||
          t.source_offset[i] + t.shape[i] > in[i] ||
          t.target_offset[i] + t.shape[i] > op.out_shape[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": box leaves a buffer in dimension ", i));
      }
    }
    const int64_t volume = Volume(t.shape);
    if (volume == 0) continue;  // Writes nothing.
    for (const Transfer* other : by_target[t.target]) {
      bool overlap = true;
      for (size_t i = 0; i < rank && overlap; ++i) {
        overlap = t.target_offset[i] < other->target_offset[i] + other->shape[i] &&
                  other->target_offset[i] < t.target_offset[i] + t.shape[i];
      }
      if (overlap) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": writes an element of device ", t.target, " twice"));
      }
    }
    by_target[t.target].push_back(&t);
    written[t.target] += volume;
  }
  for (int64_t d = 0; d < n; ++d) {
    if (written[d] != out_elements) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", d, "'s output is not completely written"));
    }
  }
  return absl::OkStatus();
}

// The local shape after `op` on buffers of shape `in`, or why `op` cannot execute.
absl::StatusOr<std::vector<int64_t>> Propagate(const Mesh& mesh, const Collective& op,
                                               std::vector<int64_t> shape) {
  if (absl::Status s = CheckCollectiveShape(mesh, op); !s.ok()) return s;
  auto axes_k = [&]() { return mesh.GroupSize(op.mesh_axes); };
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
    case CollectiveKind::kReduceScatter: {
      const char* attr = op.kind == CollectiveKind::kAllSlice ? "slice_axis" : "scatter_axis";
      if (absl::Status s = CheckDim(op.dim, attr, shape); !s.ok()) return s;
      if (absl::Status s = CheckDivisible(op.dim, axes_k(), attr, shape); !s.ok()) return s;
      shape[op.dim] /= axes_k();
      return shape;
    }
    case CollectiveKind::kAllGather: {
      if (absl::Status s = CheckDim(op.dim, "gather_axis", shape); !s.ok()) return s;
      if (shape[op.dim] > (int64_t{1} << 40) / axes_k()) {
        return absl::InvalidArgumentError("all_gather result too large");
      }
      shape[op.dim] *= axes_k();
      return shape;
    }
    case CollectiveKind::kAllToAll: {
      if (absl::Status s = CheckDim(op.dim, "concat_axis", shape); !s.ok()) return s;
      if (absl::Status s = CheckDim(op.split_dim, "split_axis", shape); !s.ok()) return s;
      if (absl::Status s = CheckDivisible(op.split_dim, axes_k(), "split_axis", shape); !s.ok()) {
        return s;
      }
      shape[op.split_dim] /= axes_k();
      shape[op.dim] *= axes_k();
      return shape;
    }
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kCollectivePermute:
      return shape;
    case CollectiveKind::kAllToAllV:
      if (absl::Status s = CheckAllToAllVExecutes(mesh, op, shape); !s.ok()) return s;
      return op.out_shape;
    default:
      break;
  }
  return absl::UnimplementedError(absl::StrCat("the certificate does not model ",
                                               Absl(CollectiveName(op.kind)), " yet"));
}

// --- Classes of devices: all_to_all_v transfers and permute sources, affine per class. ---
//
// Both ops are given as tables over devices; the certificate encodes the tables per *class*
// of devices instead of per entry. A device d has a *row*: a list of field vectors. For an
// all_to_all_v (TransferClasses), the transfers written into d with non-empty boxes, sorted
// by target offset (lexicographically; the offsets are distinct because Propagate checked
// that the boxes are disjoint), each as its fields (target_offset_i, shape_i,
// source_offset_i, and the source device's coordinate over each axis). For a permute
// (PermuteClasses), one entry: the coordinates of the device d reads from. A *class* is a
// product set of devices — per mesh axis either every coordinate or one fixed coordinate —
// whose rows have one length N and whose entries are affine in the coordinates: for every
// position p < N and field f there are integers α, β_a with
//     row(d)[p][f] = α_{p,f} + Σ_a β_{p,f,a}·c_a(d)    for every device d of the class.
// FitClass computes α, β from the class's first device and its neighbours one step along
// each free axis, then checks the equation concretely for every device, position and field
// (a failed check means "not a class", never a different encoding). Every device belongs to
// exactly one class (PartitionDevices splits the mesh into slabs until every part fits; a
// single device always fits), so for every coordinate vector c in the mesh, the class
// encoding instantiated at c is, literally, the per-entry encoding of the device with
// coordinates c. See StepBack.

// The fields of a transfer, in the order above.
std::vector<int64_t> TransferFields(const Mesh& mesh, const Transfer& x) {
  std::vector<int64_t> f;
  f.insert(f.end(), x.target_offset.begin(), x.target_offset.end());
  f.insert(f.end(), x.shape.begin(), x.shape.end());
  f.insert(f.end(), x.source_offset.begin(), x.source_offset.end());
  std::vector<int64_t> source = mesh.Coordinates(x.source);
  f.insert(f.end(), source.begin(), source.end());
  return f;
}

struct AffineField {
  int64_t base = 0;            // α: the value at coordinates 0.
  std::vector<int64_t> coef;   // β_a per mesh axis (0 on fixed axes).
};

struct DeviceClass {
  std::vector<int64_t> fixed;                    // Per axis: -1 = every coordinate, else it.
  std::vector<std::vector<AffineField>> fields;  // [position][field].
};

// rows[d]: device d's row, as field vectors.
using Rows = std::vector<std::vector<std::vector<int64_t>>>;

// The devices of the product set `fixed` in increasing order, so the first one has its free
// coordinates at 0.
std::vector<int64_t> ClassDevices(const Mesh& mesh, const std::vector<int64_t>& fixed) {
  const int n_axes = mesh.num_axes();
  std::vector<int64_t> c(n_axes);
  for (int a = 0; a < n_axes; ++a) c[a] = std::max<int64_t>(fixed[a], 0);
  std::vector<int64_t> devices;
  while (true) {
    devices.push_back(mesh.DeviceId(c));
    int a = n_axes - 1;  // Odometer over the free axes, last axis fastest (row-major).
    while (a >= 0 && (fixed[a] >= 0 || c[a] + 1 == mesh.axes()[a].size)) {
      if (fixed[a] < 0) c[a] = 0;
      --a;
    }
    if (a < 0) return devices;
    ++c[a];
  }
}

// The affine form of the rows over the product set `fixed`, or nullopt if there is none
// (rows of different lengths, or some field not affine in the coordinates).
std::optional<DeviceClass> FitClass(const Mesh& mesh, const Rows& rows,
                                    const std::vector<int64_t>& fixed) {
  const int n_axes = mesh.num_axes();
  const std::vector<int64_t> devices = ClassDevices(mesh, fixed);
  const int64_t first = devices.front();
  const std::vector<int64_t> c0 = mesh.Coordinates(first);
  const size_t n = rows[first].size();
  for (int64_t d : devices) {
    if (rows[d].size() != n) return std::nullopt;
  }
  DeviceClass cls;
  cls.fixed = fixed;
  cls.fields.resize(n);
  for (size_t p = 0; p < n; ++p) {
    const std::vector<int64_t>& at0 = rows[first][p];
    for (size_t f = 0; f < at0.size(); ++f) {
      AffineField field;
      field.coef.assign(n_axes, 0);
      field.base = at0[f];
      for (int a = 0; a < n_axes; ++a) {
        if (fixed[a] >= 0) continue;
        if (mesh.axes()[a].size > 1) {
          std::vector<int64_t> c1 = c0;
          c1[a] += 1;
          field.coef[a] = rows[mesh.DeviceId(c1)][p][f] - at0[f];
        }
        field.base -= field.coef[a] * c0[a];
      }
      cls.fields[p].push_back(std::move(field));
    }
  }
  // The check that makes the class exact: every device, position and field.
  for (int64_t d : devices) {
    const std::vector<int64_t> c = mesh.Coordinates(d);
    for (size_t p = 0; p < n; ++p) {
      for (size_t f = 0; f < rows[d][p].size(); ++f) {
        const AffineField& field = cls.fields[p][f];
        int64_t value = field.base;
        for (int a = 0; a < n_axes; ++a) {
          int64_t term = 0;
          if (__builtin_mul_overflow(field.coef[a], c[a], &term) ||
              __builtin_add_overflow(value, term, &value)) {
            return std::nullopt;  // Not representable: not a class (never a wrong one).
          }
        }
        if (value != rows[d][p][f]) return std::nullopt;
      }
    }
  }
  return cls;
}

// Splits the product set `fixed` into classes, appending them to `out`: the whole set if it
// fits; else the slabs of the first free axis whose slabs all fit; else the slabs of the
// largest free axis, recursively. Terminates: a set without free axes of size > 1 is one
// device, which always fits.
void PartitionDevices(const Mesh& mesh, const Rows& rows, const std::vector<int64_t>& fixed,
                      std::vector<DeviceClass>& out) {
  if (std::optional<DeviceClass> cls = FitClass(mesh, rows, fixed)) {
    out.push_back(*std::move(cls));
    return;
  }
  int largest = -1;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const int64_t size = mesh.axes()[a].size;
    if (fixed[a] >= 0 || size <= 1) continue;
    if (largest < 0 || size > mesh.axes()[largest].size) largest = a;
    std::vector<DeviceClass> slabs;
    for (int64_t v = 0; v < size; ++v) {
      std::vector<int64_t> slab = fixed;
      slab[a] = v;
      std::optional<DeviceClass> cls = FitClass(mesh, rows, slab);
      if (!cls) break;
      slabs.push_back(*std::move(cls));
    }
    if (static_cast<int64_t>(slabs.size()) == size) {
      for (DeviceClass& cls : slabs) out.push_back(std::move(cls));
      return;
    }
  }
  RESHARD_CHECK(largest >= 0) << "a single device always fits";
  for (int64_t v = 0; v < mesh.axes()[largest].size; ++v) {
    std::vector<int64_t> slab = fixed;
    slab[largest] = v;
    PartitionDevices(mesh, rows, slab, out);
  }
}

// The classes of an all_to_all_v whose execution Propagate has checked.
std::vector<DeviceClass> TransferClasses(const Mesh& mesh, const Collective& op) {
  std::vector<std::vector<const Transfer*>> by_target(mesh.num_devices());
  for (const Transfer& x : op.transfers) {
    if (Volume(x.shape) > 0) by_target[x.target].push_back(&x);
  }
  Rows rows(mesh.num_devices());
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    std::sort(by_target[d].begin(), by_target[d].end(),
              [](const Transfer* a, const Transfer* b) {
                return a->target_offset < b->target_offset;
              });
    for (const Transfer* x : by_target[d]) rows[d].push_back(TransferFields(mesh, *x));
  }
  std::vector<DeviceClass> classes;
  PartitionDevices(mesh, rows, std::vector<int64_t>(mesh.num_axes(), -1), classes);
  return classes;
}

// The permute's source function as rows of one entry: row(d) = {coordinates of src(d)},
// src(d) = s if [s, d] is a pair, else d (Propagate checked that targets are distinct).
std::vector<DeviceClass> PermuteClasses(const Mesh& mesh, const Collective& op) {
  std::vector<int64_t> src(mesh.num_devices());
  for (int64_t d = 0; d < mesh.num_devices(); ++d) src[d] = d;
  for (const auto& [s, t] : op.source_target_pairs) src[t] = s;
  Rows rows(mesh.num_devices());
  for (int64_t d = 0; d < mesh.num_devices(); ++d) rows[d] = {mesh.Coordinates(src[d])};
  std::vector<DeviceClass> classes;
  PartitionDevices(mesh, rows, std::vector<int64_t>(mesh.num_axes(), -1), classes);
  return classes;
}

// α + Σ_a β_a·c_a.
z3::expr Affine(const AffineField& field, const Exprs& coords) {
  z3::context& ctx = coords.front().ctx();
  std::optional<z3::expr> e;
  if (field.base != 0) e = ctx.int_val(field.base);
  for (size_t a = 0; a < coords.size(); ++a) {
    if (field.coef[a] == 0) continue;
    z3::expr term = field.coef[a] == 1 ? coords[a] : ctx.int_val(field.coef[a]) * coords[a];
    e = e ? *e + term : term;
  }
  return e ? *e : ctx.int_val(0);
}

// c ∈ class: c_a = the fixed coordinate, or 0 ≤ c_a < |a| on a free axis. Coordinate
// (in)equalities rather than a linear id: they propagate directly once the solver fixes c.
z3::expr ClassMember(const Mesh& mesh, const DeviceClass& cls, const Exprs& coords) {
  z3::context& ctx = coords.front().ctx();
  z3::expr member = ctx.bool_val(true);
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (cls.fixed[a] >= 0) {
      member = member && coords[a] == ctx.int_val(cls.fixed[a]);
    } else {
      member = member && coords[a] >= 0 && coords[a] < ctx.int_val(mesh.axes()[a].size);
    }
  }
  return member;
}

// --- The backward walk. ---

struct Term {
  Exprs coords;  // One per mesh axis.
  Exprs local;   // One per dimension.
  // (coords, local) at each step boundary, from the target (first) back to the source.
  std::vector<std::pair<Exprs, Exprs>> path;
};

// Rewrites `terms` (values after `op`) into the terms they read before `op`.
// Steps that introduce variables (all_to_all_v) append their defining constraints to
// `definitions`, which the query assumes.
std::vector<Term> StepBack(const Mesh& mesh, z3::context& ctx, const Collective& op,
                           const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                           std::vector<Term> terms, std::vector<z3::expr>& definitions) {
  std::vector<Term> result;
  switch (op.kind) {
    case CollectiveKind::kAllSlice: {
      Axes axes = Resolve(mesh, op.mesh_axes);
      for (Term& t : terms) {
        z3::expr g = MixedRadix(ctx, t.coords, axes);
        t.local[op.dim] = g * ctx.int_val(out[op.dim]) + t.local[op.dim];
        result.push_back(std::move(t));
      }
      break;
    }
    case CollectiveKind::kAllGather: {
      Axes axes = Resolve(mesh, op.mesh_axes);
      z3::expr size = ctx.int_val(in[op.dim]);
      for (Term& t : terms) {
        t.local[op.dim] = SplitIndex(ctx, t.local[op.dim], in[op.dim], axes, t.coords,
                                     definitions);
        result.push_back(std::move(t));
      }
      break;
    }
    case CollectiveKind::kAllToAll: {
      // Pieces: the input split k ways along split_axis; the output concatenates the k pieces
      // it receives along concat_axis (also right when the two axes coincide).
      Axes axes = Resolve(mesh, op.mesh_axes);
      std::vector<int64_t> piece = in;
      piece[op.split_dim] /= axes.k;
      const int64_t i = op.dim, j = op.split_dim;
      for (Term& t : terms) {
        z3::expr g = MixedRadix(ctx, t.coords, axes);  // The receiver's index: which piece.
        // The sender, digits(l_i div piece_i), replaces the coordinates (after g is taken).
        t.local[i] = SplitIndex(ctx, t.local[i], piece[i], axes, t.coords, definitions);
        t.local[j] = g * ctx.int_val(piece[j]) + t.local[j];
        result.push_back(std::move(t));
      }
      break;
    }
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter: {
      Axes axes = Resolve(mesh, op.mesh_axes);
      for (Term& t : terms) {
        if (op.kind == CollectiveKind::kReduceScatter) {
          z3::expr g = MixedRadix(ctx, t.coords, axes);
          t.local[op.dim] = g * ctx.int_val(out[op.dim]) + t.local[op.dim];
        }
        for (int64_t m = 0; m < axes.k; ++m) {
          Term member = t;
          SetDigits(ctx, member.coords, axes, m);
          result.push_back(std::move(member));
        }
      }
      break;
    }
    case CollectiveKind::kCollectivePermute: {
      // src(d) = s if [s, d] is a pair, else d. Two exact encodings of the same function; the
      // smaller is used. By pairs: an ite chain on the linear id, per coordinate. By classes
      // (PermuteClasses: src's coordinates affine in d's on each class): an ite chain over the
      // classes' memberships, src = the class's affine form; a regular permute (e.g. one that
      // permutes axes) is one class and needs no case split (the chain over 256 pairs took
      // 1–4 s per bench-suite plan).
      Axes all = AllAxes(mesh);
      const std::vector<DeviceClass> classes = PermuteClasses(mesh, op);
      const bool by_class = classes.size() <= op.source_target_pairs.size();
      for (Term& t : terms) {
        Exprs source = t.coords;  // Devices that are no target keep their own buffer.
        if (by_class) {
          for (auto cls = classes.rbegin(); cls != classes.rend(); ++cls) {
            z3::expr member = ClassMember(mesh, *cls, t.coords);
            for (int a = 0; a < mesh.num_axes(); ++a) {
              source[a] = z3::ite(member, Affine(cls->fields[0][a], t.coords), source[a]);
            }
          }
        } else {
          z3::expr linear = MixedRadix(ctx, t.coords, all);
          for (auto it = op.source_target_pairs.rbegin(); it != op.source_target_pairs.rend();
               ++it) {
            z3::expr is_target = linear == ctx.int_val(it->second);
            std::vector<int64_t> s = mesh.Coordinates(it->first);
            for (int a = 0; a < mesh.num_axes(); ++a) {
              source[a] = z3::ite(is_target, ctx.int_val(s[a]), source[a]);
            }
          }
        }
        t.coords = std::move(source);
        result.push_back(std::move(t));
      }
      break;
    }
    case CollectiveKind::kAllToAllV: {
      // Propagate checked that the non-empty boxes written into each device tile its output
      // exactly, so for a device d and an in-range l exactly one transfer x has target d and
      // a box containing l; the element is read from x.source at l - target_offset +
      // source_offset. Encoded with fresh read-position variables r and definitions added to
      // the query's assumptions; the tiling makes r a function of (d, l), so the query is
      // equisatisfiable with the substituted one. The definitions are per class of target
      // devices (TransferClasses) and position p in the class's rows:
      //   (c ∈ class ∧ toff_p(c) ≤ l < toff_p(c) + shape_p(c))
      //       ⇒ (r_c = src_p(c) ∧ r_l = l − toff_p(c) + soff_p(c)),
      // every field affine in c with the fitted, concretely checked coefficients. For c the
      // coordinates of a device d of the class these are exactly the per-transfer definitions
      // (c = digits(x.target) ∧ l ∈ box_x) ⇒ r = read_x of d's transfers, and no other
      // class's definitions apply at c; so the conjunction is equivalent to the per-transfer
      // one (which is what an irregular op falls back to: one-device classes). Regular ops
      // (strategy direct) are one class: 64 definitions instead of 16384 for the 256-device
      // bench case (≈ 41 s per-transfer, see docs/proofs.md §7).
      const size_t rank = op.out_shape.size();
      const int n_axes = mesh.num_axes();
      const std::vector<DeviceClass> classes = TransferClasses(mesh, op);
      bool any_box = false;
      for (const DeviceClass& cls : classes) any_box = any_box || !cls.fields.empty();
      for (Term& t : terms) {
        if (!any_box) {  // Only when the output has no elements.
          result.push_back(std::move(t));
          continue;
        }
        const std::string prefix = absl::StrCat("v", definitions.size(), "_");
        Exprs coords, local;
        for (int a = 0; a < n_axes; ++a) {
          coords.push_back(
              ctx.int_const(absl::StrCat(prefix, "c_", mesh.axes()[a].name).c_str()));
        }
        for (size_t i = 0; i < rank; ++i) {
          local.push_back(ctx.int_const(absl::StrCat(prefix, "l_", i).c_str()));
        }
        auto affine = [&](const AffineField& field) { return Affine(field, t.coords); };
        for (const DeviceClass& cls : classes) {
          z3::expr member = ClassMember(mesh, cls, t.coords);
          for (const std::vector<AffineField>& x : cls.fields) {
            // Fields: target_offset[rank], shape[rank], source_offset[rank], source[n_axes].
            z3::expr inside = member;
            z3::expr reads = ctx.bool_val(true);
            for (size_t i = 0; i < rank; ++i) {
              z3::expr toff = affine(x[i]);
              inside = inside && t.local[i] >= toff && t.local[i] < toff + affine(x[rank + i]);
              reads = reads && local[i] == t.local[i] - toff + affine(x[2 * rank + i]);
            }
            for (int a = 0; a < n_axes; ++a) {
              reads = reads && coords[a] == affine(x[3 * rank + a]);
            }
            definitions.push_back(z3::implies(inside, reads));
          }
        }
        t.coords = std::move(coords);
        t.local = std::move(local);
        result.push_back(std::move(t));
      }
      break;
    }
    default:
      RESHARD_CHECK(false) << "Propagate admits only modelled kinds";
  }
  return result;
}

// Walks `steps` backwards from (coords, local) at the target. shapes[s] is the local shape
// before step s (shapes.size() == steps.size() + 1).
std::vector<Term> Walk(const Mesh& mesh, z3::context& ctx, const std::vector<Step>& steps,
                       const std::vector<std::vector<int64_t>>& shapes, Exprs coords,
                       Exprs local, std::vector<z3::expr>& definitions) {
  std::vector<Term> terms(1, Term{coords, local, {}});
  terms[0].path.emplace_back(coords, local);
  for (size_t s = steps.size(); s-- > 0;) {
    terms = StepBack(mesh, ctx, steps[s].op, shapes[s], shapes[s + 1], std::move(terms),
                     definitions);
    for (Term& t : terms) t.path.emplace_back(t.coords, t.local);
  }
  for (Term& t : terms) std::reverse(t.path.begin(), t.path.end());
  return terms;
}

// Block index · local size + local index, per dimension, for type `type` at `coords`.
Exprs GlobalIndex(const Mesh& mesh, z3::context& ctx, const DistType& type,
                  const std::vector<int64_t>& local_shape, const Exprs& coords,
                  const Exprs& local) {
  Exprs global;
  for (int i = 0; i < type.rank(); ++i) {
    z3::expr block = MixedRadix(ctx, coords, Resolve(mesh, type.dims[i].axes));
    global.push_back(block * ctx.int_val(local_shape[i]) + local[i]);
  }
  return global;
}

int64_t Eval(const z3::model& model, const z3::expr& e) {
  return model.eval(e, /*model_completion=*/true).get_numeral_int64();
}

std::vector<int64_t> Eval(const z3::model& model, const Exprs& exprs) {
  std::vector<int64_t> values;
  for (const z3::expr& e : exprs) values.push_back(Eval(model, e));
  return values;
}

std::string CoordinatesString(const Mesh& mesh, const std::vector<int64_t>& coords) {
  std::vector<std::string> parts;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    parts.push_back(absl::StrCat(mesh.axes()[a].name, "=", coords[a]));
  }
  return absl::StrJoin(parts, ",");
}

// The first step whose declared type disagrees with the data along `path` (device and local
// index at each boundary, evaluated) for an element whose true global index is `actual`.
std::pair<std::string, std::string> FirstDisagreement(
    const Mesh& mesh, const std::vector<Step>& steps,
    const std::vector<std::vector<int64_t>>& shapes,
    const std::vector<std::pair<int64_t, std::vector<int64_t>>>& path,
    const std::vector<int64_t>& actual) {
  for (size_t s = 0; s < steps.size(); ++s) {
    const DistType& declared = steps[s].type;
    const auto& [device, local] = path[s + 1];
    std::string why;
    if (!Validate(mesh, declared).ok()) {
      why = "is not valid on the mesh";
    } else if (LocalShape(mesh, declared) != shapes[s + 1]) {
      why = absl::StrCat("declares local shape ", ShapeString(LocalShape(mesh, declared)),
                         " but the buffers have ", ShapeString(shapes[s + 1]));
    } else {
      std::vector<int64_t> expected = BlockOffset(mesh, declared, device);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += local[i];
      if (expected != actual) {
        why = absl::StrCat("assigns device ", device, " local index ", ShapeString(local),
                           " global element ", ShapeString(expected), ", but it holds ",
                           ShapeString(actual));
      }
    }
    if (!why.empty()) {
      return {StepName(s, steps[s].op), absl::StrCat(ToString(declared), " ", why)};
    }
  }
  return {"none", "every declared type agrees along this path; the plan's result is not the "
                  "target"};
}

absl::Status CheckInputs(const Mesh& mesh, const DistType& source, const DistType& target) {
  if (mesh.num_axes() == 0) return absl::InvalidArgumentError("the mesh has no axes");
  if (absl::Status s = Validate(mesh, source); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid source: ", s.message()));
  }
  if (absl::Status s = Validate(mesh, target); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid target: ", s.message()));
  }
  if (source.element_type != target.element_type || source.rank() != target.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("source ", ToString(source), " and target ",
                                                   ToString(target),
                                                   " differ in element type or rank"));
  }
  for (int i = 0; i < source.rank(); ++i) {
    if (source.dims[i].size != target.dims[i].size) {
      return absl::InvalidArgumentError(absl::StrCat("source ", ToString(source), " and target ",
                                                     ToString(target), " differ in dimension ",
                                                     i, "'s global size"));
    }
  }
  for (const AxisName& axis : target.partial) {
    if (AxisUse(source, axis) != kPartial) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target ", ToString(target), " is partial over '", Absl(axis), "' but source ",
          ToString(source), " is not: no collective creates a pending sum"));
    }
  }
  return absl::OkStatus();
}

constexpr char kStatement[] =
    "for every device d and every local index l of the target, the element d holds at l after "
    "the plan is the target's global element BlockOffset(target, d) + l, and (for partial "
    "sources) the values of each target partial group sum every source summand exactly once";

}  // namespace

absl::StatusOr<PlanCertificate> CertifyPlan(const Mesh& mesh, const DistType& source,
                                            const DistType& target, const std::vector<Step>& steps,
                                            const ProveOptions& options) {
  if (HasSubAxes(mesh, source, steps) || HasSubAxes(mesh, target)) {
    // The encoding is over whole axes; the refinement numbers devices the same way, so the
    // certificate on it is the certificate of the plan (typesys/sub_axis.h).
    for (const DistType* type : {&source, &target}) {
      if (absl::Status s = Validate(mesh, *type); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(type == &source ? "invalid source: "
                                                                       : "invalid target: ",
                                                       s.message()));
      }
    }
    AxisList refs = SubAxisRefs(mesh, source, steps);
    AxisList more = SubAxisRefs(mesh, target);
    refs.insert(refs.end(), more.begin(), more.end());
    absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, refs);
    if (!r.ok()) return r.status();
    return CertifyPlan(r->refined(), r->Refine(source), r->Refine(target), r->Refine(steps),
                       options);
  }
  if (absl::Status s = CheckInputs(mesh, source, target); !s.ok()) return s;
  PlanCertificate cert;
  cert.obligation.name = kPlanCorrectnessObligation;
  cert.obligation.statement = kStatement;

  // Forward: the shapes the buffers really have.
  cert.local_shapes.push_back(LocalShape(mesh, source));
  for (size_t s = 0; s < steps.size(); ++s) {
    absl::StatusOr<std::vector<int64_t>> next = Propagate(mesh, steps[s].op,
                                                          cert.local_shapes.back());
    if (!next.ok()) {
      // A kind the certificate does not model is undecided (never proved), not an error of
      // the plan.
      const bool unmodelled = absl::IsUnimplemented(next.status());
      cert.obligation.status = unmodelled ? ObligationStatus::kUnknown : ObligationStatus::kError;
      cert.obligation.message =
          absl::StrCat(unmodelled ? "not decided: step " : "cannot execute: step ",
                       StepName(s, steps[s].op), ": ", next.status().message());
      return cert;
    }
    cert.local_shapes.push_back(*std::move(next));
  }
  const std::vector<int64_t>& final_shape = cert.local_shapes.back();
  const std::vector<int64_t> target_shape = LocalShape(mesh, target);
  if (final_shape != target_shape) {
    std::vector<std::pair<int64_t, std::vector<int64_t>>> path;
    cert.obligation.status = ObligationStatus::kRefuted;
    Counterexample cex;
    cex.text = absl::StrCat("every device ends with local shape ", ShapeString(final_shape),
                            ", but the target's local shape is ", ShapeString(target_shape));
    cex.fields = {{"kind", "local_shape"},
                  {"device", "0"},
                  {"coordinates", CoordinatesString(mesh, mesh.Coordinates(0))},
                  {"actual_local_shape", ShapeString(final_shape)},
                  {"expected_local_shape", ShapeString(target_shape)}};
    for (size_t s = 0; s < steps.size(); ++s) {
      const DistType& declared = steps[s].type;
      if (!Validate(mesh, declared).ok() ||
          LocalShape(mesh, declared) != cert.local_shapes[s + 1]) {
        cex.fields.emplace_back("first_disagreeing_step", StepName(s, steps[s].op));
        cex.fields.emplace_back("declared_type", ToString(declared));
        break;
      }
    }
    cert.obligation.counterexample = std::move(cex);
    return cert;
  }

  // Partial axes: Q kept (partial in both), R reduced (partial only in the source).
  AxisList source_partial = PartialInMeshOrder(mesh, source);
  std::vector<int> kept, all_partial;
  int64_t reduced_size = 1;
  for (const AxisName& axis : source_partial) {
    int a = mesh.AxisIndex(axis);
    all_partial.push_back(a);
    if (AxisUse(target, axis) == kPartial) {
      kept.push_back(a);
    } else {
      reduced_size *= mesh.axes()[a].size;
    }
  }
  Axes partial_axes = Resolve(mesh, source_partial);

  try {
    std::optional<z3::context> owned;
    z3::context& ctx = options.context != nullptr ? *options.context : owned.emplace();
    const int n_axes = mesh.num_axes();
    Exprs coords, local;
    std::vector<z3::expr> domain;
    for (int a = 0; a < n_axes; ++a) {
      coords.push_back(ctx.int_const(absl::StrCat("c_", mesh.axes()[a].name).c_str()));
      domain.push_back(coords[a] >= 0 && coords[a] < ctx.int_val(mesh.axes()[a].size));
    }
    for (int i = 0; i < target.rank(); ++i) {
      local.push_back(ctx.int_const(absl::StrCat("l_", i).c_str()));
      domain.push_back(local[i] >= 0 && local[i] < ctx.int_val(final_shape[i]));
    }

    // Count terms before building them: the walk multiplies by each reduction's group size.
    int64_t count = 1;
    for (const Step& step : steps) {
      if (step.op.kind == CollectiveKind::kAllReduce ||
          step.op.kind == CollectiveKind::kReduceScatter) {
        count *= mesh.GroupSize(step.op.mesh_axes);
        if (count > kMaxTerms) {
          cert.obligation.status = ObligationStatus::kError;
          cert.obligation.message = absl::StrCat(
              "the plan's reductions sum more than ", kMaxTerms,
              " terms per element; beyond the certificate's limit");
          return cert;
        }
      }
    }
    std::vector<Term> terms = Walk(mesh, ctx, steps, cert.local_shapes, coords, local, domain);
    cert.terms = static_cast<int64_t>(terms.size());

    // Violation 1: some term is not the target's element.
    Exprs expected = GlobalIndex(mesh, ctx, target, final_shape, coords, local);
    std::vector<Exprs> actual;
    z3::expr wrong_element = ctx.bool_val(false);
    for (const Term& t : terms) {
      actual.push_back(GlobalIndex(mesh, ctx, source, cert.local_shapes.front(), t.coords,
                                   t.local));
      for (int i = 0; i < target.rank(); ++i) {
        wrong_element = wrong_element || actual.back()[i] != expected[i];
      }
    }

    // Violation 2: a source summand counted twice in one target partial group — twice on
    // one device, or on two devices of the group (which differ only on kept axes). With the
    // term count equal to |R|, injectivity on the group's |Q|·|R| (device, term) pairs into
    // the |Q|·|R| summands is exactly "each summand once".
    auto summand = [&](const Term& t) { return MixedRadix(ctx, t.coords, partial_axes); };
    z3::expr twice_on_device = ctx.bool_val(false);
    if (terms.size() >= 2 && !all_partial.empty()) {
      z3::expr_vector summands(ctx);
      for (const Term& t : terms) summands.push_back(summand(t));
      twice_on_device = !z3::distinct(summands);
    }
    z3::expr twice_in_group = ctx.bool_val(false);
    Exprs other_coords = coords;
    std::vector<Term> other_terms;
    std::optional<z3::expr> shared;
    if (!kept.empty()) {
      z3::expr differs = ctx.bool_val(false);
      for (int a : kept) {
        other_coords[a] = ctx.int_const(absl::StrCat("c'_", mesh.axes()[a].name).c_str());
        domain.push_back(other_coords[a] >= 0 &&
                         other_coords[a] < ctx.int_val(mesh.axes()[a].size));
        differs = differs || other_coords[a] != coords[a];
      }
      other_terms = Walk(mesh, ctx, steps, cert.local_shapes, other_coords, local,
                         domain);
      shared = ctx.int_const("shared_summand");
      z3::expr in_mine = ctx.bool_val(false), in_other = ctx.bool_val(false);
      for (const Term& t : terms) in_mine = in_mine || *shared == summand(t);
      for (const Term& t : other_terms) in_other = in_other || *shared == summand(t);
      twice_in_group = differs && in_mine && in_other;
    }

    z3::expr violation = wrong_element || twice_on_device || twice_in_group;
    const bool count_ok = cert.terms == reduced_size;

    auto explain = [&](const z3::model& model) {
      Counterexample cex;
      std::vector<int64_t> c = Eval(model, coords);
      std::vector<int64_t> l = Eval(model, local);
      int64_t device = mesh.DeviceId(c);
      std::vector<int64_t> e = Eval(model, expected);
      std::vector<std::string> actual_text;
      int bad = -1;
      for (size_t t = 0; t < terms.size(); ++t) {
        std::vector<int64_t> a = Eval(model, actual[t]);
        actual_text.push_back(ShapeString(a));
        if (bad < 0 && a != e) bad = static_cast<int>(t);
      }
      cex.fields = {{"kind", bad >= 0 ? "wrong_element" : "summand_twice"},
                    {"device", absl::StrCat(device)},
                    {"coordinates", CoordinatesString(mesh, c)},
                    {"local_index", ShapeString(l)},
                    {"expected_global_index", ShapeString(e)},
                    {"actual_global_index", absl::StrJoin(actual_text, ";")}};
      if (bad >= 0) {
        std::vector<int64_t> a = Eval(model, actual[bad]);
        std::vector<std::pair<int64_t, std::vector<int64_t>>> path;
        for (const auto& [pc, pl] : terms[bad].path) {
          path.emplace_back(mesh.DeviceId(Eval(model, pc)), Eval(model, pl));
        }
        auto [step, why] = FirstDisagreement(mesh, steps, cert.local_shapes, path, a);
        cex.text = absl::StrCat("device ", device, " (", CoordinatesString(mesh, c),
                                ") at local index ", ShapeString(l), " should hold global element ",
                                ShapeString(e), " but ",
                                terms.size() == 1 ? "holds " : "sums a term from ",
                                ShapeString(a), " (source device ", path.front().first,
                                ", local index ", ShapeString(path.front().second), ")");
        cex.fields.emplace_back("first_disagreeing_step", step);
        cex.fields.emplace_back("declared_type", why);
      } else {
        std::vector<std::string> summands;
        for (const Term& t : terms) summands.push_back(absl::StrCat(Eval(model, summand(t))));
        cex.text = absl::StrCat("device ", device, " (", CoordinatesString(mesh, c),
                                ") at local index ", ShapeString(l),
                                " sums source summands [", absl::StrJoin(summands, ","), "]");
        if (shared && model.eval(twice_in_group, true).is_true()) {
          std::vector<int64_t> oc = Eval(model, other_coords);
          std::vector<std::string> other;
          for (const Term& t : other_terms) other.push_back(absl::StrCat(Eval(model, summand(t))));
          absl::StrAppend(&cex.text, " and device ", mesh.DeviceId(oc), " of the same target "
                          "partial group sums [", absl::StrJoin(other, ","), "]: summand ",
                          Eval(model, *shared), " is counted twice in the group");
          cex.fields.emplace_back("other_device", absl::StrCat(mesh.DeviceId(oc)));
        } else {
          absl::StrAppend(&cex.text, ": a summand is counted twice");
        }
        cex.fields.emplace_back("summands", absl::StrCat("[", absl::StrJoin(summands, ","), "]"));
      }
      if (!count_ok) {
        absl::StrAppend(&cex.text, "; also, each element sums ", cert.terms,
                        " terms where the reduced axes need ", reduced_size);
      }
      return cex;
    };
    cert.obligation = RefuteViolation(kPlanCorrectnessObligation, kStatement, violation, options,
                                      explain, domain);
    if (!count_ok && cert.obligation.status != ObligationStatus::kRefuted) {
      // Every element sums the wrong number of summands: wrong at every device and index.
      // (An unknown index query does not weaken this: the count is a concrete fact.)
      cert.obligation.status = ObligationStatus::kRefuted;
      cert.obligation.message.clear();
      Counterexample cex;
      cex.text = absl::StrCat(
          "each target element is a sum of ", cert.terms, " terms, but the source has ",
          reduced_size, " summands per target partial group member (product of the sizes of "
                        "the partial axes the target reduces); at device 0, local index 0 "
                        "the value misses or repeats summands");
      std::vector<int64_t> zero(target.rank(), 0);
      std::vector<int64_t> e = BlockOffset(mesh, target, 0);
      cex.fields = {{"kind", "term_count"},
                    {"device", "0"},
                    {"coordinates", CoordinatesString(mesh, mesh.Coordinates(0))},
                    {"local_index", ShapeString(zero)},
                    {"expected_global_index", ShapeString(e)},
                    {"terms", absl::StrCat(cert.terms)},
                    {"expected_terms", absl::StrCat(reduced_size)}};
      cert.obligation.counterexample = std::move(cex);
    }
  } catch (const z3::exception& e) {
    cert.obligation.status = ObligationStatus::kError;
    cert.obligation.message = absl::StrCat("Z3 error: ", e.msg());
  }
  return cert;
}

}  // namespace reshard
