//===- OnnxConstants.cpp - casts, constants, identities -------------------===//
//
// The converters of Cast, Constant, Identity, Dropout (inference: an alias)
// and Shape (a compile-time constant, shapes being static), each under its
// op's ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Casts, constants, identities
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Cast: saturate and round_mode only concern FP8/FP4 targets,
/// which the importer refuses.
static const OpForm kCastForms[] = {
    {1, 1, 1, 1, 1, "to"},
    {19, 1, 1, 1, 1, "saturate to"},
    {24, 1, 1, 1, 1, "round_mode saturate to"},
};

/// A run-time Cast to DOUBLE is accepted only as the start of a DOUBLE
/// island that ends in casts back to a float type: the "compute the softmax
/// in higher precision" idiom of exported models (ONNX's expanded Attention
/// with softmax_precision = DOUBLE: Cast(DOUBLE) -> Softmax -> Cast(FLOAT)).
/// mixprec has no FP64 kernels; its Softmax and LogSoftmax keep FP32
/// accumulators (max-subtracted exponentials summed in FP32), and the island's
/// result is rounded to FLOAT on the way out anyway, so the
/// island is computed in FP32: the results differ from an FP64 softmax rounded
/// to FP32 by a few FP32 ulps (the same rule as Attention's softmax_precision).
/// Anything else that reads a DOUBLE value (another op, a graph output, the
/// type of a CastLike) is refused, naming the node, as before.
std::string Importer::doubleIslandError(const NodeCtx &c) {
  llvm::StringMap<llvm::SmallVector<const onnx::NodeProto *, 2>> readers;
  for (const onnx::NodeProto &n : graphProto->node())
    for (const std::string &in : n.input())
      if (!in.empty())
        readers[in].push_back(&n);
  auto refuse = [](const llvm::Twine &why) {
    return ("casts a run-time tensor to DOUBLE; mixprec has no FP64 kernels and accepts "
            "that only around Softmax/LogSoftmax/Identity whose results are all cast back "
            "to FLOAT (computed in FP32), but " +
            why)
        .str();
  };
  llvm::SmallVector<std::string> work{c.node.output(0)};
  llvm::StringSet<> seen;
  while (!work.empty()) {
    std::string name = work.pop_back_val();
    if (!seen.insert(name).second)
      continue;
    for (const onnx::ValueInfoProto &o : graphProto->output())
      if (o.name() == name)
        return refuse("the DOUBLE tensor " + quotedName(name) + " is a graph output");
    for (const onnx::NodeProto *n : readers.lookup(name)) {
      std::string who = "node " + quotedName(n->name()) + " (" + n->op_type() + ")";
      bool onlyInput0 = n->input_size() >= 1 && n->input(0) == name &&
                        llvm::count(n->input(), name) == 1;
      const std::string &op = n->op_type();
      if (op == "Cast" && onlyInput0) {
        int64_t to = -1;
        for (const onnx::AttributeProto &a : n->attribute())
          if (a.name() == "to")
            to = a.i();
        if (to == onnx::TensorProto::FLOAT)
          continue; // an exit
        if (to == onnx::TensorProto::DOUBLE) {
          work.push_back(n->output(0));
          continue;
        }
        return refuse(who + " casts the DOUBLE tensor " + quotedName(name) + " to " +
                      dataTypeName(static_cast<int32_t>(to)));
      }
      if ((op == "Softmax" || op == "LogSoftmax" || op == "Identity") && onlyInput0 &&
          n->output_size() == 1) {
        work.push_back(n->output(0));
        continue;
      }
      return refuse(who + " reads the DOUBLE tensor " + quotedName(name));
    }
  }
  return "";
}

