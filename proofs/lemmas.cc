// Typing-simulation lemmas (see lemmas.h and docs/proofs.md for the statements).
//
// Encoding choices. Sizes, indices and blocks are unbounded mathematical integers (Z3 Int),
// so a proved lemma holds for all sizes, not just those below a bit width. Integer division
// and remainder by a *symbolic* size are written through their defining relation
// (l = p·L + r ∧ 0 ≤ r < L, which for L ≥ 1 determines p = l div L and r = l mod L) rather
// than Z3's div/mod, which keeps the queries polynomial. Each lemma splits into an index
// equality (a polynomial identity after substituting the divisibility relation) and range
// facts (monotonicity of products), which Z3's nonlinear arithmetic (nlsat) decides.
// A dimension's axes are split as B ++ A, where A are the collective's axes (as one combined
// group axis of size k) and B the untouched prefix with block index b; the mixed-radix
// lemmas justify treating A (and B) as a single axis.
#include "proofs/lemmas.h"

#include <z3++.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"

namespace reshard {
namespace {

struct LemmaSpec {
  const char* name;
  const char* statement;
  // Builds (claim, assumptions) in `ctx`.
  std::function<std::pair<z3::expr, std::vector<z3::expr>>(z3::context&)> build;
};

z3::expr Int(z3::context& ctx, const char* name) { return ctx.int_const(name); }

// 0 <= x < bound
z3::expr InRange(const z3::expr& x, const z3::expr& bound) { return x >= 0 && x < bound; }

std::vector<LemmaSpec> Lemmas() {
  std::vector<LemmaSpec> lemmas;

  // --- Mixed radix: why a list of axes can be treated as one axis. ---
  lemmas.push_back(
      {"lemma.mixed_radix.concat",
       "MR(B++A)(c) = MR(B)(c)·∏|A| + MR(A)(c) for B=(u1,u2), A=(v1,v2) of symbolic sizes "
       "(Horner form of the block index; a suffix A of a dimension's axes refines each block "
       "of B into ∏|A| blocks in group order)",
       [](z3::context& ctx) {
         z3::expr u1 = Int(ctx, "u1"), u2 = Int(ctx, "u2"), v1 = Int(ctx, "v1"),
                  v2 = Int(ctx, "v2");
         z3::expr s2 = Int(ctx, "s2"), t1 = Int(ctx, "t1"), t2 = Int(ctx, "t2");
         z3::expr whole = ((u1 * s2 + u2) * t1 + v1) * t2 + v2;
         z3::expr split = (u1 * s2 + u2) * (t1 * t2) + (v1 * t2 + v2);
         return std::pair{whole == split, std::vector<z3::expr>{}};
       }});
  lemmas.push_back(
      {"lemma.mixed_radix.range",
       "0 <= c_v1 < t1 ∧ 0 <= c_v2 < t2 ⇒ 0 <= c_v1·t2 + c_v2 < t1·t2 (a group index is a "
       "member of the group)",
       [](z3::context& ctx) {
         z3::expr v1 = Int(ctx, "v1"), v2 = Int(ctx, "v2"), t1 = Int(ctx, "t1"),
                  t2 = Int(ctx, "t2");
         z3::expr g = v1 * t2 + v2;
         return std::pair{InRange(g, t1 * t2),
                          std::vector<z3::expr>{t1 >= 1, t2 >= 1, InRange(v1, t1),
                                                InRange(v2, t2)}};
       }});
  lemmas.push_back(
      {"lemma.mixed_radix.digits",
       "0 <= p < t1·t2, p = v1·t2 + v2, 0 <= v2 < t2 ⇒ 0 <= v1 < t1 (the digits of a member "
       "index are coordinates; with mixed_radix.range, member index ↔ coordinates over A is a "
       "bijection, so all_gather/all_to_all read existing members and all_reduce sums each "
       "member once)",
       [](z3::context& ctx) {
         z3::expr p = Int(ctx, "p"), v1 = Int(ctx, "v1"), v2 = Int(ctx, "v2"),
                  t1 = Int(ctx, "t1"), t2 = Int(ctx, "t2");
         return std::pair{InRange(v1, t1),
                          std::vector<z3::expr>{t1 >= 1, t2 >= 1, InRange(p, t1 * t2),
                                                p == v1 * t2 + v2, InRange(v2, t2)}};
       }});

  // --- all_slice(A, i): dim i: B -> B++A, local L = k·L'. out(d,l) <- in(d, g·L' + l). ---
  lemmas.push_back(
      {"lemma.all_slice.index",
       "L = k·L' ∧ 0 <= g < k ∧ 0 <= l < L' ⇒ b·L + (g·L' + l) = (b·k + g)·L' + l: the element "
       "read is the one type B++A assigns (block b·k+g over B++A)",
       [](z3::context& ctx) {
         z3::expr b = Int(ctx, "b"), k = Int(ctx, "k"), g = Int(ctx, "g"), l = Int(ctx, "l"),
                  L = Int(ctx, "L"), Lp = Int(ctx, "Lp");
         return std::pair{b * L + (g * Lp + l) == (b * k + g) * Lp + l,
                          std::vector<z3::expr>{k >= 1, Lp >= 1, L == k * Lp, InRange(g, k),
                                                InRange(l, Lp), b >= 0}};
       }});
  lemmas.push_back(
      {"lemma.all_slice.range",
       "L = k·L' ∧ 0 <= g < k ∧ 0 <= l < L' ⇒ 0 <= g·L' + l < L (the read is inside the input "
       "buffer)",
       [](z3::context& ctx) {
         z3::expr k = Int(ctx, "k"), g = Int(ctx, "g"), l = Int(ctx, "l"), L = Int(ctx, "L"),
                  Lp = Int(ctx, "Lp");
         return std::pair{InRange(g * Lp + l, L),
                          std::vector<z3::expr>{k >= 1, Lp >= 1, L == k * Lp, InRange(g, k),
                                                InRange(l, Lp)}};
       }});

  // --- all_gather(A, i): dim i: B++A -> B, local L -> k·L. out(d,l) <- in(member p, r),
  //     l = p·L + r, 0 <= r < L. Member p's block over B++A is b·k + p. ---
  lemmas.push_back(
      {"lemma.all_gather.index",
       "(b·k + p)·L + r = b·(k·L) + (p·L + r) for all integers, i.e. with l = p·L + r "
       "(p = l div L, r = l mod L): (b·k + p)·L + r = b·(k·L) + l — member p at local r holds "
       "the element type B assigns to (d, l)",
       [](z3::context& ctx) {
         z3::expr b = Int(ctx, "b"), k = Int(ctx, "k"), p = Int(ctx, "p"), r = Int(ctx, "r"),
                  l = Int(ctx, "l"), L = Int(ctx, "L");
         // A ring identity once l = p·L + r is substituted: it holds for all integers.
         // Stated with the substitution done (Z3's nlsat times out when it must find the
         // substitution itself among range hypotheses).
         (void)l;
         return std::pair{(b * k + p) * L + r == b * (k * L) + (p * L + r),
                          std::vector<z3::expr>{}};
       }});
  lemmas.push_back(
      {"lemma.all_gather.range",
       "0 <= l < k·L ∧ l = p·L + r ∧ 0 <= r < L ⇒ 0 <= p < k (the member read exists)",
       [](z3::context& ctx) {
         z3::expr k = Int(ctx, "k"), p = Int(ctx, "p"), r = Int(ctx, "r"), l = Int(ctx, "l"),
                  L = Int(ctx, "L");
         return std::pair{InRange(p, k),
                          std::vector<z3::expr>{k >= 1, L >= 1, InRange(l, k * L),
                                                l == p * L + r, InRange(r, L)}};
       }});

  // --- all_to_all(A, concat i, split j): dim i: B++A -> B (L_i -> k·L_i); dim j: C -> C++A
  //     (L_j = k·L'_j -> L'_j). out(d, l) <- in(member p, (r_i, g·L'_j + l_j)). ---
  lemmas.push_back(
      {"lemma.all_to_all.index",
       "with l_i = p·L_i + r_i and L_j = k·L'_j substituted: (b·k + p)·L_i + r_i = "
       "b·(k·L_i) + l_i ∧ c·L_j + (g·L'_j + l_j) = (c·k + g)·L'_j + l_j for all integers: in "
       "both dimensions the element read is "
       "the one the result type assigns (concat dim block b over B, split dim block c·k+g over "
       "C++A; member p has d's block c over C since it differs from d only on A)",
       [](z3::context& ctx) {
         z3::expr b = Int(ctx, "b"), c = Int(ctx, "c"), k = Int(ctx, "k"), p = Int(ctx, "p"),
                  g = Int(ctx, "g"), ri = Int(ctx, "r_i"), li = Int(ctx, "l_i"),
                  lj = Int(ctx, "l_j"), Li = Int(ctx, "L_i"), Lj = Int(ctx, "L_j"),
                  Ljp = Int(ctx, "Lp_j");
         // Ring identities after substituting l_i = p·L_i + r_i and L_j = k·L'_j (ranges:
         // all_to_all.range).
         (void)li;
         (void)Lj;
         z3::expr claim = (b * k + p) * Li + ri == b * (k * Li) + (p * Li + ri) &&
                          c * (k * Ljp) + (g * Ljp + lj) == (c * k + g) * Ljp + lj;
         return std::pair{claim, std::vector<z3::expr>{}};
       }});
  lemmas.push_back(
      {"lemma.all_to_all.range",
       "the same hypotheses ⇒ 0 <= p < k ∧ 0 <= g·L'_j + l_j < L_j (the sender exists and the "
       "piece read is inside its buffer)",
       [](z3::context& ctx) {
         z3::expr k = Int(ctx, "k"), p = Int(ctx, "p"), g = Int(ctx, "g"), ri = Int(ctx, "r_i"),
                  li = Int(ctx, "l_i"), lj = Int(ctx, "l_j"), Li = Int(ctx, "L_i"),
                  Lj = Int(ctx, "L_j"), Ljp = Int(ctx, "Lp_j");
         return std::pair{InRange(p, k) && InRange(g * Ljp + lj, Lj),
                          std::vector<z3::expr>{k >= 1, Li >= 1, Ljp >= 1, Lj == k * Ljp,
                                                InRange(g, k), InRange(li, k * Li),
                                                li == p * Li + ri, InRange(ri, Li),
                                                InRange(lj, Ljp)}};
       }});

  // --- all_reduce(A): partial P -> P \ A. out(d,l) = Σ_{m<k} in(member m, l). ---
  lemmas.push_back(
      {"lemma.all_reduce.index",
       "A ⊆ partial(τ) is disjoint from every dimension's axes, so member m (d with coordinates "
       "over A := digits(m)) has d's block in every dimension: block_i(m)·L_i + l_i = "
       "block_i(d)·L_i + l_i. Encoded for a dimension with axes (u1,u2) where member m and d "
       "agree on u1,u2 while their A-coordinates differ",
       [](z3::context& ctx) {
         z3::expr u1 = Int(ctx, "u1"), u2 = Int(ctx, "u2"), s2 = Int(ctx, "s2"),
                  L = Int(ctx, "L"), l = Int(ctx, "l"), a_d = Int(ctx, "a_d"),
                  a_m = Int(ctx, "a_m");
         // Block over (u1,u2) does not mention the A-coordinate a_*: equal for d and m.
         z3::expr block_d = u1 * s2 + u2 + 0 * a_d;
         z3::expr block_m = u1 * s2 + u2 + 0 * a_m;
         return std::pair{block_m * L + l == block_d * L + l, std::vector<z3::expr>{}};
       }});
  lemmas.push_back(
      {"lemma.all_reduce.summands",
       "members m, m' < k = t1·t2 with digits (v1,v2), (v1',v2'): m ≠ m' ⇒ (v1,v2) ≠ (v1',v2'); "
       "with mixed_radix.digits/range the k terms of Σ_m carry the k distinct A-coordinates "
       "of the summands, so the result holds, for its own coordinates over P \\ A, the sum of "
       "every source summand exactly once: the value of type partial(P \\ A)",
       [](z3::context& ctx) {
         z3::expr m = Int(ctx, "m"), mp = Int(ctx, "mp"), v1 = Int(ctx, "v1"),
                  v2 = Int(ctx, "v2"), w1 = Int(ctx, "w1"), w2 = Int(ctx, "w2"),
                  t1 = Int(ctx, "t1"), t2 = Int(ctx, "t2");
         z3::expr claim = z3::implies(m != mp, v1 != w1 || v2 != w2);
         return std::pair{claim, std::vector<z3::expr>{
                                     t1 >= 1, t2 >= 1, InRange(m, t1 * t2), InRange(mp, t1 * t2),
                                     m == v1 * t2 + v2, InRange(v2, t2), mp == w1 * t2 + w2,
                                     InRange(w2, t2)}};
       }});

  // --- reduce_scatter(A, i) = all_reduce(A) then all_slice(A, i) on the sum. ---
  lemmas.push_back(
      {"lemma.reduce_scatter.index",
       "L = k·L' ∧ 0 <= g < k ∧ 0 <= l < L' ⇒ for every member m: block_i(m) = b and "
       "b·L + (g·L' + l) = (b·k + g)·L' + l ∧ 0 <= g·L' + l < L (each term is the element "
       "B++A assigns; the summands are those of all_reduce.summands)",
       [](z3::context& ctx) {
         z3::expr b = Int(ctx, "b"), k = Int(ctx, "k"), g = Int(ctx, "g"), l = Int(ctx, "l"),
                  L = Int(ctx, "L"), Lp = Int(ctx, "Lp");
         z3::expr claim = b * L + (g * Lp + l) == (b * k + g) * Lp + l && InRange(g * Lp + l, L);
         return std::pair{claim, std::vector<z3::expr>{k >= 1, Lp >= 1, L == k * Lp,
                                                       InRange(g, k), InRange(l, Lp), b >= 0}};
       }});

  // --- collective_permute: the rule (CheckPermute) demands equal blocks and summands. ---
  lemmas.push_back(
      {"lemma.collective_permute.index",
       "BlockIndex(in, s) = BlockIndex(out, t) ∧ L_in = L_out = L ⇒ b_in(s)·L + l = "
       "b_out(t)·L + l for every 0 <= l < L: target t receives exactly out's block (and a "
       "device that is no target, with BlockIndex(in, t) = BlockIndex(out, t), keeps it)",
       [](z3::context& ctx) {
         z3::expr bs = Int(ctx, "b_in_s"), bt = Int(ctx, "b_out_t"), L = Int(ctx, "L"),
                  l = Int(ctx, "l");
         return std::pair{bs * L + l == bt * L + l,
                          std::vector<z3::expr>{bs == bt, L >= 1, InRange(l, L)}};
       }});

  // --- Sub-axes (typesys/sub_axis.h): refining axis x of size n = a·b·c into the pieces
  //     x:(1)a, x:(a)b, x:(ab)c keeps device numbering. A piece x:(m)k's coordinate is
  //     (x div s) mod k with stride s = n/(m·k) (Mesh::Resolve). Let d1, d2, d3 be the digits
  //     of x in radix (a, b, c): x = (d1·b + d2)·c + d3, 0 <= d2 < b, 0 <= d3 < c (they exist
  //     by Euclidean division). Three obligations, glued on paper (docs/proofs.md §2):
  //     sub_axis.digits puts d1 in range; with division_unique (and mixed_radix.range for
  //     0 <= d2·c + d3 < b·c) the ring identities of sub_axis.refinement show Resolve's three
  //     coordinates are d1, d2, d3 and that the mixed-radix index over the pieces is x's.
  //     The single-query form (digits defined by six div/mod relations, claim "recombines to
  //     x") was unknown at 10 s and at 30 s: nlsat does not find the uniqueness argument. ---
  lemmas.push_back(
      {"lemma.sub_axis.digits",
       "a, b, c >= 1 ∧ 0 <= x < a·b·c ∧ x = (d1·b + d2)·c + d3 ∧ 0 <= d2 < b ∧ 0 <= d3 < c ⇒ "
       "0 <= d1 < a (the top digit of a coordinate of x is a coordinate of x:(1)a)",
       [](z3::context& ctx) {
         z3::expr a = Int(ctx, "a"), b = Int(ctx, "b"), c = Int(ctx, "c"), x = Int(ctx, "x"),
                  d1 = Int(ctx, "d1"), d2 = Int(ctx, "d2"), d3 = Int(ctx, "d3");
         return std::pair{InRange(d1, a),
                          std::vector<z3::expr>{a >= 1, b >= 1, c >= 1, InRange(x, a * b * c),
                                                x == (d1 * b + d2) * c + d3, InRange(d2, b),
                                                InRange(d3, c)}};
       }});
  lemmas.push_back(
      {"lemma.sub_axis.division_unique",
       "m >= 1 ∧ y = q·m + r ∧ 0 <= r < m ∧ y = q'·m + r' ∧ 0 <= r' < m ⇒ q = q' ∧ r = r' "
       "(quotient and remainder are determined by their defining relation, so exhibiting one "
       "pair computes y div m and y mod m)",
       [](z3::context& ctx) {
         z3::expr m = Int(ctx, "m"), y = Int(ctx, "y"), q = Int(ctx, "q"), r = Int(ctx, "r"),
                  qp = Int(ctx, "qp"), rp = Int(ctx, "rp");
         return std::pair{q == qp && r == rp,
                          std::vector<z3::expr>{m >= 1, y == q * m + r, InRange(r, m),
                                                y == qp * m + rp, InRange(rp, m)}};
       }});
  lemmas.push_back(
      {"lemma.sub_axis.refinement",
       "with x = (d1·b + d2)·c + d3 substituted: x = d1·(b·c) + (d2·c + d3) ∧ "
       "(((u·a + d1)·b + d2)·c + d3)·s + v = (u·(a·b·c) + x)·s + v for all integers. With "
       "sub_axis.digits, division_unique and mixed_radix.range: Resolve's coordinates of "
       "x:(1)a, x:(a)b, x:(ab)c are (x div b·c) mod a = d1, (x div c) mod b = d2, x mod c = d3, "
       "and IndexOver over [.., x, ..] equals IndexOver over [.., x:(1)a, x:(a)b, x:(ab)c, ..] "
       "(u, v: the axes before and after x): a refinement numbers devices as the mesh does",
       [](z3::context& ctx) {
         z3::expr a = Int(ctx, "a"), b = Int(ctx, "b"), c = Int(ctx, "c"), u = Int(ctx, "u"),
                  v = Int(ctx, "v"), s = Int(ctx, "s"), d1 = Int(ctx, "d1"), d2 = Int(ctx, "d2"),
                  d3 = Int(ctx, "d3");
         // Ring identities once x is substituted, stated without hypotheses (as
         // all_gather.index): with the defining relation as a hypothesis nlsat timed out.
         const z3::expr x = (d1 * b + d2) * c + d3;
         z3::expr claim = x == d1 * (b * c) + (d2 * c + d3) &&
                          (((u * a + d1) * b + d2) * c + d3) * s + v ==
                              (u * (a * b * c) + x) * s + v;
         return std::pair{claim, std::vector<z3::expr>{}};
       }});
  return lemmas;
}

std::string Bytes(int64_t b) { return absl::StrCat(b, " B"); }

}  // namespace

std::vector<Obligation> ProveTypingLemmas(const ProveOptions& options) {
  std::vector<Obligation> out;
  for (const LemmaSpec& spec : Lemmas()) {
    try {
      z3::context ctx;
      auto [claim, assumptions] = spec.build(ctx);
      out.push_back(ProveClaim(spec.name, spec.statement, claim, options, {}, assumptions));
    } catch (const z3::exception& e) {
      Obligation o;
      o.name = spec.name;
      o.statement = spec.statement;
      o.status = ObligationStatus::kError;
      o.message = absl::StrCat("Z3 error: ", e.msg());
      out.push_back(std::move(o));
    }
  }
  return out;
}

absl::StatusOr<std::vector<Obligation>> SynthesizerObligations(
    const Plan& plan, const std::vector<std::vector<int64_t>>& local_shapes, bool memory_bounded,
    const ProveOptions& options) {
  if (local_shapes.size() != plan.steps.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", plan.steps.size() + 1,
                                                   " local shapes, got ", local_shapes.size()));
  }
  const Mesh& mesh = plan.mesh;
  const int64_t element_bytes = ElementBytes(plan.source.element_type);
  auto bytes_of = [&](const std::vector<int64_t>& shape) {
    int64_t n = element_bytes;
    for (int64_t s : shape) n *= s;
    return n;
  };
  std::vector<Obligation> out;
  try {
    std::optional<z3::context> owned;
    z3::context& ctx = options.context != nullptr ? *options.context : owned.emplace();

    // plan.ends_at_target
    {
      const std::vector<int64_t> target_shape = LocalShape(mesh, plan.target);
      const bool declared_ok = plan.result() == plan.target;
      z3::expr claim = ctx.bool_val(true);
      std::vector<z3::expr> facts;
      for (size_t i = 0; i < target_shape.size(); ++i) {
        z3::expr actual = ctx.int_const(absl::StrCat("final_local_", i).c_str());
        facts.push_back(actual == ctx.int_val(local_shapes.back()[i]));
        claim = claim && actual == ctx.int_val(target_shape[i]);
      }
      z3::expr declared = ctx.bool_const("declared_result_is_target");
      facts.push_back(declared == ctx.bool_val(declared_ok));
      claim = claim && declared;
      out.push_back(ProveClaim(
          "plan.ends_at_target",
          absl::StrCat("the last declared type is the target ", ToString(plan.target),
                       " and the buffers' actual final local shape is its local shape"),
          claim, options,
          [&](const z3::model&) {
            return Counterexample{
                absl::StrCat("the plan ends at ", ToString(plan.result()), " with local shape [",
                             absl::StrJoin(local_shapes.back(), ","), "]"),
                {{"declared_result", ToString(plan.result())}}};
          },
          facts));
    }

    // plan.memory_bound
    if (memory_bounded) {
      const int64_t bound =
          std::max(LocalBytes(mesh, plan.source), LocalBytes(mesh, plan.target));
      z3::expr bound_var = ctx.int_const("bound");
      std::vector<z3::expr> facts = {bound_var == ctx.int_val(bound)};
      z3::expr claim = ctx.bool_val(true);
      for (size_t s = 0; s < local_shapes.size(); ++s) {
        z3::expr b = ctx.int_const(absl::StrCat("local_bytes_", s).c_str());
        facts.push_back(b == ctx.int_val(bytes_of(local_shapes[s])));
        claim = claim && b <= bound_var;
      }
      out.push_back(ProveClaim(
          "plan.memory_bound",
          absl::StrCat("peak actual local bytes over the source and every step <= "
                       "max(source, target) local bytes = ",
                       Bytes(bound)),
          claim, options,
          [&](const z3::model&) {
            size_t worst = 0;
            for (size_t s = 0; s < local_shapes.size(); ++s) {
              if (bytes_of(local_shapes[s]) > bytes_of(local_shapes[worst])) worst = s;
            }
            return Counterexample{
                absl::StrCat("after step ", worst, " every device holds ",
                             Bytes(bytes_of(local_shapes[worst])), " > bound ", Bytes(bound)),
                {{"step", absl::StrCat(worst)},
                 {"local_bytes", absl::StrCat(bytes_of(local_shapes[worst]))},
                 {"bound", absl::StrCat(bound)}}};
          },
          facts));
    }

    // plan.bytes_at_least_lower_bound
    {
      const int64_t n = mesh.num_devices();
      const int64_t lower = LowerBoundBytesTotal(mesh, plan.source, plan.target);
      std::vector<z3::expr> facts;
      z3::expr total = ctx.int_val(0);
      for (size_t s = 0; s < plan.steps.size(); ++s) {
        const Collective& op = plan.steps[s].op;
        const int64_t b = bytes_of(local_shapes[s]);
        int64_t k = op.kind == CollectiveKind::kCollectivePermute ? 1
                                                                   : mesh.GroupSize(op.mesh_axes);
        int64_t received = 0;
        switch (op.kind) {
          case CollectiveKind::kAllGather:
            received = n * (k - 1) * b;
            break;
          case CollectiveKind::kAllToAll:
          case CollectiveKind::kReduceScatter:
            received = n * (k - 1) * (b / k);
            break;
          case CollectiveKind::kAllReduce:
            received = n * ((2 * (k - 1) * b + k - 1) / k);
            break;
          case CollectiveKind::kCollectivePermute:
            for (const auto& [source, target] : op.source_target_pairs) {
              if (source != target) received += b;
            }
            break;
          case CollectiveKind::kAllToAllV:
            // The boxes other devices send (local copies receive nothing), as the interpreter
            // counts them.
            for (const Transfer& t : op.transfers) {
              if (t.source != t.target) received += bytes_of(t.shape);
            }
            break;
          default:
            break;
        }
        z3::expr r = ctx.int_const(absl::StrCat("received_", s).c_str());
        facts.push_back(r == ctx.int_val(received));
        total = total + r;
      }
      z3::expr lb = ctx.int_const("lower_bound");
      facts.push_back(lb == ctx.int_val(lower));
      out.push_back(ProveClaim(
          "plan.bytes_at_least_lower_bound",
          absl::StrCat("total bytes received (from the actual buffer sizes) >= "
                       "lower_bound_bytes_total = ",
                       Bytes(lower)),
          total >= lb, options,
          [&](const z3::model& model) {
            return Counterexample{
                absl::StrCat("the plan receives ", model.eval(total, true).to_string(),
                             " bytes, below the lower bound ", Bytes(lower),
                             ": the bound or the byte accounting is wrong"),
                {{"bytes_received_total", model.eval(total, true).to_string()},
                 {"lower_bound_bytes_total", absl::StrCat(lower)}}};
          },
          facts));
    }
  } catch (const z3::exception& e) {
    Obligation o;
    o.name = "plan.synthesizer";
    o.statement = "the synthesizer's per-plan obligations";
    o.status = ObligationStatus::kError;
    o.message = absl::StrCat("Z3 error: ", e.msg());
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace reshard
