#!/usr/bin/env python3
"""Fails, listing them, when an op GraphOps.td defines appears as `mp.NAME`
in none of the given test files (bytecode-roundtrip.test: every mp op must
be in a round-trip file).

Usage: check_op_coverage.py GraphOps.td FILE...
"""
import re
import sys


def defined_ops(td_text):
    """The mnemonics of the `def Graph_XOp : Graph_<class><"mnemonic"...` records."""
    return set(re.findall(r'^def\s+Graph_\w+\s*:\s*Graph_\w+<\s*"(\w+)"', td_text, re.M))


def main():
    td, files = sys.argv[1], sys.argv[2:]
    with open(td) as f:
        ops = defined_ops(f.read())
    # A parse that finds almost nothing is a broken pattern, not coverage.
    if len(ops) < 50:
        sys.exit(f"{td}: found only {len(ops)} op definitions; has the def syntax changed?")
    used = set()
    for path in files:
        with open(path) as f:
            used |= set(re.findall(r"\bmp\.(\w+)", f.read()))
    missing = sorted(ops - used)
    if missing:
        sys.exit(f"mp ops in no round-trip file ({len(missing)}): {', '.join(missing)}; "
                 f"add them to tests/lit/dialects/graph/roundtrip*.mlir")
    print(f"{len(ops)} mp ops, all in the round-trip files")


if __name__ == "__main__":
    main()
