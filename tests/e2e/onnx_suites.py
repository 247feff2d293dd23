"""What the ONNX node suite and the real-model test share: the ONNX op types
mixprec imports (read from its op table), the op types of a graph, the file
`mixprec run` writes for an output, and the end of a run.

The importer's op table is the rows `{"OpType", &Importer::convertX, kForms}`
of the `Importer::*Ops()` functions in compiler/Import/*.cpp (OnnxOpRegistry.cpp's
findOp walks exactly those families), and the ONNX(OpType, ...) columns of
runtime/format/ScalarFns.def, which OnnxElementwise.cpp expands into rows.
Reading them here keeps one list: the
tests never keep their own copy that could drift from the importer.
"""
import glob
import os
import re

_SAFE = re.compile(r"[A-Za-z0-9_.-]")

_TABLE_FN = re.compile(r"llvm::ArrayRef<Importer::OpInfo>\s+Importer::(\w+Ops)\(\)\s*\{(.*?)\n\}", re.S)
_ROW = re.compile(r'\{\s*"([A-Za-z0-9_]+)"\s*,\s*&Importer::\w+')
_DEF_ROW = re.compile(r"ONNX\((\w+),\s*\{")


def supported_ops(source_dir):
    """Sorted op types of every row of every Importer::*Ops() table under
    SOURCE/compiler/Import; raises if no table is found (a moved importer
    must not silently make every op 'unsupported')."""
    ops = set()
    tables = 0
    for path in sorted(glob.glob(os.path.join(source_dir, "compiler", "Import", "*.cpp"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in _TABLE_FN.finditer(text):
            tables += 1
            ops.update(_ROW.findall(m.group(2)))
    with open(os.path.join(source_dir, "runtime", "format", "ScalarFns.def"), encoding="utf-8") as f:
        def_ops = _DEF_ROW.findall(f.read())
    if not def_ops:
        raise RuntimeError(f"no ONNX(...) column found in {source_dir}/runtime/format/ScalarFns.def")
    ops.update(def_ops)
    if tables == 0 or not ops:
        raise RuntimeError(f"no Importer::*Ops() op table found under {source_dir}/compiler/Import")
    return sorted(ops)


def graph_op_types(graph):
    """Op types of a GraphProto's nodes, subgraphs (If/Loop/Scan bodies) included;
    custom domains are written DOMAIN::Op."""
    types = set()
    for node in graph.node:
        types.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}")
        for attr in node.attribute:
            if attr.HasField("g"):
                types |= graph_op_types(attr.g)
            for g in attr.graphs:
                types |= graph_op_types(g)
    return types


def out_file(name):
    """`run`'s file name for graph output NAME (README: bytes outside
    [A-Za-z0-9_.-] and a leading '.' are %XX)."""
    return "".join(chr(c) if _SAFE.match(chr(c)) and not (i == 0 and c == ord(".")) else f"%{c:02X}"
                   for i, c in enumerate(name.encode())) + ".npy"


def finish(failures):
    """Prints the failures and the verdict; returns the exit status."""
    for line in failures:
        print(line)
    print(f"{len(failures)} failures" if failures else "OK")
    return 1 if failures else 0
