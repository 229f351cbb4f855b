// pure_move.h — internal to synth/: the exact solver `normal` uses for pure moves.
//
// A pure move (every atom splits a dimension of both types, no pending sum) keeps every
// device's block at the smallest size the mesh allows, so within the memory bound its plans
// are all_to_alls and permutes only. Where the model is uniform on the mesh and every atom
// (prime factor of an axis, or the axis itself without sub-axes) has the same size p, the
// cheapest plan is found by a short search instead of normal's valleys and passes:
//
//  * A state is the ordered atom list of each dimension; an all_to_all moves a suffix of L
//    atoms of one dimension to the end of another, valid when that dimension's local size is
//    divisible by p^L. Every block keeps its size, so a step's cost depends on L alone, and
//    whether it is valid depends only on the dimensions' atom counts (their shape).
//  * Permute first, without loss: the all_to_alls of any plan act on positions, so replaying
//    them from the state they lead back to from `to` (same shape as `from`) reaches `to` with
//    the same steps; any permutes the plan had are replaced by one (or none) in front.
//  * So the optimum is min over move sequences M of cost(M) + (P unless M^-1(to) == from):
//    an A* search from `to` over inverse moves (the graph is symmetric), towards the states
//    of `from`'s shape, with the bound "the cheapest all_to_alls that move as many atoms as
//    are still above `from`'s count in their dimension" (consistent: a step of L atoms lowers
//    that count by at most L).
//
// The result is time-optimal among all memory-bounded plans of the vocabulary (docs/
// synthesis.md, "Pure moves: the exact solver"); among equally fast plans it takes the fewest
// bytes of those that permute first.
#ifndef RESHARD_SYNTH_PURE_MOVE_H_
#define RESHARD_SYNTH_PURE_MOVE_H_

#include <optional>
#include <vector>

#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard::internal {

// The steps of a least-time plan from `from` to `to` (a permute first when needed, with
// MinimalPermute's pairs, then all_to_alls; types canonical on `mesh`, naming atoms as
// sub-axes `x:(m)p` when `sub_axes`), or nullopt when the solver does not apply: requires
// types that passed CheckReshardable, without pending sums, on a mesh without size-1 axes,
// under a model uniform on it, every atom named once by each type (a pure move; with
// `sub_axes` the types may name runs of prime atoms, such as `x:(1)2` of x=4). nullopt also
// when the atoms differ in size, there are more than 15 of them, the state would not pack
// into 64 bits (atoms + rank > 17) or the search exceeds its state cap.
std::optional<std::vector<Step>> PureMoveSteps(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const CostModel& model,
                                               bool sub_axes);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_PURE_MOVE_H_
