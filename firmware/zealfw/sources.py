# Sensor sources: what they share. A source's `read()` returns one reading's value, an int,
# and sets `.kind`:
#   KIND_RAW  - a raw count, turned into a reading by the profile's exact calibration
#   KIND_F32  - a float32 bit pattern (what struct.pack('<f', x) gives), returned as its
#               high 16 bits with the low 16 bits in `.lo` (a pattern from 2^30 on, every
#               reading of magnitude 2 or more, would be a heap int on a 32-bit board)
#   KIND_F64  - a float64 bit pattern, returned as its high 32 bits with the low 32 bits in
#               `.lo` (so no 64-bit int is made: above 2^62 it would be a heap int)
# or None when the source is exhausted (replay). A reading is never handed on as a float:
# on ESP32/RP2040 floats are 32-bit, and the bit pattern is the exact value. A reading that
# could not be taken (a sensor error; for replay a blank, bad or overlong line; for a GPS no
# fix or a bad sentence) raises SourceError; the main loop then replaces it by the profile's
# public value (it still makes its report: every sampling tick yields exactly one).
#
# One module per sensor kind, imported only when configured (zealfw.build builds the source
# from the config's "sensor" object, which zealfw.start has read):
#   {"kind": "adc", "pin": 26 [, "atten": 3]}   src_adc: machine.ADC on a pin, read_u16()
#   {"kind": "adc", "channel": 4}               src_adc: machine.ADC(channel); RP2040
#   {"kind": "rp2040_temp"}                     channel 4 is the internal temperature sensor
#   {"kind": "callable", "module": M, "function": F}   src_callable
#   {"kind": "replay"}                          src_replay: lines on the serial input
#   {"kind": "replay", "file": "zeal_replay.txt"}  src_replay: lines from a file on the board
#   {"kind": "gps", "box": [LON_LO, LON_HI, LAT_LO, LAT_HI], "order": L [, "sentence": "RMC"]
#    [, "uart": {"id": N [, "baudrate": 9600, "rx": PIN, "tx": PIN]} | "file": NAME]}
#                                               src_gps: NMEA sentences from a GPS module's
#                                               UART (or replayed: the serial input, a file);
#                                               the reading, a raw count, is the Hilbert
#                                               index of the fix's cell (profile over
#                                               [0, 4^L - 1], identity calibration); config
#                                               errors (ValueError) are STATUS CONFIG
#
# Per reading nothing is allocated by a source but, for a raw count, its int: no
# (kind, value) tuple, the replay line is read byte by byte into a buffer made once
# (`readinto`, not `read(1)`) and parsed in place. (The GPS source, at 1 Hz, parses each
# sentence of its type with zealfw.nmea, which allocates: see src_gps.)
try:
    from micropython import const
except ImportError:  # CPython: the transcript tests run the loop there too

    def const(x):
        return x

# The values, inlined in every module that uses them (`_KIND_F32 = const(1)  # =
# sources.KIND_F32`): a global name here would be interned, hence kept, for good.
#   KIND_RAW = 0, KIND_F32 = 1, KIND_F64 = 2
#   control lines: b"!stop", b"!hello"
#   LINE_MAX = 40: a longer replay line is a bad line, never cut and parsed (src_gps: 96,
#   an NMEA sentence is at most 82)


class SourceError(Exception):
    """A reading could not be taken; the loop replaces it by the public value."""


def line_is(line, n, word):
    """line[0:n] == word, compared in place (slicing the line buffer would allocate)."""
    if n != len(word):
        return False
    for i in range(n):
        if line[i] != word[i]:
            return False
    return True
