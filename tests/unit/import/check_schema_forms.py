#!/usr/bin/env python3
"""Check the importer's ONNX schema forms against the installed onnx package.

Usage:
    check_schema_forms.py compiler/Import

Each op family's converter file (compiler/Import/*.cpp: OnnxGemm.cpp,
OnnxShape.cpp, ...) keeps, next to each converter, the forms of its op's ONNX
schema (`static const OpForm kXForms[] = {{since, minIn, maxIn, minOut, maxOut,
"attr ..."}, ...}`) and maps op types to them in the family's rows of the op
table (`{"Op", &Importer::convertX, kXForms}`), which findOp walks; the simple
element-wise ops' rows and forms are the ONNX(Op, forms...) columns of
runtime/format/ScalarFns.def (found from compiler/Import). For every
op in those rows and every opset from the op's first form up to kMaxOpset
(OnnxImporterImpl.h), the form in force must have exactly the input and
output counts and the attribute names of onnx.defs.get_schema(op, opset),
plus "*" exactly where onnx's checker accepts an attribute the schema does
not name; and the op must not exist in ONNX before its first form. A row's
table is looked up in the row's own file (the tables are file-static).
Prints one line per mismatch, then a summary; exits 1 on any mismatch or
when nothing was found.
"""

import os
import re
import sys

import onnx.checker
import onnx.defs
from onnx import helper

VARIADIC = 2147483647  # onnx's max_input for variadic inputs


def parse_form_rows(text):
    """[(since, min_in, max_in, min_out, max_out, attrs)] of OpForm initializers."""
    rows = []
    for r in re.finditer(r'\{(\d+), (\d+), (\w+), (\d+), (\w+),\s*"([^"]*)"\}', text):
        max_in = VARIADIC if r[3] == "kVariadic" else int(r[3])
        max_out = VARIADIC if r[5] == "kVariadic" else int(r[5])
        rows.append((int(r[1]), int(r[2]), max_in, int(r[4]), max_out,
                     tuple(sorted(r[6].split()))))
    return rows


def parse_forms(source):
    """{table name: [(since, min_in, max_in, min_out, max_out, attrs)]}."""
    return {m.group(1): parse_form_rows(m.group(2))
            for m in re.finditer(r"static const OpForm (\w+)\[\] = \{\n(.*?)\n\};", source, re.S)}


def parse_def_rows(path):
    """[(op, table name, {table name: forms})] of the ONNX(Op, forms...) columns
    of ScalarFns.def."""
    with open(path) as f:
        source = f.read()
    rows = []
    for m in re.finditer(r"ONNX\((\w+),((?:\s*\{[^{}]*\},?)+)\s*\)", source):
        table = f"ScalarFns.def's ONNX({m[1]})"
        rows.append((m[1], table, {table: parse_form_rows(m[2])}))
    return rows


def accepts_unknown_attributes(op, opset):
    """Whether onnx's checker accepts a node of `op` with an attribute its schema lacks."""
    schema = onnx.defs.get_schema(op, opset)
    node = helper.make_node(op, [f"in{i}" for i in range(schema.min_input)], ["out"],
                            name="n", not_an_attribute_of_any_op=1)
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {"": opset}
    try:
        onnx.checker.C.check_node(node.SerializeToString(), ctx,
                                  onnx.checker.C.LexicalScopeContext())
    except onnx.checker.ValidationError:
        return False
    return True


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    import_dir = argv[1]
    with open(os.path.join(import_dir, "OnnxImporterImpl.h")) as f:
        max_opset = int(re.search(r"constexpr int64_t kMaxOpset = (\d+);", f.read())[1])
    dispatch = []  # (op, table name, that file's tables)
    for name in sorted(os.listdir(import_dir)):
        if not name.endswith(".cpp"):
            continue
        with open(os.path.join(import_dir, name)) as f:
            source = f.read()
        tables = parse_forms(source)
        for op, table in re.findall(r'\{"(\w+)", &Importer::\w+, (\w+)\}', source):
            dispatch.append((op, table, tables))
    dispatch += parse_def_rows(os.path.join(import_dir, "..", "..", "runtime", "format",
                                            "ScalarFns.def"))
    if not dispatch:
        print(f"no OpForm tables or op table rows found in {import_dir}/*.cpp")
        return 1
    problems = []
    checked = 0
    for op, table, tables in dispatch:
        forms = tables.get(table)
        if not forms:
            problems.append(f"{op}: table {table} not found")
            continue
        first = forms[0][0]
        if first > 1:
            try:
                s = onnx.defs.get_schema(op, first - 1)
                problems.append(f"{op}: exists in ONNX from opset {s.since_version}, "
                                f"the forms start at {first}")
            except onnx.defs.SchemaError:
                pass
        for opset in range(first, max_opset + 1):
            s = onnx.defs.get_schema(op, opset)
            form = [f for f in forms if f[0] <= opset][-1]
            attrs = sorted(s.attributes) + (["*"] if accepts_unknown_attributes(op, opset) else [])
            want = (s.min_input, s.max_input, s.min_output, s.max_output, tuple(sorted(attrs)))
            if form[1:] != want:
                problems.append(f"{op} at opset {opset}: {table} says {form[1:]}, "
                                f"onnx {onnx.__version__} says {want}")
            checked += 1
    for p in problems:
        print(p)
    print(f"{len(dispatch)} ops, {checked} (op, opset) pairs up to opset {max_opset}: "
          f"{len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
