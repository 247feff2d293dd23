//===- OnnxImporterImpl.h - internals of the ONNX importer ------*- C++ -*-===//
//
// Shared by OnnxImporter.cpp (model, graph inputs/outputs, value table),
// the op converters (one file per op family: OnnxGemm.cpp,
// OnnxElementwise.cpp, OnnxNormalization.cpp, OnnxShape.cpp, OnnxPooling.cpp,
// OnnxConstants.cpp, OnnxFold.cpp, OnnxComposite.cpp, OnnxIndexing.cpp; their helpers in
// OnnxOpHelpers.h/.cpp, the op table in OnnxOpRegistry.cpp) and OnnxTensors.cpp (TensorProto
// decoding and compile-time constant helpers). Not part of the library's interface.
//
// Errors in user data are MLIR diagnostics: an error is emitted with
// mlir::emitError at the node's location (a NameLoc naming the node, inside
// the model file's FileLineColLoc), at an initializer's, or at the file's
// location for model-wide errors, and its text is the complete one-line
// message the user sees ("m.onnx: node 'fc1' (Gemm): ..."). importOnnxFile
// collects the first error with a ScopedDiagnosticHandler. Every function
// that can fail returns LogicalResult or FailureOr (accessors set an out
// argument), emits its error once where it finds it, and its caller returns
// on failure without emitting another; decodeTensor hands its message to a
// callback. Nothing in the importer throws: the one catch, of std::bad_alloc
// and protobuf's std::exception, is in importWithContract (OnnxImporter.cpp),
// which both entry points, importOnnxFile and importOnnxBuffer, go through.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_IMPORT_ONNXIMPORTERIMPL_H
#define MIXPREC_COMPILER_IMPORT_ONNXIMPORTERIMPL_H

#include "common/Escape.h"
#include "common/Shapes.h"
#include "compiler/Import/OnnxImporterOptions.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mixprec::compiler::onnx_import {

using shapes::Shape;
using shapes::ShapeOrError;

/// The newest versions whose meaning the importer knows: ONNX 1.23's IR
/// version and default-domain opset (the converters' forms follow its
/// schemas; onnxruntime 1.32 stops at the same two).
constexpr int64_t kMaxIrVersion = 14;
constexpr int64_t kMaxOpset = 28;

//===----------------------------------------------------------------------===//
// Messages and files (OnnxImporter.cpp)
//===----------------------------------------------------------------------===//

// Names from the file appear in messages through common::quotedName and
// common::escapeControls (common/Escape.h).
using common::escapeControls;
using common::quotedName;

/// A regular file opened for reading with common::openRegularFile (a
/// folder, a device or a FIFO is refused without reading or blocking);
/// closed when destroyed.
class RegularFile {
public:
  RegularFile() = default;
  RegularFile(const RegularFile &) = delete;
  RegularFile &operator=(const RegularFile &) = delete;
  ~RegularFile();

  /// Opens `fileName`; false with `error` = "FILE: cannot read: REASON".
  bool open(const std::string &fileName, std::string &error);

  /// `length` bytes from `offset`, no more: the caller checks them against
  /// size(), the size the open file has.
  std::unique_ptr<llvm::MemoryBuffer> read(uint64_t offset, uint64_t length,
                                           std::error_code &ec) const;

  uint64_t size() const { return fileSize; }

private:
  std::string name;
  int fd = -1;
  uint64_t fileSize = 0;
};

//===----------------------------------------------------------------------===//
// Tensors and compile-time constants (OnnxTensors.cpp)
//===----------------------------------------------------------------------===//

/// "FLOAT", "BFLOAT16", ... (newer types too); the number when unknown.
std::string dataTypeName(int32_t dtype);

/// ONNX name of an importer element type: f32 FLOAT, i64 INT64, i32 INT32,
/// i1 BOOL; anything else prints as the MLIR type.
std::string elementTypeName(mlir::Type type);

/// The element type a graph input / declared output of `dtype` has:
/// FLOAT f32, INT64 i64, INT32 i32, BOOL i1; null for anything else.
mlir::Type valueElementType(mlir::MLIRContext &ctx, int32_t dtype);

/// Decodes a tensor (inline typed fields, raw_data or external data) into
/// the importer's element types: DOUBLE/FLOAT16/BFLOAT16 become f32,
/// 8/16-bit integers i32, UINT32/UINT64 i64 (UINT64 range-checked).
/// External files are resolved against `modelDir`. On an error, `onError`
/// is given the complete one-line message, prefixed by `what` (e.g.
/// "m.onnx: initializer 'W': ..."), and the result is failure.
/// `onExternalFile`, if set, is told each external file read.
mlir::FailureOr<mlir::DenseElementsAttr>
decodeTensor(mlir::MLIRContext &ctx, const onnx::TensorProto &tensor, llvm::StringRef modelDir,
             const std::string &what, llvm::function_ref<void(const std::string &)> onError,
             const std::function<void(const std::string &)> &onExternalFile = nullptr);

