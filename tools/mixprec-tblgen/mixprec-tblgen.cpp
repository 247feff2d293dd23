//===- mixprec-tblgen.cpp - mixprec's TableGen backends -------------------===//
//
// -gen-pipeline-options: the options of each pass pipeline declared in
// Passes.td (a MixprecPipeline record) from the options of its passes, so
// that each option is declared once, on its pass, with its type, default,
// description and values. For a pipeline it writes a
// mlir::PassPipelineOptions struct holding one Option per pass option
// (its argument with the pass's prefix, `fp8-` + `scaling`; its C++ name
// likewise, fp8Scaling; the option's `parser` as the struct's parser, so a
// tool that shows these options as its flags refuses a bad value in its
// own words), and per pass a method giving that pass's options struct
// (`getInsertScalingPassOptions()`), which buildPrecisionPipeline passes to
// the pass's create function. Nothing is converted: an enum option is the
// same enum in the pipeline and in the pass.
//
// Usage (CMake's tablegen()): mixprec-tblgen -gen-pipeline-options
// Passes.td -I ... -o Pipelines.h.inc. The output has two sections,
// GEN_PIPELINE_OPTIONS_DECL (the structs) and GEN_PIPELINE_OPTIONS_DEF
// (the methods).
//
// Built on LLVM's TableGen library only (records read by field name, as
// MLIR's PassGen reads Option records), so it builds against LLVM 19 and
// later alike.
//
//===----------------------------------------------------------------------===//
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <string>
#include <vector>

using namespace llvm;

