"""The ONNX op types mixprec imports, read from its op table.

The importer's op table is the rows `{"OpType", &Importer::convertX, kForms}`
of the `Importer::*Ops()` functions in compiler/Import/*.cpp (OnnxOpRegistry.cpp's
findOp walks exactly those families). Reading them here keeps one list: the
tests never keep their own copy that could drift from the importer.
"""
import glob
import os
import re

_TABLE_FN = re.compile(r"llvm::ArrayRef<Importer::OpInfo>\s+Importer::(\w+Ops)\(\)\s*\{(.*?)\n\}", re.S)
_ROW = re.compile(r'\{\s*"([A-Za-z0-9_]+)"\s*,\s*&Importer::\w+')


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