/// The values of an integer or bool constant, sign-extended.
llvm::SmallVector<int64_t> intValues(mlir::DenseElementsAttr attr);
/// The values of an f32 constant.
llvm::SmallVector<float> floatValues(mlir::DenseElementsAttr attr);
/// An integer or bool constant of `shape` (bool: value != 0).
mlir::DenseElementsAttr makeIntAttr(llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                                    llvm::ArrayRef<int64_t> values);
/// An f32 constant of `shape`.
mlir::DenseElementsAttr makeF32Attr(mlir::MLIRContext &ctx, llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<float> values);

//===----------------------------------------------------------------------===//
// Compile-time evaluation (OnnxFold.cpp)
//===----------------------------------------------------------------------===//

/// Element-count limits of one compile-time fold. Ops with an mp form at
/// run time fold up to `runTime` elements, larger results are left to run
/// time (and data movement of float constants, weights whose layout is the
/// compiler's, always is); ops that exist only at compile time fold up to
/// `compileTime`.
struct FoldLimits {
  int64_t runTime = int64_t(1) << 22;
  int64_t compileTime = int64_t(1) << 24;
};

/// What evaluateNode made of a node.
struct FoldResult {
  enum Status { NotFolded, Folded, Failed } status = NotFolded;
  llvm::SmallVector<mlir::DenseElementsAttr, 1> outputs; // Folded: one per output
  std::string error; // Failed: the one-line reason, without the node's name
};

/// Whether the evaluator knows `opType`.
bool canEvaluate(llvm::StringRef opType);

/// Evaluates `node` at compile time with ONNX semantics at `opset`, given
/// its inputs' values (null where an input is absent): NotFolded for an op
/// it does not know, a type it leaves to the converter or a result over
/// `limits`; Failed when the node is invalid (division by zero, an
/// attribute out of range...). Floats are computed in FP32.
FoldResult evaluateNode(mlir::MLIRContext &ctx, const onnx::NodeProto &node, int64_t opset,
                        llvm::ArrayRef<mlir::DenseElementsAttr> inputs,
                        const FoldLimits &limits = {});

/// Converts constant values between the importer's element types with ONNX
/// Cast semantics.
mlir::DenseElementsAttr foldCast(mlir::MLIRContext &ctx, mlir::DenseElementsAttr in,
                                 mlir::Type to);

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

/// One version of an op's ONNX schema, as far as a node is checked against
/// it: from opset `since` until the next form's, how many inputs and outputs
/// the node has (trailing empty names count, as in onnxruntime) and which
/// attributes it may carry. The forms of each op sit next to its converter
/// in its op family's file (OnnxGemm.cpp, ...) and follow ONNX 1.23's
/// schemas up to kMaxOpset.
struct OpForm {
  int64_t since;
  int minInputs, maxInputs; // maxInputs kVariadic: no limit
  int minOutputs, maxOutputs;
  const char *attributes; // space-separated names; "*": any other name too
};
constexpr int kVariadic = -1;

/// One node being converted.
struct NodeCtx {
  const onnx::NodeProto &node;
  std::string name; // node name, or "<OpType>_<index>" when unnamed
  mlir::Location loc;
};

class Importer {
public:
  Importer(mlir::MLIRContext &ctx, std::string path, const OnnxImportOptions &options);

  /// Builds the module; null after an error was emitted as a diagnostic.
  mlir::OwningOpRef<mlir::ModuleOp> importModel(const onnx::ModelProto &model);
  /// After a failed importModel: the graph inputs to pin for another try
  /// (see pinRequest), or none.
  const std::set<std::string> &inputsToPin() const { return pinRequest; }

  // --- Errors --------------------------------------------------------------
  /// Emits "PATH: message" at the model file's location; returns failure.
  mlir::LogicalResult fileError(const llvm::Twine &message) const;
  /// Emits "PATH: node 'NAME' (OpType): message" at the node's location;
  /// returns failure.
  mlir::LogicalResult nodeError(const NodeCtx &c, const llvm::Twine &message) const;

private:
  /// What a tensor name stands for: a run-time value, a compile-time
  /// constant (materialized as mp.constant only when used as a value), or
  /// both.
  struct Entry {
    mlir::Value value;
    mlir::DenseElementsAttr constant;
    mlir::LocationAttr constantLoc;
  };

