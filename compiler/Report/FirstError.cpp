//===- FirstError.cpp - the first error of a compile -----------------------===//
#include "compiler/Compile/Compile.h"
#include "compiler/Report/Report.h"

using namespace mlir;

namespace mixprec::compiler {

FirstError::FirstError(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty()) {
          error = formatDiagnostic(diag);
          for (Diagnostic &note : diag.getNotes())
            noteLines.push_back(formatDiagnostic(note));
        }
        return success();
      }) {}

} // namespace mixprec::compiler