LogicalResult Importer::convertCast(const NodeCtx &c) {
  std::optional<int64_t> to;
  if (failed(attrIntOpt(c, "to", to)))
    return failure();
  if (!to)
    return nodeError(c, "attribute 'to' is required");
  Entry *entry;
  if (*to == onnx::TensorProto::DOUBLE && failed(entryOf(c, 0, entry)))
    return failure();
  if (*to == onnx::TensorProto::DOUBLE && !entry->constant) {
    Entry &e = *entry;
    if (!isa<FloatType>(entryType(e).getElementType()))
      return nodeError(c, "casts a run-time integer tensor to DOUBLE; mixprec has no FP64 tensors");
    if (std::string error = doubleIslandError(c); !error.empty())
      return nodeError(c, error);
    defineEntry(c, 0, e); // the island is computed in FP32 (doubleIslandError)
    return success();
  }
  Type target = valueElementType(ctx, static_cast<int32_t>(*to));
  if (!target)
    return nodeError(c, "attribute 'to' = " + dataTypeName(static_cast<int32_t>(*to)) +
                    " is not supported (FLOAT, INT64, INT32, BOOL)");
  if (failed(entryOf(c, 0, entry)))
    return failure();
  Entry &e = *entry;
  RankedTensorType t = entryType(e);
  if (t.getElementType() == target) {
    defineEntry(c, 0, e);
    return success();
  }
  if (e.constant) {
    defineConst(c, 0, foldCast(ctx, e.constant, target));
    return success();
  }
  Value x = materialize(e);
  defineValue(
      c, 0, builder.create<graph::CastOp>(c.loc, tensorType(t.getShape(), target), x).getOutput());
  return success();
}

/// The ONNX schema forms of Constant.
static const OpForm kConstantForms[] = {
    {1, 0, 0, 1, 1, "value"},
    {11, 0, 0, 1, 1, "sparse_value value"},
    {12, 0, 0, 1, 1,
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
};

LogicalResult Importer::convertConstant(const NodeCtx &c) {
  static const char *forms[] = {"value",      "value_float",  "value_floats",  "value_int",
                                "value_ints", "value_string", "value_strings", "sparse_value"};
  int present = 0;
  for (const char *f : forms)
    present += hasAttr(c, f);
  if (present != 1)
    return nodeError(c, "needs exactly one value attribute, got " + llvm::Twine(present));
  // The node has one of these (checked above): only its lookup can fail.
  const onnx::AttributeProto *value, *valueFloat, *valueFloats, *valueInt, *valueInts;
  if (failed(findAttr(c, "value", onnx::AttributeProto::TENSOR, value)) ||
      failed(findAttr(c, "value_float", onnx::AttributeProto::FLOAT, valueFloat)) ||
      failed(findAttr(c, "value_floats", onnx::AttributeProto::FLOATS, valueFloats)) ||
      failed(findAttr(c, "value_int", onnx::AttributeProto::INT, valueInt)) ||
      failed(findAttr(c, "value_ints", onnx::AttributeProto::INTS, valueInts)))
    return failure();
  DenseElementsAttr attr;
  if (const auto *a = value) {
    FailureOr<DenseElementsAttr> decoded = decodeTensor(
        ctx, a->t(), modelDir,
        escapeControls(path) + ": node " + quotedName(c.name) + " (Constant): attribute 'value'",
        [&](const std::string &message) { (void)(emitError(c.loc) << message); },
        options.onExternalFile);
    if (failed(decoded))
      return failure();
    attr = *decoded;
  } else if (const auto *a = valueFloat) {
    attr = makeF32Attr(ctx, {}, {a->f()});
  } else if (const auto *a = valueFloats) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    attr = makeF32Attr(ctx, {static_cast<int64_t>(v.size())}, v);
  } else if (const auto *a = valueInt) {
    attr = makeIntAttr({}, builder.getI64Type(), {a->i()});
  } else if (const auto *a = valueInts) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    attr = makeIntAttr({static_cast<int64_t>(v.size())}, builder.getI64Type(), v);
  } else {
    for (const char *f : {"value_string", "value_strings", "sparse_value"})
      if (hasAttr(c, f))
        return nodeError(c, "attribute '" + llvm::Twine(f) + "' is not supported");
    // An attribute listed above with an empty payload and no type.
    return nodeError(c, "the value attribute is empty");
  }
  defineConst(c, 0, attr);
  return success();
}

