// The reshard dialect: registration, the pair-list syntax and the verifier of
// reshard.collective_permute (see dialect.h).
#include "lowering/dialect.h"

#include <cstdint>

#include "llvm/ADT/DenseSet.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;

namespace reshard::lowering {
namespace {

// `[[s, t], [s, t], ...]` (possibly `[]`) <-> a flat DenseI64ArrayAttr [s, t, s, t, ...].
ParseResult parsePairList(OpAsmParser& parser, DenseI64ArrayAttr& pairs) {
  SmallVector<int64_t> flat;
  auto parsePair = [&]() -> ParseResult {
    int64_t source = 0;
    int64_t target = 0;
    if (parser.parseLSquare() || parser.parseInteger(source) || parser.parseComma() ||
        parser.parseInteger(target) || parser.parseRSquare()) {
      return failure();
    }
    flat.push_back(source);
    flat.push_back(target);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parsePair,
                                     " in source_target_pairs")) {
    return failure();
  }
  pairs = DenseI64ArrayAttr::get(parser.getContext(), flat);
  return success();
}

void printPairList(OpAsmPrinter& printer, Operation*, DenseI64ArrayAttr pairs) {
  ArrayRef<int64_t> flat = pairs.asArrayRef();
  printer << "[";
  for (size_t i = 0; i + 1 < flat.size(); i += 2) {
    if (i > 0) printer << ", ";
    printer << "[" << flat[i] << ", " << flat[i + 1] << "]";
  }
  printer << "]";
}

}  // namespace
}  // namespace reshard::lowering

#include "lowering/reshard_dialect.cpp.inc"

#define GET_OP_CLASSES
#include "lowering/reshard_ops.cpp.inc"

namespace reshard::lowering {

void ReshardDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lowering/reshard_ops.cpp.inc"
      >();
}

LogicalResult CollectivePermuteOp::verify() {
  if (getInput().getType() != getResult().getType()) {
    return emitOpError("operand type ")
           << getInput().getType() << " and result type " << getResult().getType()
           << " must be equal (a permute moves whole local buffers)";
  }
  if (getSourceTargetPairs().size() % 2 != 0) {
    return emitOpError("source_target_pairs must hold [source, target] pairs");
  }
  return success();
}

LogicalResult CollectivePermuteOp::verifySymbolUses(SymbolTableCollection& symbols) {
  auto mesh = mesh::getMeshOrNull(getOperation(), getMeshAttr(), symbols);
  if (!mesh) {
    return emitOpError("mesh symbol ") << getMeshAttr() << " does not name a mesh.mesh";
  }
  int64_t devices = 1;
  for (int64_t size : mesh.getShape()) {
    if (ShapedType::isDynamic(size)) {
      return emitOpError("mesh ") << getMeshAttr() << " has a dynamic shape; permutes need "
                                  << "a static device count";
    }
    if (size < 0 || __builtin_mul_overflow(devices, size, &devices)) {
      return emitOpError("mesh ") << getMeshAttr() << " has no valid device count (axis size "
                                  << size << ")";
    }
  }
  ArrayRef<int64_t> flat = getSourceTargetPairs();
  llvm::DenseSet<int64_t> sources;
  llvm::DenseSet<int64_t> targets;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) {
    int64_t source = flat[i];
    int64_t target = flat[i + 1];
    for (int64_t id : {source, target}) {
      if (id < 0 || id >= devices) {
        return emitOpError("device ") << id << " in pair [" << source << ", " << target
                                      << "] is out of range: mesh " << getMeshAttr()
                                      << " has " << devices << " devices";
      }
    }
    if (!sources.insert(source).second) {
      return emitOpError("device ") << source << " is a source in more than one pair";
    }
    if (!targets.insert(target).second) {
      return emitOpError("device ") << target << " is a target in more than one pair";
    }
  }
  return success();
}

}  // namespace reshard::lowering
