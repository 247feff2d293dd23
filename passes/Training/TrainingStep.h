//===- TrainingStep.h - one mixed-precision training step ------*- C++ -*-===//
//
// buildTrainingStep turns a forward graph into the function that runs one
// training step: forward, loss, loss scaling, reverse-mode gradients
// (Autodiff.h), unscaling with a non-finite check, gradient clipping, the
// optimizer update of FP32 master weights and state, and the loss-scale
// update. Parameters, optimizer state, the step count and the loss-scale
// state are module state (`mp.state`, GraphBase.td): the runtime session
// keeps them across runs and checkpoints them. Everything is mp ops, so the
// precision passes, `report` and the backends treat the step like any graph.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_TRAININGSTEP_H
#define MIXPREC_PASSES_TRAININGSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::passes {

/// What the step computes. Defaults follow PyTorch (torch.optim.SGD/AdamW,
/// torch.amp.GradScaler) so that runs compare with it.
struct TrainingOptions {
  enum class Loss {
    CrossEntropy, ///< mean over the batch of -log_softmax(logits)[label]
    Mse,          ///< mean of (output - target)^2
    Model,        ///< the forward output already is the loss (one element)
  };
  Loss loss = Loss::CrossEntropy;
  /// The forward result the loss reads (its `mp.name`); "" for the first.
  std::string output;

  enum class Optimizer { Sgd, AdamW };
  Optimizer optimizer = Optimizer::Sgd;
  double lr = 0.01;
  double momentum = 0.0;     ///< SGD (dampening 0, no Nesterov)
  double weightDecay = 0.0;  ///< SGD: added to the gradient; AdamW: decoupled
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; ///< AdamW

  enum class Scaling {
    None,    ///< scale 1 (still checked: a non-finite gradient skips the step)
    Static,  ///< a fixed scale, initScale
    Dynamic, ///< GradScaler: grows after growthInterval clean steps, backs off on overflow
  };
  Scaling scaling = Scaling::Dynamic;
  double initScale = 65536.0;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  /// Overflows absorbed before the scale backs off (DeepSpeed's hysteresis;
  /// 1, GradScaler's behaviour, backs off at every overflow).
  int64_t hysteresis = 1;
  /// The scale never backs off below this (0: no floor).
  double minScale = 0.0;

  /// Clip the unscaled gradients to this global L2 norm (0: no clipping),
  /// as torch.nn.utils.clip_grad_norm_ (coefficient max/(norm + 1e-6)).
  double clipNorm = 0.0;

  /// Gradient accumulation: the step reads this many micro-batches (the
  /// data and labels hold micro-batches x the forward's dim 0 along dim 0),
  /// runs forward and backward on each in turn with the same loss scale,
  /// sums the scaled gradients, and unscales, checks, clips and updates once
  /// with their mean (the loss is the mean of the micro-batches' losses).
  int64_t accumulate = 1;

  /// Constants whose name matches one of these globs stay constants; the
  /// other named float constants of rank >= 1 are trained.
  std::vector<std::string> frozen;

  /// The step function's name.
  std::string name = "train_step";
  /// Also return each parameter's gradient, unscaled, in FP32, before the
  /// non-finite check and clipping, as `grad.NAME` (the gradient
  /// comparison of `mixprec train --compare-every`).
  bool gradientOutputs = false;

