//===- KernelAttrInterfaces.td - what routine options share -*- tablegen -*-===//
#ifndef MIXPREC_KERNEL_ATTR_INTERFACES
#define MIXPREC_KERNEL_ATTR_INTERFACES

include "mlir/IR/OpBase.td"

def Kernel_RoutineOptionsInterface : AttrInterface<"RoutineOptionsInterface"> {
  let cppNamespace = "::mixprec::kernel";
  let description = [{
    The options of a family of routines: `mpk.call` verifies that its
    options apply to its routine.
  }];
  let methods = [
    InterfaceMethod<"Whether `routine` takes these options.", "bool", "appliesTo",
                    (ins "::mixprec::kernel::Routine":$routine)>,
  ];
}

#endif // MIXPREC_KERNEL_ATTR_INTERFACES
