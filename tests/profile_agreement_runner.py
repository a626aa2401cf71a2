"""Device side of tests/test_profile_agreement.py: runs on the MicroPython unix port (and on
CPython) with MICROPYPATH/PYTHONPATH = firmware.

stdin, one request a line:
  hex bytes of a profile file  ->  "ok <fingerprint>" or "err <reason>"
  "mem <path>"                  ->  "mem <allocated> <retained> <reason or fingerprint>":
                                    bytes allocated while loading the file with the
                                    collector off (so nothing is reclaimed: an upper bound of
                                    the peak), and bytes still held after a collection
"end"                           ->  exit
"""
import gc
import sys
from binascii import unhexlify

from zealfw import profile as FP


def check(data):
    try:
        p = FP.loads(data)
    except FP.ProfileError as exc:
        return "err " + exc.reason
    return "ok " + p.fingerprint


def mem(path):
    gc.collect()
    before = gc.mem_alloc()
    gc.disable()
    try:
        p = FP.load(path)
        result = p.fingerprint
    except FP.ProfileError as exc:
        p = None
        result = exc.reason
    allocated = gc.mem_alloc() - before
    gc.enable()
    gc.collect()
    retained = gc.mem_alloc() - before
    return "mem %d %d %s" % (allocated, retained, result)


def main():
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        line = line.strip()
        if line == "end":
            break
        if line.startswith("mem "):
            out = mem(line[4:])
        else:
            out = check(unhexlify(line))
        sys.stdout.write(out + "\n")


main()
