#!/usr/bin/env python3
"""Prints ModuleHashTest.cpp's XXH64 reference values from the `xxhash`
package (the reference C implementation's Python binding), which CI does not
install: run it in a scratch venv (`pip install xxhash`) and paste the
output into kXxh64Vectors when the lengths or seeds change."""
import xxhash


def pattern(n):
    """The test's bytes: the top byte of a 32-bit LCG (every byte value, no
    short period); ModuleHashTest.cpp's pattern() is the same."""
    out = bytearray(n)
    x = 12345
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = x >> 24
    return bytes(out)


LENGTHS = list(range(0, 70)) + [100, 255, 256, 1023, 4099, 65549, (1 << 20) + 31]
SEEDS = [0, 1, 0x9E3779B97F4A7C15]

if __name__ == "__main__":
    for n in LENGTHS:
        data = pattern(n)
        for s in SEEDS:
            print("    {%d, 0x%016xull, 0x%016xull}," % (n, s, xxhash.xxh64_intdigest(data, seed=s)))
