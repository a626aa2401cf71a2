"""The boot key (shared_spec/generator.md): a fresh generator key every boot, device side.

Runs once, at boot (zealfw.start), and is freed after: nothing here is needed while
sampling. derive_boot_key mixes os.urandom, timing jitter and a persisted seed file that is
advanced and rewritten (temp file + rename) before the key is returned, so a reboot never
replays a stream.
"""
import hashlib
import os
import struct

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

try:
    from time import ticks_cpu, ticks_diff, ticks_us
except ImportError:  # CPython (the conformance runner also runs there)
    from time import perf_counter_ns as ticks_cpu

    def ticks_us():
        return ticks_cpu() // 1000

    def ticks_diff(a, b):
        return a - b

_SEED_FILE_LEN = const(36)  # 32-byte seed + u32 LE boot counter
_JITTER_ROUNDS = const(8)
_U32 = const(0xFFFFFFFF)


def _jitter():
    """Timing noise around os.urandom calls: low 16 bits of tick differences, as bytes.

    ticks_cpu() is 0 on ports without a cycle counter (unix); ticks_us still varies. This
    only adds entropy: the key is safe as long as any one input (urandom, seed) is secret.
    """
    buf = bytearray(4 * _JITTER_ROUNDS + 4)
    t0 = ticks_us()
    c0 = ticks_cpu()
    struct.pack_into("<I", buf, 0, t0 & _U32)
    for i in range(_JITTER_ROUNDS):
        os.urandom(1 + (i & 3))
        t1 = ticks_us()
        c1 = ticks_cpu()
        struct.pack_into("<HH", buf, 4 + 4 * i, ticks_diff(t1, t0) & 0xFFFF,
                         ticks_diff(c1, c0) & 0xFFFF)
        t0 = t1
        c0 = c1
    return buf


def _read_seed(path):
    """The 36-byte seed record, or None if absent or not exactly 36 bytes (half-written)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SEED_FILE_LEN + 1)
    except OSError:
        return None
    if len(data) != _SEED_FILE_LEN:
        return None
    return data


def _write_seed(path, seed, counter):
    """Write to path + ".tmp" and rename over path: a power cut leaves the old or the new.

    On littlefs and POSIX the rename replaces atomically. FAT's rename removes the old file
    first, so there is a moment with only the .tmp file: `_read_seed` falls back to it.
    """
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(seed + struct.pack("<I", counter))
    os.rename(tmp, path)
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()


def derive_boot_key(seed_path, extra=b""):
    """Advance the persisted seed and return (key, boot_counter) for this boot.

    new_seed = SHA-256(b"zeal-seed" || old_seed || urandom(32) || jitter || extra)
    key      = SHA-256(b"zeal-key"  || new_seed || urandom(32) || jitter' || extra)

    The new seed and boot_counter + 1 are written back (temp file + rename) *before* the key
    is returned, so a crash after sampling never restarts from the same seed. A missing or
    malformed seed file starts from a zero seed and counter 0 (urandom and jitter still make
    the key fresh). `extra` may carry e.g. machine.unique_id(). Returns the counter written.
    """
    rec = _read_seed(seed_path)
    if rec is None:
        rec = _read_seed(seed_path + ".tmp")  # FAT: power cut between remove and rename
    if rec is None:
        old_seed = bytes(32)
        counter = 0
    else:
        old_seed = rec[0:32]
        counter = struct.unpack_from("<I", rec, 32)[0]
    h = hashlib.sha256(b"zeal-seed")
    h.update(old_seed)
    h.update(os.urandom(32))
    h.update(_jitter())
    h.update(extra)
    new_seed = h.digest()
    counter = (counter + 1) & _U32
    _write_seed(seed_path, new_seed, counter)
    h = hashlib.sha256(b"zeal-key")
    h.update(new_seed)
    h.update(os.urandom(32))
    h.update(_jitter())
    h.update(extra)
    return h.digest(), counter