  // --- Model and graph (OnnxImporter.cpp) ----------------------------------
  /// importModel's work: sets `module` as it builds it.
  mlir::LogicalResult buildModule(const onnx::ModelProto &model,
                                  mlir::OwningOpRef<mlir::ModuleOp> &module);
  mlir::LogicalResult readOpset(const onnx::ModelProto &model);
  mlir::LogicalResult addInitializers(const onnx::GraphProto &graph);
  mlir::FailureOr<llvm::SmallVector<mlir::Type>>
  graphInputTypes(const onnx::GraphProto &graph, llvm::SmallVector<std::string> &names);
  mlir::LogicalResult convertNode(const onnx::NodeProto &node, int index);
  /// Fails unless the node's attributes, inputs and outputs fit `forms`
  /// at the model's opset.
  mlir::LogicalResult checkSchema(const NodeCtx &c, llvm::ArrayRef<OpForm> forms) const;
  mlir::LogicalResult checkGraphOutputType(const onnx::ValueInfoProto &o,
                                           mlir::RankedTensorType type) const;
  mlir::LogicalResult addReturn(const onnx::GraphProto &graph, mlir::func::FuncOp func);
  mlir::LogicalResult verifyModule(mlir::ModuleOp module);

  // --- Value table ---------------------------------------------------------
  // The accessors of inputs and attributes fail (the error emitted) when
  // the node lacks a required input or has an attribute of the wrong type;
  // on success they set their last argument.
  mlir::Location nameLoc(llvm::StringRef name) const;
  bool hasInput(const NodeCtx &c, int i) const;
  mlir::LogicalResult entryOf(const NodeCtx &c, int i, Entry *&entry);
  /// Calls `use` with input i's entry (entryOf).
  template <typename Use> mlir::LogicalResult withEntry(const NodeCtx &c, int i, Use use) {
    Entry *entry;
    if (mlir::failed(entryOf(c, i, entry)))
      return mlir::failure();
    use(*entry);
    return mlir::success();
  }
  mlir::Value materialize(Entry &e);
  /// The run-time value of required input i.
  mlir::LogicalResult input(const NodeCtx &c, int i, mlir::Value &value);
  /// Optional input i, or null when absent/empty.
  mlir::LogicalResult optInput(const NodeCtx &c, int i, mlir::Value &value);
  mlir::RankedTensorType entryType(const Entry &e) const;
  mlir::LogicalResult inputType(const NodeCtx &c, int i, mlir::RankedTensorType &type);
  /// The compile-time value of input i, or null when it is only known at
  /// run time.
  mlir::LogicalResult constInput(const NodeCtx &c, int i, mlir::DenseElementsAttr &attr);
  /// The value `mixprec run` was given for graph input `name`
  /// (OnnxImportOptions::dataValues), as a constant of its type; null when
  /// none was given or the name is not an integer graph input.
  mlir::DenseElementsAttr givenInputValue(const std::string &name);
  /// Like constInput, but an error naming `role` when it is not constant
  /// (a graph input whose value the run gave counts: givenInputValue).
  mlir::LogicalResult requireConst(const NodeCtx &c, int i, llvm::StringRef role,
                                   mlir::DenseElementsAttr &attr);
  /// A 0-D or 1-D integer constant input, as values.
  mlir::LogicalResult requireConstInts(const NodeCtx &c, int i, llvm::StringRef role,
                                       llvm::SmallVector<int64_t> &values);
  void defineValue(const NodeCtx &c, int i, mlir::Value v);
  /// Defines output i as `v`, or fails when building it did (its error
  /// emitted).
  mlir::LogicalResult defineResult(const NodeCtx &c, int i, mlir::FailureOr<mlir::Value> v);
  void defineConst(const NodeCtx &c, int i, mlir::DenseElementsAttr attr);
  void defineEntry(const NodeCtx &c, int i, const Entry &e);
  mlir::LogicalResult aliasOutput(const NodeCtx &c, int i, int inputIndex);
  /// Fails when output i exists and something reads it.
  mlir::LogicalResult requireUnusedOutputs(const NodeCtx &c, int firstUnsupported, llvm::StringRef why);

  // --- Attributes ----------------------------------------------------------
  /// Attribute `name` (null when absent); fails when it has another type.
  mlir::LogicalResult findAttr(const NodeCtx &c, llvm::StringRef name,
                               onnx::AttributeProto::AttributeType type,
                               const onnx::AttributeProto *&attr) const;
  mlir::LogicalResult attrInt(const NodeCtx &c, llvm::StringRef name, int64_t dflt,
                              int64_t &value) const;
  mlir::LogicalResult attrIntOpt(const NodeCtx &c, llvm::StringRef name,
                                 std::optional<int64_t> &value) const;
  mlir::LogicalResult attrFloat(const NodeCtx &c, llvm::StringRef name, float dflt,
                                float &value) const;
  mlir::LogicalResult attrString(const NodeCtx &c, llvm::StringRef name, llvm::StringRef dflt,
                                 std::string &value) const;
  mlir::LogicalResult attrInts(const NodeCtx &c, llvm::StringRef name,
                               std::optional<llvm::SmallVector<int64_t>> &values) const;
  bool hasAttr(const NodeCtx &c, llvm::StringRef name) const;
  /// A window attribute (kernel_shape, strides, dilations) of `count`
  /// values (one per spatial dim), each in [1, INT32_MAX]; `dflt` when
  /// absent (required when no default).
  mlir::LogicalResult windowInts(const NodeCtx &c, llvm::StringRef name,
                                 std::optional<llvm::SmallVector<int64_t>> dflt,
                                 llvm::SmallVector<int64_t> &values, size_t count = 2);
  /// Fails unless attribute `name` is absent or 0/1; sets it as bool.
  mlir::LogicalResult attrBool(const NodeCtx &c, llvm::StringRef name, bool dflt,
                               bool &value) const;