  /// Data parallelism (one process per device, each on its slice of the
  /// batch): the scaled gradients, bucketed, and the loss are averaged
  /// across the ranks (mp.all_reduce mean) before unscaling, and the
  /// non-finite flag is max-reduced, so that every rank sees the same
  /// gradients, norm and skip-or-step decision and keeps the same state.
  /// Without a collective at run time (one process) the all_reduce steps
  /// copy: the step computes what the step without them computes.
  bool dataParallel = false;
  /// The dtype the gradient buckets travel in: f32, or bf16/f16 (cast
  /// before the reduction and back to FP32 after it).
  std::string allreduceDType = "fp32";
  /// The most bytes of gradients (in the reduction's dtype) per bucket:
  /// one all_reduce each (PyTorch DDP's bucket_cap_mb, 25).
  double bucketMB = 25.0;
  /// Optimizer-state sharding (ZeRO stage 1) for a job of `world` ranks
  /// (needs dataParallel): each parameter's optimizer state (SGD's
  /// momentum, AdamW's two moments) is a state of ceil(n / world) elements,
  /// this rank's slice of the flattened parameter (zero-padded to world
  /// slices). After the all-reduce, the non-finite check and clipping (on
  /// every gradient), each rank updates its slice of every FP32 master
  /// (mp.rank_slice of the gradient and the master), and the new slices are
  /// all-gathered (mp.all_gather, bucketed as the gradients) into the
  /// replicated masters the forward reads. The update is element-wise, so
  /// the step computes what the unsharded one does, bit for bit, with
  /// 1/world of the optimizer state per rank.
  bool shardOptimizer = false;
  int64_t world = 1;
};

/// The parse of `--loss`, `--optimizer`, `--loss-scale` values; false for
/// an unknown name.
bool parseLoss(llvm::StringRef text, TrainingOptions::Loss &out);
bool parseOptimizer(llvm::StringRef text, TrainingOptions::Optimizer &out);
bool parseScaling(llvm::StringRef text, TrainingOptions::Scaling &out);

/// Fails, with a message, for options out of range (lr <= 0, momentum
/// outside [0, 1), betas outside [0, 1), eps <= 0, a scale <= 0, growth
/// factor <= 1, backoff outside (0, 1), interval or hysteresis < 1, clip < 0,
/// accumulate < 1, an all-reduce dtype other than fp32, bf16, fp16, a
/// bucket size <= 0, sharding without data parallelism, a world < 1).
std::string checkTrainingOptions(const TrainingOptions &options);

/// Appends the step function after `forward` and returns it.
///
/// Arguments: `forward`'s arguments (the data; with accumulation, dim 0 is
/// `accumulate` times the forward's), then the labels (`labels`:
/// integer class indices of the logits' shape without the class dim, for
/// cross-entropy; `targets`: the output's type, for MSE; none for a model
/// loss), then the state, each `mp.state` with its `mp.state_init`:
/// per parameter its FP32 master weight (named as the constant) and the
/// optimizer's state (`NAME.momentum_buffer`, or `NAME.exp_avg` and
/// `NAME.exp_avg_sq`; with shardOptimizer this rank's slice: a vector of
/// ceil(elements / world)), then `step`, and with dynamic scaling `loss_scale`,
/// `growth_tracker` (and `hysteresis` when it is above 1).
///
/// Results: `loss` (unscaled), `skipped` (1 when a gradient was not finite
/// and nothing was updated, else 0), `grad_norm` (global L2 norm of the
/// unscaled gradients, before clipping), `loss_scale` (the scale this step
/// used), then one `mp.state_update` per state, then with
/// `gradientOutputs` one `grad.NAME` per parameter. A skipped step leaves every
/// master weight, optimizer state and the step count bit-identical (the
/// updates select the old values), and only the loss-scale state moves.
///
/// Fails with an error on `forward` for: no trainable parameter, a loss
/// output that does not fit the loss (class dim, one element), options out
/// of range, a forward op without a gradient rule on the path to the loss.
mlir::FailureOr<mlir::func::FuncOp> buildTrainingStep(mlir::func::FuncOp forward,
                                                      const TrainingOptions &options);

/// Appends `name` after `forward`: the forward graph whose trained constants
/// (as buildTrainingStep finds them) are read from module state of the same
/// names and FP32 types (cast back to each constant's type where it had
/// another), each state's update being its own value. A session of the
/// compiled function takes the master weights of a training session by
/// name (read_state, write_state) and evaluates the model as trained.
/// Results: `forward`'s, then the state updates.
mlir::FailureOr<mlir::func::FuncOp> buildEvalFunction(mlir::func::FuncOp forward,
                                                      const TrainingOptions &options,
                                                      llvm::StringRef name);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_TRAININGSTEP_H
