#!/usr/bin/env python3
"""Runs a command with its stdout on a pseudo-terminal and copies what it
wrote there to this script's stdout (readable-ir.test: what mixprec prints
to a terminal). Exits with the command's status.

Usage: run_in_pty.py COMMAND [ARG]...
"""
import os
import pty
import subprocess
import sys


def main():
    leader, follower = pty.openpty()
    proc = subprocess.Popen(sys.argv[1:], stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    status = proc.wait()
    # A terminal turns "\n" into "\r\n".
    sys.stdout.write(b"".join(chunks).replace(b"\r\n", b"\n").decode(errors="replace"))
    sys.exit(status)


if __name__ == "__main__":
    main()