  // --- Helpers for converters ----------------------------------------------
  /// The shape, or a failure with its error.
  mlir::FailureOr<Shape> expectShape(const NodeCtx &c, const ShapeOrError &s) const;
  /// `axis` made non-negative for `rank` (the result replaces it); fails
  /// when out of range.
  mlir::LogicalResult normalizeAxis(const NodeCtx &c, llvm::StringRef what, int64_t &axis,
                                    int64_t rank) const;
  /// Sorted, unique, non-negative axes for `rank`.
  mlir::FailureOr<llvm::SmallVector<int64_t>> normalizeAxes(const NodeCtx &c, llvm::StringRef what,
                                                            llvm::ArrayRef<int64_t> axes,
                                                            int64_t rank) const;
  /// `axes` made non-negative for `rank`, in their order; fails on an axis
  /// out of range or named twice.
  mlir::LogicalResult normalizeAxesInOrder(const NodeCtx &c, llvm::StringRef what,
                                           llvm::SmallVectorImpl<int64_t> &axes,
                                           int64_t rank) const;
  mlir::LogicalResult requireFloat(const NodeCtx &c, int i, mlir::Type t) const;
  /// Fails unless `t` is a float, INT32 or INT64 (run-time integers are
  /// exact: the int_elementwise routine).
  mlir::LogicalResult requireFloatOrInteger(const NodeCtx &c, int i, mlir::Type t) const;
  /// ReduceMax over `axes` of a bool tensor (any; false over no values).
  mlir::FailureOr<mlir::Value> reduceAnyBool(const NodeCtx &c, mlir::Value x,
                                             llvm::ArrayRef<int64_t> axes, bool keepDims);
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, mlir::Type elem) const;
  /// The result type `OpT` infers (InferShapedTypeOpInterface) when built
  /// from `args`, its builder's arguments after the result type, with
  /// element type `element` where the op leaves that to its builder. A
  /// shape rule the operands break fails the node with the rule's message.
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::RankedTensorType> inferredType(const NodeCtx &c, mlir::Type element,
                                                       const Args &...args);
  /// An `OpT` built from `args` with the result type it infers (inferredType).
  template <typename OpT, typename... Args>
  mlir::FailureOr<mlir::Value> createInferred(const NodeCtx &c, mlir::Type element,
                                              const Args &...args) {
    mlir::FailureOr<mlir::RankedTensorType> type = inferredType<OpT>(c, element, args...);
    if (mlir::failed(type))
      return mlir::failure();
    return builder.create<OpT>(c.loc, *type, args...).getOutput();
  }
  /// An mp.constant at the top of the function.
  mlir::Value constant(mlir::Location loc, mlir::DenseElementsAttr attr);
  mlir::Value scalarF32(const NodeCtx &c, float v);
  /// Input i reshaped to `shape` (re-typed at compile time if constant).
  mlir::FailureOr<mlir::Value> reshapeInput(const NodeCtx &c, int i, llvm::ArrayRef<int64_t> shape);
  mlir::Value reshape(const NodeCtx &c, mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// `v` transposed by `perm`; fails, without another error, when `v` did.
  mlir::FailureOr<mlir::Value> transpose(const NodeCtx &c, mlir::FailureOr<mlir::Value> v,
                                         llvm::ArrayRef<int64_t> perm);
  /// Defines output 0 as `input` reshaped to `shape`, folding constants.
  mlir::LogicalResult defineReshaped(const NodeCtx &c, int inputIndex,
                                     llvm::ArrayRef<int64_t> shape);
  /// The `pads` attribute of a window node with `dims` spatial dims (2 *
  /// dims values in [0, INT32_MAX]), if set.
  mlir::LogicalResult explicitPads(const NodeCtx &c, size_t dims,
                                   std::optional<llvm::SmallVector<int64_t>> &pads);
  /// The `auto_pad` attribute, checked: NOTSET, VALID, SAME_UPPER or SAME_LOWER.
  mlir::FailureOr<std::string> autoPadMode(const NodeCtx &c);
  /// explicitPads, then autoPadMode.
  mlir::LogicalResult padAttributes(const NodeCtx &c, size_t dims,
                                    std::optional<llvm::SmallVector<int64_t>> &pads,
                                    std::string &autoPad);
  /// Resolves ONNX window attributes (auto_pad, pads) to the begins then the
  /// ends ([top, left, bottom, right] in 2-D), one per dim of `kernel`.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  windowPads(const NodeCtx &c, llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> kernel,
             llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> dilations);
  mlir::LogicalResult require4D(const NodeCtx &c, llvm::ArrayRef<int64_t> shape, llvm::StringRef what) const;
  /// The axes a Reduce* node reduces, sorted and non-negative: the `axes`
  /// attribute before opset `inputFrom`, input #1 from it, every axis when
  /// none are given; nullopt when nothing is reduced (noop_with_empty_axes
  /// with no axes, or a rank-0 input).
  mlir::LogicalResult reduceAxes(const NodeCtx &c, int64_t inputFrom,
                                 std::optional<llvm::SmallVector<int64_t>> &axes);

  // --- Converters (one file per op family) ---------------------------------