namespace {

enum class Action { GenPipelineOptions };

cl::opt<Action> action(cl::desc("Action to perform:"),
                       cl::values(clEnumValN(Action::GenPipelineOptions, "gen-pipeline-options",
                                             "Generate the options of the pass pipelines")));

/// One option of a pass, as the pipeline shows it.
struct PipelineOption {
  std::string cppName;  ///< in the pipeline struct (prefix + the pass's name)
  std::string passName; ///< in the pass's options struct
  std::string argument; ///< prefix + the pass's argument
  std::string type, defaultValue, description, flags, parser;
  bool list = false;
};

/// `fp8-` -> `fp8`, then the pass's C++ name capitalised: fp8Scaling.
std::string prefixedCppName(StringRef prefix, StringRef name) {
  std::string camel;
  bool upper = false;
  for (char c : prefix) {
    if (c == '-' || c == '_') {
      upper = true;
      continue;
    }
    camel += upper ? toUpper(c) : c;
    upper = false;
  }
  if (camel.empty())
    return name.str();
  return camel + toUpper(name.front()) + name.drop_front().str();
}

/// A C++ string literal of `text`.
std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The options `pass` gives its pipeline under `prefix`.
std::vector<PipelineOption> optionsOf(const Record *pass, StringRef prefix) {
  std::vector<PipelineOption> options;
  for (const Record *def : pass->getValueAsListOfDefs("options")) {
    PipelineOption o;
    o.passName = def->getValueAsString("cppName").str();
    o.cppName = prefixedCppName(prefix, o.passName);
    o.argument = (prefix + def->getValueAsString("argument")).str();
    o.type = def->getValueAsString("type").str();
    o.description = def->getValueAsString("description").str();
    o.flags = def->getValueAsString("additionalOptFlags").str();
    o.list = def->isSubClassOf("ListOption");
    if (!o.list)
      o.defaultValue = def->getValueAsString("defaultValue").str();
    if (def->getValue("parser"))
      o.parser = def->getValueAsString("parser").str();
    options.push_back(std::move(o));
  }
  return options;
}

/// The name of a pass's generated options struct (MLIR's PassGen: the
/// record's name + "Options").
std::string optionsStructOf(const Record *pass) { return pass->getName().str() + "Options"; }

void emitDecl(raw_ostream &os, const Record *pipeline,
              const std::vector<std::pair<const Record *, std::vector<PipelineOption>>> &passes) {
  std::string name = pipeline->getValueAsString("cppName").str();
  os << "/// The options of --" << pipeline->getValueAsString("argument")
     << ": those of its passes";
  for (const auto &[pass, options] : passes)
    os << " --" << pass->getValueAsString("argument");
  os << " (generated from Passes.td).\n";
  os << "struct " << name << " : public ::mlir::PassPipelineOptions<" << name << "> {\n";
  for (const auto &[pass, options] : passes) {
    os << "  // --" << pass->getValueAsString("argument") << "\n";
    for (const PipelineOption &o : options) {
      if (o.list) {
        os << "  ListOption<" << o.type << (o.parser.empty() ? "" : ", " + o.parser) << "> "
           << o.cppName << "{*this, " << quoted(o.argument) << ", ::llvm::cl::desc("
           << quoted(o.description) << ")";
      } else {
        os << "  Option<" << o.type << (o.parser.empty() ? "" : ", " + o.parser) << "> "
           << o.cppName << "{*this, " << quoted(o.argument) << ", ::llvm::cl::desc("
           << quoted(o.description) << ")";
        if (!o.defaultValue.empty())
          os << ", ::llvm::cl::init(" << o.defaultValue << ")";
      }
      if (!o.flags.empty())
        os << ", " << o.flags;
      os << "};\n";
    }
  }
  os << "\n";
  for (const auto &[pass, options] : passes)
    os << "  /// The options of --" << pass->getValueAsString("argument")
       << " as this pipeline sets them (list options are views of this struct's).\n"
       << "  " << optionsStructOf(pass) << " get" << optionsStructOf(pass) << "() const;\n";
  os << "};\n\n";
}

void emitDef(raw_ostream &os, const Record *pipeline,
             const std::vector<std::pair<const Record *, std::vector<PipelineOption>>> &passes) {
  std::string name = pipeline->getValueAsString("cppName").str();
  for (const auto &[pass, options] : passes) {
    std::string structName = optionsStructOf(pass);
    os << structName << " " << name << "::get" << structName << "() const {\n";
    os << "  " << structName << " options;\n";
    for (const PipelineOption &o : options) {
      if (o.list)
        os << "  options." << o.passName << " = ::llvm::ArrayRef<" << o.type << ">(" << o.cppName
           << ");\n";
      else
        os << "  options." << o.passName << " = " << o.cppName << ";\n";
    }
    os << "  return options;\n}\n\n";
  }
}

bool genPipelineOptions(raw_ostream &os, const RecordKeeper &records) {
  emitSourceFileHeader("Pass pipeline options", os);
  std::string decl, def;
  raw_string_ostream declOs(decl), defOs(def);
  for (const Record *pipeline : records.getAllDerivedDefinitions("MixprecPipeline")) {
    std::vector<const Record *> passes;
    for (const Record *pass : pipeline->getValueAsListOfDefs("passes"))
      passes.push_back(pass);
    std::vector<StringRef> prefixes = pipeline->getValueAsListOfStrings("prefixes");
    if (prefixes.size() != passes.size())
      PrintFatalError(pipeline->getLoc(), "one prefix per pass, got " +
                                              Twine(prefixes.size()) + " for " +
                                              Twine(passes.size()) + " passes");
    std::vector<std::pair<const Record *, std::vector<PipelineOption>>> withOptions;
    std::vector<std::string> seen;
    for (size_t i = 0; i < passes.size(); ++i) {
      withOptions.emplace_back(passes[i], optionsOf(passes[i], prefixes[i]));
      for (const PipelineOption &o : withOptions.back().second) {
        if (is_contained(seen, o.argument))
          PrintFatalError(pipeline->getLoc(), "two passes give the option '" + o.argument +
                                                  "': give one a prefix");
        seen.push_back(o.argument);
      }
    }
    emitDecl(declOs, pipeline, withOptions);
    emitDef(defOs, pipeline, withOptions);
  }
  os << "#ifdef GEN_PIPELINE_OPTIONS_DECL\n#undef GEN_PIPELINE_OPTIONS_DECL\n\n"
     << decl << "#endif // GEN_PIPELINE_OPTIONS_DECL\n\n"
     << "#ifdef GEN_PIPELINE_OPTIONS_DEF\n#undef GEN_PIPELINE_OPTIONS_DEF\n\n"
     << def << "#endif // GEN_PIPELINE_OPTIONS_DEF\n";
  return false;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(argc, argv);
  return TableGenMain(argv[0], [](raw_ostream &os, const RecordKeeper &records) {
    switch (action) {
    case Action::GenPipelineOptions:
      return genPipelineOptions(os, records);
    }
    return true;
  });
}
