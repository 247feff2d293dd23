#!/usr/bin/env python3
"""Reports the long functions and long files of a source tree.

    python3 scripts/code_counts.py [ROOT] [--function-lines N] [--file-lines N]

Prints (a) each C/C++ function body over N lines (150 by default), longest
first, as "LINES PATH:LINE: SIGNATURE", (b) each C/C++ source file over
N lines (1000 by default), as "LINES PATH", and (c) each hand-written
switch case over graph::ScalarFn, as "PATH:LINE" (a `case ScalarFn::X:`
outside a #define: the cases an X-macro expansion of
runtime/format/ScalarFns.def writes are generated and not counted). It skips build trees (any
folder with a CMakeCache.txt, and folders named build or build-*) and
hidden folders, so generated code is left out.

The project aims at no function over 150 lines; this is a report of where
it stands, not a gate: it always exits 0.

A function is found by braces, with comments, strings and preprocessor
lines blanked first: a `{` whose head ends in `)` (with const, override,
noexcept, a trailing return type or a constructor's initializer list after
it), or NB_MODULE(...). Lambdas and blocks inside a function count toward
that function. It is a heuristic, not a parser: a function-like macro
without a semicolon can fool it.
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = ('.cpp', '.cc', '.h', '.hpp', '.c')


def blank(text):
    """`text` with everything but newlines replaced by spaces."""
    return re.sub(r'[^\n]', ' ', text)


def strip_source(src):
    """`src` with comments, string and character literals (their contents)
    and preprocessor lines blanked, keeping every line where it was."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(src[i:j]))
            i = j
        elif src.startswith('R"', i) and re.match(r'R"([^(\s"\\]*)\(', src[i:]):
            m = re.match(r'R"([^(\s"\\]*)\(', src[i:])
            end = ')' + m.group(1) + '"'
            j = src.find(end, i)
            j = n if j < 0 else j + len(end)
            out.append(blank(src[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c and src[j] != '\n':
                j += 2 if src[j] == '\\' else 1
            out.append(c + blank(src[i + 1:j]) + (c if j < n else ''))
            i = j + 1
        elif c == '#' and (i == 0 or src[i - 1] == '\n'):
            j = i
            while True:  # a directive continues over trailing backslashes
                k = src.find('\n', j)
                k = n if k < 0 else k
                if k < n and src[k - 1] == '\\':
                    j = k + 1
                    continue
                break
            out.append(blank(src[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return ''.join(out)


SCOPE_HEAD = re.compile(r'(.*\b)?(namespace|class|struct|union|enum)\b')
FUNCTION_TAIL = re.compile(
    r'\)\s*(const|override|noexcept|final|->\s*[\w:<>&*, ]+|\s)*$')
INITIALIZER_LIST = re.compile(r'\)\s*:\s*')


def functions(path):
    """(body lines, first line, signature) of each outermost function of
    the file at `path`."""
    with open(path, errors='replace') as f:
        raw = f.read()
    s = strip_source(raw)
    stack = []  # (kind, offset of '{'): kind is scope, fn or block
    last = 0  # where the current statement or head began
    found = []
    for i, c in enumerate(s):
        if c == '{':
            head = s[last:i].strip()
            kind = 'block'
            if all(k != 'fn' for k, _ in stack):
                if SCOPE_HEAD.match(head) and not FUNCTION_TAIL.search(head):
                    kind = 'scope'
                elif (FUNCTION_TAIL.search(head) or INITIALIZER_LIST.search(head) or
                      head.startswith('NB_MODULE')):
                    kind = 'fn'
            stack.append((kind, i))
            last = i + 1
        elif c == '}':
            if stack:
                kind, start = stack.pop()
                if kind == 'fn':
                    first = s.count('\n', 0, start)
                    lines = s.count('\n', 0, i) - first + 1
                    # The signature: the line that opens its parameter list.
                    paren = s.rfind('(', 0, start)
                    line_start = s.rfind('\n', 0, max(0, paren)) + 1
                    signature = s[line_start:start].strip().split('\n')[0]
                    sig_line = s.count('\n', 0, line_start) + 1
                    found.append((lines, sig_line if paren >= 0 else first + 1,
                                  ' '.join(signature.split())))
            last = i + 1
        elif c == ';':
            last = i + 1
    return found


SCALAR_FN_CASE = re.compile(r'^\s*case\s+(?:\w+::)*ScalarFn::\w+\s*:')


def scalar_fn_cases(path):
    """Line numbers of the hand-written `case ScalarFn::X:` lines of a file
    (lines continuing a #define are an X-macro's, not counted)."""
    found = []
    with open(path, errors='replace') as f:
        lines = f.read().split('\n')
    in_define = False
    for number, line in enumerate(lines, 1):
        directive = line.lstrip().startswith('#')
        if SCALAR_FN_CASE.match(line) and not in_define and not directive:
            found.append(number)
        in_define = (directive or in_define) and line.rstrip().endswith('\\')
    return found


def source_files(root):
    """Paths of the C/C++ sources under `root`, build trees and hidden
    folders left out, in a stable order."""
    for folder, subfolders, names in os.walk(root):
        if 'CMakeCache.txt' in names:
            subfolders[:] = []
            continue
        subfolders[:] = sorted(
            d for d in subfolders
            if not d.startswith('.') and d != 'build' and not d.startswith('build-'))
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', nargs='?', default='.', help='the tree to read (default .)')
    parser.add_argument('--function-lines', type=int, default=150,
                        help='report functions longer than this (default 150)')
    parser.add_argument('--file-lines', type=int, default=1000,
                        help='report files longer than this (default 1000)')
    args = parser.parse_args()

    long_functions, long_files, fn_cases = [], [], []
    for path in source_files(args.root):
        rel = os.path.relpath(path, args.root)
        try:
            with open(path, errors='replace') as f:
                count = f.read().count('\n')
            if count > args.file_lines:
                long_files.append((count, rel))
            fn_cases += [(rel, line) for line in scalar_fn_cases(path)]
            for lines, line, signature in functions(path):
                if lines > args.function_lines:
                    long_functions.append((lines, rel, line, signature))
        except (OSError, ValueError, RecursionError) as e:
            print(f'skipped {rel}: {e}', file=sys.stderr)

    print(f'functions over {args.function_lines} lines: {len(long_functions)}')
    for lines, rel, line, signature in sorted(long_functions, key=lambda f: (-f[0], f[1], f[2])):
        print(f'{lines:6d} {rel}:{line}: {signature[:90]}')
    print(f'files over {args.file_lines} lines: {len(long_files)}')
    for count, rel in sorted(long_files, key=lambda f: (-f[0], f[1])):
        print(f'{count:6d} {rel}')
    print(f'hand-written ScalarFn switch cases: {len(fn_cases)}')
    for rel, line in fn_cases:
        print(f'{rel}:{line}')
    return 0


if __name__ == '__main__':
    try:
        main()
    except Exception as e:  # a report, not a gate: never fail the caller
        print(f'code_counts: {e}', file=sys.stderr)
    sys.exit(0)
