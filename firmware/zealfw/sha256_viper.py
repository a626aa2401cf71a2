"""SHA-256 of one 64-byte block, with no heap allocation: the device's generator words
(shared_spec/generator.md) without hashlib's per-digest garbage.

Why hand-written: MicroPython's hashlib makes a new hash object and a new 32-byte digest for
every block (hashlib.sha256 has no reset, no copy and no digest-into-buffer), 192 heap bytes
a block on a 32-bit board; a multi-attribute report draws ~9 words (2-3 blocks) and so
allocated ~530 B a report, above the 256 B goal. This function writes the digest into the
caller's buffer and keeps every 32-bit quantity in a machine register: viper's `uint`
arithmetic, which wraps at the machine word and never makes a Python int.

    digest1(out, block, w)
      block: 64 bytes, the whole padded message (the caller pads: a message of at most 55
             bytes, 0x80, zeros, its length in bits as a big-endian u64); read only
      out:   32 bytes, receives SHA-256(message)
      w:     256 bytes of scratch (the message schedule)

Viper is native code, so this module is compiled for the board's architecture (`zeal flash`
asks the board: zeal.board.firmware.NATIVE_MODULES) or on the board from source; where no
native code runs (CPython, a port without an emitter, an .mpy for another architecture) the
import fails and zealfw.words falls back to hashlib, which gives the same digests. Every
conformance vector of the generator checks this against hashlib on each target.

On a 64-bit port the machine word is 64 bits: the bits above 32 are garbage after a left
shift or an addition, so every value is masked with `m` (0xFFFFFFFF, read from memory: a
literal that large would be a Python int on a 32-bit port) before a right shift, and stores
through ptr32 keep the low 32 bits. Little-endian loads of the constants below: every port
MicroPython runs on (ARM, Xtensa, RISC-V, x86) is little-endian.
"""
import micropython

# FIPS 180-4 section 4.2.2's K[0..63] (the first 32 bits of the fractional parts of the cube
# roots of the first 64 primes), section 5.3.3's H0[0..7] (square roots of the first 8), and
# the mask 0xFFFFFFFF, as little-endian u32 (tests/test_firmware_static.py derives them). A
# bytearray: its data is on the heap and word-aligned (a bytes literal in an .mpy need not be,
# and an unaligned 32-bit load faults on Cortex-M0+ and Xtensa).
_K = bytearray(bytes.fromhex(
    "982f8a4291443771cffbc0b5a5dbb5e95bc25639f111f159a4823f92d55e1cab"
    "98aa07d8015b8312be853124c37d0c55745dbe72feb1de80a706dc9b74f19bc1"
    "c1699be48647beefc69dc10fcca10c246f2ce92daa84744adca9b05cda88f976"
    "52513e986dc631a8c82703b0c77f59bff30be0c64791a7d55163ca0667292914"
    "850ab72738211b2efc6d2c4d130d385354730a65bb0a6a762ec9c281852c7292"
    "a1e8bfa24b661aa8708b4bc2a3516cc719e892d1240699d685350ef470a06a10"
    "16c1a419086c371e4c774827b5bcb034b30c1c394aaad84e4fca9c5bf36f2e68"
    "ee828f746f63a5781478c8840802c78cfaffbe90eb6c50a4f7a3f9bef27871c6"
    "67e6096a85ae67bb72f36e3c3af54fa57f520e518c68059babd9831f19cde05b"
    "ffffffff"))


@micropython.viper
def digest1(out: ptr8, block: ptr8, w: ptr32):
    k = ptr32(_K)
    m = uint(k[72])
    t = 0
    while t < 16:  # the block as big-endian u32
        j = t << 2
        w[t] = ((uint(block[j]) << 24) | (uint(block[j + 1]) << 16)
                | (uint(block[j + 2]) << 8) | uint(block[j + 3]))
        t += 1
    while t < 64:  # the message schedule
        x = uint(w[t - 15]) & m
        y = uint(w[t - 2]) & m
        s0 = ((x >> 7) | (x << 25)) ^ ((x >> 18) | (x << 14)) ^ (x >> 3)
        s1 = ((y >> 17) | (y << 15)) ^ ((y >> 19) | (y << 13)) ^ (y >> 10)
        w[t] = uint(w[t - 16]) + s0 + uint(w[t - 7]) + s1
        t += 1
    a = uint(k[64])
    b = uint(k[65])
    c = uint(k[66])
    d = uint(k[67])
    e = uint(k[68])
    f = uint(k[69])
    g = uint(k[70])
    h = uint(k[71])
    t = 0
    while t < 64:  # a, b, ..., h stay masked: the right shifts below see 32 clean bits
        s1 = ((e >> 6) | (e << 26)) ^ ((e >> 11) | (e << 21)) ^ ((e >> 25) | (e << 7))
        t1 = h + s1 + ((e & f) ^ ((~e) & g)) + uint(k[t]) + uint(w[t])
        s0 = ((a >> 2) | (a << 30)) ^ ((a >> 13) | (a << 19)) ^ ((a >> 22) | (a << 10))
        t2 = s0 + ((a & b) ^ (a & c) ^ (b & c))
        h = g
        g = f
        f = e
        e = (d + t1) & m
        d = c
        c = b
        b = a
        a = (t1 + t2) & m
        t += 1
    w[0] = a + uint(k[64])
    w[1] = b + uint(k[65])
    w[2] = c + uint(k[66])
    w[3] = d + uint(k[67])
    w[4] = e + uint(k[68])
    w[5] = f + uint(k[69])
    w[6] = g + uint(k[70])
    w[7] = h + uint(k[71])
    t = 0
    while t < 8:  # the digest, big-endian
        x = uint(w[t])
        j = t << 2
        out[j] = x >> 24
        out[j + 1] = x >> 16
        out[j + 2] = x >> 8
        out[j + 3] = x
        t += 1