public:
  using Converter = mlir::LogicalResult (Importer::*)(const NodeCtx &);

private:
  // OnnxGemm.cpp
  mlir::LogicalResult convertMatMul(const NodeCtx &c);
  mlir::LogicalResult convertGemm(const NodeCtx &c);
  mlir::LogicalResult convertConv(const NodeCtx &c);
  mlir::LogicalResult convertConvTranspose(const NodeCtx &c);
  /// What Conv and ConvTranspose share: operands, window and group.
  struct ConvNode {
    mlir::Value x, w, bias;
    llvm::SmallVector<int64_t> kernel, strides, dilations;
    int64_t group = 1;
  };
  /// Checks a Conv (or, `transposed`, ConvTranspose) node of 1 to 3
  /// spatial dims: ranks, float operands, kernel_shape against the
  /// weight, strides, dilations, group.
  mlir::FailureOr<ConvNode> convNode(const NodeCtx &c, bool transposed);
  /// Fails unless `bias` (input #2) is absent or float of shape [channels].
  mlir::LogicalResult requireConvBias(const NodeCtx &c, mlir::Value bias, int64_t channels);
  /// ConvTranspose's pads from auto_pad, output_shape or pads.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  convTransposePads(const NodeCtx &c, llvm::ArrayRef<int64_t> inShape,
                    llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
                    llvm::ArrayRef<int64_t> dilations, llvm::ArrayRef<int64_t> outputPadding);
  // OnnxElementwise.cpp
  /// The simple binary and unary ops of runtime/format/ScalarFns.def
  /// (OpT), floats or also integers.
  template <class OpT, bool integers> mlir::LogicalResult convertBinary(const NodeCtx &c);
  template <class OpT, bool integers> mlir::LogicalResult convertUnary(const NodeCtx &c);
  mlir::LogicalResult convertGelu(const NodeCtx &c);
  mlir::LogicalResult convertWhere(const NodeCtx &c);
  mlir::LogicalResult convertCompare(const NodeCtx &c);
  mlir::LogicalResult convertLogic(const NodeCtx &c);
  mlir::LogicalResult convertNot(const NodeCtx &c);
  mlir::LogicalResult convertIsNaNOrInf(const NodeCtx &c);
  mlir::LogicalResult convertParamActivation(const NodeCtx &c);
  mlir::LogicalResult convertPRelu(const NodeCtx &c);
  mlir::LogicalResult convertVariadic(const NodeCtx &c);
  mlir::LogicalResult convertMod(const NodeCtx &c);
  mlir::LogicalResult convertClip(const NodeCtx &c);
  // OnnxNormalization.cpp
  mlir::LogicalResult convertSoftmax(const NodeCtx &c);
  /// The normalized dims' first axis and epsilon of LayerNormalization and
  /// RMSNormalization (axis, epsilon > 0, stash_type 1), checked for `rank`.
  struct NormAttributes {
    int64_t axis;
    float eps;
  };
  mlir::FailureOr<NormAttributes> normAttributes(const NodeCtx &c, int64_t rank);
  mlir::LogicalResult convertLayerNorm(const NodeCtx &c);
  mlir::LogicalResult convertRmsNorm(const NodeCtx &c);
  mlir::LogicalResult convertBatchNorm(const NodeCtx &c);
  mlir::LogicalResult defineBatchStats(const NodeCtx &c, mlir::Value x, mlir::Value runningMean,
                                       mlir::Value runningVar, float momentum, mlir::Value &mean,
                                       mlir::Value &var);
  mlir::LogicalResult convertReduce(const NodeCtx &c);
  // OnnxShape.cpp
  mlir::LogicalResult convertReshape(const NodeCtx &c);
  mlir::LogicalResult convertFlatten(const NodeCtx &c);
  mlir::LogicalResult convertUnsqueeze(const NodeCtx &c);
  mlir::LogicalResult convertSqueeze(const NodeCtx &c);
  mlir::LogicalResult convertTranspose(const NodeCtx &c);
  mlir::LogicalResult convertConcat(const NodeCtx &c);
  mlir::LogicalResult convertSlice(const NodeCtx &c);
  mlir::LogicalResult defineSlice(const NodeCtx &c, int out, llvm::ArrayRef<int64_t> starts,
                                  llvm::ArrayRef<int64_t> steps, llvm::ArrayRef<int64_t> counts);
  mlir::LogicalResult splitSizes(const NodeCtx &c, int64_t dim, llvm::SmallVector<int64_t> &sizes);
  mlir::LogicalResult convertSplit(const NodeCtx &c);
  mlir::LogicalResult convertGather(const NodeCtx &c);
  // OnnxPooling.cpp
  mlir::LogicalResult convertMaxPool(const NodeCtx &c);
  mlir::LogicalResult convertAveragePool(const NodeCtx &c);
  /// MaxPool and AveragePool as the N-D ops (3-D, AveragePool's dilations,
  /// MaxPool's Indices): the window attributes of any of 1 to 3 dims.
  mlir::LogicalResult convertPoolNd(const NodeCtx &c);
  mlir::LogicalResult convertGlobalPool(const NodeCtx &c);
  /// A pooling node's window attributes, checked.
  struct PoolWindow {
    llvm::SmallVector<int64_t> kernel, strides, dilations, pads;
    bool ceilMode = false;
  };
  mlir::LogicalResult poolWindow(const NodeCtx &c, llvm::ArrayRef<int64_t> shape, PoolWindow &w,
                                 bool *countIncludePad = nullptr);
  // OnnxConstants.cpp
  mlir::LogicalResult convertCast(const NodeCtx &c);
  mlir::LogicalResult convertConstant(const NodeCtx &c);
  mlir::LogicalResult convertIdentity(const NodeCtx &c);
  mlir::LogicalResult convertDropout(const NodeCtx &c);
  mlir::FailureOr<mlir::DenseElementsAttr> dropoutMask(const NodeCtx &c);
  mlir::LogicalResult convertShape(const NodeCtx &c);

  // OnnxFold.cpp: ops whose values are known at compile time (shape
  // subgraphs), and the evaluator that folds them.
  /// Folds the node when every present input is a compile-time constant
  /// and the evaluator knows its op; false leaves it to the converter,
  /// failure is an error (emitted).
  /// With `givenValues`, a graph input the run gave a value for counts as
  /// a constant (givenInputValue): for the ops that exist only at compile
  /// time (ConstantOfShape, Range), whose converters require it anyway.
  mlir::FailureOr<bool> tryFold(const NodeCtx &c, bool givenValues = false);
  /// For Cast node c (to DOUBLE, of a run-time float tensor): "" when what
  /// it starts is a DOUBLE island, computed in FP32 (OnnxConstants.cpp),
  /// else why not.
  std::string doubleIslandError(const NodeCtx &c);
  /// Fails node c, which computes in DOUBLE but does not fold.
  mlir::LogicalResult failDouble(const NodeCtx &c);
  /// Where a run-time tensor comes from, for errors: "it is graph input
  /// 'x'" or "it is computed at run time by node 'n' (Op) from graph
  /// input 'x'".
  std::string runTimeOrigin(const std::string &tensor) const;
  /// The graph inputs that run-time tensor `tensor` is computed from.
  llvm::SmallVector<std::string> runTimeInputs(const std::string &tensor) const;
  /// Set when a compile-time input failed to fold only because it is
  /// computed from graph inputs the run gave values for: the inputs to pin
  /// (OnnxImportOptions::pinnedInputs) in another import.
  std::set<std::string> pinRequest;
  /// Folds node c of an op that exists only at compile time (tryFold with
  /// `givenValues`), or fails it.
  mlir::LogicalResult foldCompileTimeOnly(const NodeCtx &c);
  mlir::LogicalResult convertConstantOfShape(const NodeCtx &c);
  mlir::LogicalResult convertRange(const NodeCtx &c);
  mlir::LogicalResult convertSize(const NodeCtx &c);
  mlir::LogicalResult convertExpand(const NodeCtx &c);

  // (end of OnnxFold.cpp's converters)

  // OnnxComposite.cpp: ops built exactly from other mp ops (decompositions).
  mlir::LogicalResult convertTile(const NodeCtx &c);
  mlir::LogicalResult convertTrilu(const NodeCtx &c);
  mlir::LogicalResult convertPad(const NodeCtx &c);
  mlir::LogicalResult convertDepthSpace(const NodeCtx &c);
  mlir::LogicalResult convertCastLike(const NodeCtx &c);
  mlir::LogicalResult convertGroupNorm(const NodeCtx &c);
  mlir::LogicalResult convertCompositeReduce(const NodeCtx &c);
  mlir::LogicalResult convertEinsum(const NodeCtx &c);
  mlir::LogicalResult convertResize(const NodeCtx &c);
  /// Resize's roi input for tf_crop_and_resize: [starts, ends] of every
  /// axis of `rank` (0 and 1 where `axes` leaves one out).
  mlir::FailureOr<llvm::SmallVector<float>> resizeRoi(const NodeCtx &c,
                                                      llvm::ArrayRef<int64_t> axes, int64_t rank);
  /// A constant slice of v's shape with size 1 along `axis`, holding
  /// `value` in v's element type (saturated and truncated for integers).
  mlir::Value extrapolationSlice(const NodeCtx &c, mlir::Value v, int64_t axis, float value);
  /// Resize's mode, coordinate_transformation_mode and nearest_mode (the
  /// legacy rules for Upsample and before opset 11), checked.
  mlir::LogicalResult resizeModes(const NodeCtx &c, bool legacy, std::string &mode,
                                  std::string &transform, std::string &nearestMode);
  /// Resize's scales (an attribute of Upsample before opset 9, else an
  /// input) or sizes (an input from opset 11), one per axis of `axisCount`.
  mlir::LogicalResult resizeScalesOrSizes(const NodeCtx &c, bool upsample, bool legacy,
                                          size_t axisCount, llvm::SmallVector<float> &scales,
                                          llvm::SmallVector<int64_t> &sizes);
  /// `v` with its axis `d` (of `rank`) multiplied by the matrix `w`
  /// ([in, out]): moved last, multiplied, moved back.
  mlir::FailureOr<mlir::Value> matmulAlongAxis(const NodeCtx &c, mlir::Value v, mlir::Value w,
                                               int64_t d, int64_t rank);
  mlir::LogicalResult convertAttention(const NodeCtx &c);
  /// Attention's attributes.
  struct AttentionAttrs {
    bool causal = false;
    int64_t mode = 0; // qk_matmul_output_mode
    double scale = 1.0;
    int64_t leftWindow = -1, rightWindow = -1;
    float softcap = 0.0f;
  };
  mlir::LogicalResult attentionAttributes(const NodeCtx &c, int64_t headSize,
                                          AttentionAttrs &attrs);
  /// Attention's Q, K and V as 4-D [B, heads, S, D] (3-D inputs split by
  /// q_num_heads and kv_num_heads), checked to fit each other; `rank` is the
  /// inputs' rank.
  mlir::FailureOr<llvm::SmallVector<mlir::Value, 3>> attentionInputs(const NodeCtx &c, int64_t &rank);
  /// Attention's attn_mask as an additive bias in `et`: a boolean mask as 0
  /// or -inf, padded with -inf up to the key length `kvLen`.
  mlir::FailureOr<mlir::Value> attentionMask(const NodeCtx &c, mlir::Value mask, mlir::Type et, int64_t kvLen);
  /// `probs` with 0 in the rows whose `bias` is all -inf.
  mlir::FailureOr<mlir::Value> zeroMaskedRows(const NodeCtx &c, mlir::Type et, mlir::Value bias,
                                              mlir::Value probs);
  /// A 3-D [B, S, heads * D] Attention input as [B, heads, S, D].
  mlir::FailureOr<mlir::Value> attentionHeads(const NodeCtx &c, mlir::Value v, int64_t heads,
                                              llvm::StringRef role);
  /// A 1-D Conv/MaxPool/AveragePool through `convert2d` (its 2-D converter).
  mlir::LogicalResult convertWindow1d(const NodeCtx &c, Converter convert2d);
  mlir::FailureOr<float> positiveEpsilon(const NodeCtx &c);
  /// LayerNormalization's optional outputs Mean (#1) and InvStdDev (#2),
  /// when something reads them.
  mlir::LogicalResult defineLayerNormStats(const NodeCtx &c, mlir::Value x, int64_t axis,
                                           float eps);
  /// `count` elements of v along `axis` from `start` (v itself when all).
  mlir::Value sliceAxis(const NodeCtx &c, mlir::Value v, int64_t axis, int64_t start,
                        int64_t count);
  // The building blocks below fail when building their op does; those
  // taking FailureOr operands also fail, without another error, when an
  // operand did, so that they chain.
  /// v gathered along `axis` at constant `indices` (non-negative).
  mlir::FailureOr<mlir::Value> gatherAxis(const NodeCtx &c, mlir::FailureOr<mlir::Value> v,
                                          int64_t axis, llvm::ArrayRef<int64_t> indices);
  mlir::FailureOr<mlir::Value> concatAxis(const NodeCtx &c, llvm::ArrayRef<mlir::Value> parts,
                                          int64_t axis);
  mlir::FailureOr<mlir::Value> mulV(const NodeCtx &c, mlir::FailureOr<mlir::Value> a,
                                    mlir::FailureOr<mlir::Value> b);
  mlir::FailureOr<mlir::Value> addV(const NodeCtx &c, mlir::FailureOr<mlir::Value> a,
                                    mlir::FailureOr<mlir::Value> b);
  mlir::FailureOr<mlir::Value> subV(const NodeCtx &c, mlir::FailureOr<mlir::Value> a,
                                    mlir::FailureOr<mlir::Value> b);
  mlir::FailureOr<mlir::Value> absV(const NodeCtx &c, mlir::FailureOr<mlir::Value> x);
  mlir::FailureOr<mlir::Value> perChannel(const NodeCtx &c, int i, int64_t channels, int64_t groups,
                                          int64_t rank);

  // (end of OnnxComposite.cpp's converters)

  // OnnxIndexing.cpp: index-driven ops run as routines (TopK, ArgMax, ...).
  mlir::LogicalResult convertGatherElements(const NodeCtx &c);
  mlir::LogicalResult convertGatherNd(const NodeCtx &c);
  mlir::LogicalResult convertArgReduce(const NodeCtx &c);
  mlir::LogicalResult convertTopK(const NodeCtx &c);
  mlir::LogicalResult convertCumSum(const NodeCtx &c);
  mlir::LogicalResult convertScatterNd(const NodeCtx &c);

  // (end of OnnxIndexing.cpp's converters)

  struct OpInfo {
    OpInfo(const char *opType, Converter convert, llvm::ArrayRef<OpForm> forms)
        : opType(opType), convert(convert), forms(forms) {}
    /// Converts node c with this row's converter.
    mlir::LogicalResult run(Importer &importer, const NodeCtx &c) const {
      return (importer.*convert)(c);
    }

    const char *opType;
    Converter convert = nullptr;
    llvm::ArrayRef<OpForm> forms; // the first form's `since` introduced the op
  };
  /// Each op family's rows of the op table, defined in the family's file.
  static llvm::ArrayRef<OpInfo> gemmOps();
  static llvm::ArrayRef<OpInfo> elementwiseOps();
  static llvm::ArrayRef<OpInfo> normalizationOps();
  static llvm::ArrayRef<OpInfo> shapeOps();
  static llvm::ArrayRef<OpInfo> poolingOps();
  static llvm::ArrayRef<OpInfo> constantOps();
  static llvm::ArrayRef<OpInfo> foldOps();
  static llvm::ArrayRef<OpInfo> compositeOps();
  static llvm::ArrayRef<OpInfo> indexingOps();
  /// The op type's row of the op table (OnnxOpRegistry.cpp), or null.
  static const OpInfo *findOp(llvm::StringRef opType);

  mlir::MLIRContext &ctx;
  std::string path;     // the model file, as given (errors, locations)
  std::string modelDir; // resolves external data
  const OnnxImportOptions &options;
  int64_t opset = 0;
  mlir::OpBuilder builder;      // appends node ops to the function body
  mlir::OpBuilder constBuilder; // keeps materialized constants at the top
  mlir::Operation *lastConstant = nullptr;
  llvm::DenseMap<std::pair<mlir::Attribute, mlir::Attribute>, mlir::Value> materializedConstants;
  mlir::Location fileLoc;
  llvm::StringMap<Entry> values;
  llvm::StringSet<> usedNames;              // read by some node or a graph output
  llvm::StringMap<std::string> nodeOpTypes; // node name -> op type (diagnostics)
  // OnnxFold.cpp's state: each tensor's producing node (its index in
  // *graphProto) for errors, and the elements folding may still create.
  const onnx::GraphProto *graphProto = nullptr;
  llvm::StringMap<int> producers;
  int64_t foldBudget = int64_t(1) << 25;
};