/// The ONNX schema forms of Identity.
static const OpForm kIdentityForms[] = {
    {1, 1, 1, 1, 1, ""},
};

LogicalResult Importer::convertIdentity(const NodeCtx &c) { return aliasOutput(c, 0, 0); }

/// The ONNX schema forms of Dropout: ratio becomes input #1 and training_mode input #2 at
/// opset 12.
static const OpForm kDropoutForms[] = {
    {1, 1, 1, 1, 2, "consumed_inputs is_test ratio"},
    {6, 1, 1, 1, 2, "is_test ratio"},
    {7, 1, 1, 1, 2, "ratio"},
    {12, 1, 3, 1, 2, "seed"},
};

LogicalResult Importer::convertDropout(const NodeCtx &c) {
  // Inference: Dropout is the identity unless training_mode is set; in
  // training with ratio 0 too (onnx's reference). Otherwise the output is
  // random, which mixprec does not compute.
  if (hasInput(c, 2)) {
    DenseElementsAttr mode;
    if (failed(requireConst(c, 2, "training_mode", mode)))
      return failure();
    if (llvm::any_of(intValues(mode), [](int64_t v) { return v != 0; })) {
      float ratio = 0.5f;
      if (hasInput(c, 1)) {
        DenseElementsAttr r;
        if (failed(requireConst(c, 1, "ratio", r)))
          return failure();
        if (!isFloat(r.getElementType()) || r.getNumElements() != 1)
          return nodeError(c, "input 'ratio' must be a FLOAT scalar");
        ratio = floatValues(r)[0];
      }
      if (ratio != 0.0f)
        return nodeError(c, "training_mode must be false: only inference is supported (or ratio 0; "
                    "with ratio " +
                        std::to_string(ratio) + " the output is random)");
    }
  }
  if (failed(aliasOutput(c, 0, 0)))
    return failure();
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
    FailureOr<DenseElementsAttr> mask = dropoutMask(c);
    if (failed(mask))
      return failure();
    defineConst(c, 1, *mask);
  }
  return success();
}

/// Dropout's mask where nothing is dropped: all true (BOOL from opset 10,
/// the input's type, 1.0, before).
FailureOr<DenseElementsAttr> Importer::dropoutMask(const NodeCtx &c) {
  RankedTensorType x;
  if (failed(inputType(c, 0, x)))
    return failure();
  if (opset >= 10)
    return DenseElementsAttr::get(RankedTensorType::get(x.getShape(), builder.getI1Type()), true);
  Type elem = x.getElementType();
  if (failed(requireFloat(c, 0, elem)))
    return failure();
  return DenseElementsAttr::get(RankedTensorType::get(x.getShape(), elem),
                                builder.getFloatAttr(elem, 1.0));
}

/// The ONNX schema forms of Shape.
static const OpForm kShapeForms[] = {
    {1, 1, 1, 1, 1, ""},
    {15, 1, 1, 1, 1, "end start"},
};

LogicalResult Importer::convertShape(const NodeCtx &c) {
  // Shapes are static, so Shape is a compile-time constant.
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start, end;
  if (failed(attrInt(c, "start", 0, start)) || failed(attrInt(c, "end", rank, end)))
    return failure();
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(in[d]);
  defineConst(c, 0, makeIntAttr({static_cast<int64_t>(dims.size())}, builder.getI64Type(), dims));
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::constantOps() {
  static const OpInfo table[] = {
      {"Cast", &Importer::convertCast, kCastForms},
      {"Constant", &Importer::convertConstant, kConstantForms},
      {"Identity", &Importer::convertIdentity, kIdentityForms},
      {"Dropout", &Importer::convertDropout, kDropoutForms},
      {"Shape", &Importer::convertShape, kShapeForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