template <typename OpT, typename... Args>
mlir::FailureOr<mlir::RankedTensorType> Importer::inferredType(const NodeCtx &c, mlir::Type element,
                                                               const Args &...args) {
  mlir::OperationState state(c.loc, OpT::getOperationName());
  OpT::build(builder, state, /*output=*/mlir::Type(), args...);
  // As Operation::create does: unset attributes take their default values.
  if constexpr (OpT::hasProperties())
    OpT::populateDefaultProperties(state.name,
                                   state.getOrAddProperties<typename OpT::Properties>());
  std::string why;
  llvm::SmallVector<mlir::ShapedTypeComponents, 1> results;
  mlir::LogicalResult inferred = mlir::success();
  {
    // The shape rule's message becomes the node's (reported below, once
    // this handler is gone).
    mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &diag) {
      if (why.empty())
        why = diag.str();
      return mlir::success();
    });
    inferred = OpT::inferReturnTypeComponents(
        &ctx, c.loc, mlir::ValueShapeRange(mlir::ValueRange(state.operands)),
        state.attributes.getDictionary(&ctx), state.getRawProperties(), state.regions, results);
  }
  if (mlir::failed(inferred))
    return nodeError(c, why);
  mlir::Type inferredElement = results.front().getElementType();
  return mlir::RankedTensorType::get(results.front().getDims(),
                                     inferredElement ? inferredElement : element);
}

} // namespace mixprec::compiler::onnx_import

#endif // MIXPREC_COMPILER_IMPORT_ONNXIMPORTERIMPL_H
