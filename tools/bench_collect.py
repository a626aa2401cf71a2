"""Collector throughput over a pty, as a ratio to a raw byte copy of the same stream.

    python tools/bench_collect.py                  # 500k reports, m = 8, batch 64
    python tools/bench_collect.py --bits 4 --batch 255
    python tools/bench_collect.py --firmware -n 100000   # stream recorded from the firmware

One byte stream (HELLO, DATA frames, a HELLO every 16 frames, STATUS STOPPED) is built once:
by default with the host's reference encoder (the wire vectors pin it to the firmware's
bytes), with --firmware by recording the real firmware under the MicroPython unix port.
It is then pushed, as fast as the pty takes it, through a fresh raw pty to

  raw copy   pyserial reading what is waiting (else the next byte) until every byte has
             arrived, no decoding: the ceiling of this transport;
  collector  zeal.collect.collector.Collector into a new SQLite file, until the STOPPED status is
             committed: deframing, CRC, decoding, FrameRecords, transactions every 0.2 s.

Best of R runs each, alternately. The ratio is collector reports/s over raw-copy reports/s
(the stream's reports over the raw copy's time). A real serial line is far slower than both:
a 115200-baud UART carries about 9700 reports/s at m = 8, batch 64 (the last line says how
many such lines the collector keeps up with).
"""
import argparse
import os
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))

from zeal import wire  # noqa: E402
from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.grid import reports  # noqa: E402
from zeal.wire import transport  # noqa: E402
from zeal.collect.collector import Collector  # noqa: E402
from zeal.collect.store import Store  # noqa: E402
from zeal.collect.virtual import Pty, VirtualDevice  # noqa: E402

LO, HI, EPS = 23.5, 83.9, 1.0
DEVICE = b"bench-01"


def encoded_stream(prof, n, batch, seed):
    """HELLO, ceil(n / batch) DATA frames of random on-grid reports, STATUS STOPPED."""
    rng = np.random.default_rng(seed)
    lows = [reports.to_low(prof, prof.k_lo + int(j)) for j in rng.integers(0, prof.n_cells, n)]
    fp = bytes.fromhex(prof.fingerprint)[:8]
    nonce = bytes(rng.integers(0, 256, 8, dtype=np.uint8))
    session = wire.session_bytes(DEVICE, fp, 1, nonce)
    out = []
    for seq, i in enumerate(range(0, n, batch)):
        if seq % 16 == 0:  # a HELLO every 16 DATA frames, as the firmware's default
            out.append(wire.encode_hello(device_id=DEVICE, fingerprint=fp, boot=1,
                                         bits=prof.bits, batch=batch, nonce=nonce,
                                         next_seq=seq))
        out.append(wire.encode_data(seq=seq, bits=prof.bits, reports=lows[i:i + batch],
                                    session=session))
    out.append(wire.encode_status(code=4, ticks=n, message="stopped"))
    return b"".join(out)


def firmware_stream(prof, n, batch, seed):
    rng = np.random.default_rng(seed)
    with VirtualDevice(rng.uniform(LO, HI, n), profile=prof, batch=batch) as dev:
        port = transport.open_port(dev.port)
        dev.start()
        dec, out, done = wire.Decoder([prof]), bytearray(), False
        while not done:
            chunk = transport.read_chunk(port)
            out += chunk
            done = any(isinstance(e, wire.Status) and e.code == 4 for e in dec.feed(chunk))
        port.close()
    return bytes(out)


def push(line, data, started):
    started.append(time.perf_counter())
    line.write(data)


def raw_copy(data):
    """Seconds from the first write to the last byte read."""
    with Pty() as line:
        port = transport.open_port(line.port)
        started = []
        writer = threading.Thread(target=push, args=(line, data, started))
        got = 0
        writer.start()
        while got < len(data):  # what is waiting, else block for the next byte
            got += len(port.read(max(1, port.in_waiting)))
        t = time.perf_counter() - started[0]
        writer.join()
        port.close()
    return t


def collect(data, prof, folder, run):
    """Seconds from the first write until run() returns (the last frame committed)."""
    with Pty() as line, Store(os.path.join(folder, "bench%d.db" % run)) as store:
        col = Collector([line.port], store, profiles=[prof])
        started = []

        def feed():
            while col.progress.connected < 1:  # pyserial flushes the input on open
                time.sleep(0.001)
            push(line, data, started)

        writer = threading.Thread(target=feed)
        writer.start()
        progress = col.run(until_stopped=True, duration=600)
        t = time.perf_counter() - started[0]
        writer.join()
    return t, progress


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=500_000, help="reports in the stream (500000)")
    ap.add_argument("--bits", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="best of this many (3)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--firmware", action="store_true",
                    help="record the stream from the firmware (MicroPython unix port)")
    args = ap.parse_args(argv)

    prof = P.from_bits(LO, HI, EPS, args.bits)
    make = firmware_stream if args.firmware else encoded_stream
    print("building the stream (%s) ..." % ("firmware" if args.firmware else "host encoder"),
          file=sys.stderr)
    data = make(prof, args.n, args.batch, args.seed)
    n_frames = -(-args.n // args.batch)
    t_raw = t_col = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.repeats):
            t_raw = min(t_raw, raw_copy(data))
            t, progress = collect(data, prof, folder, run)
            if progress.reports != args.n or progress.errors or progress.gaps:
                sys.exit("bench: collector stored %d of %d reports (%d rejects, %d gaps)"
                         % (progress.reports, args.n, progress.errors, progress.gaps))
            t_col = min(t_col, t)
            print("  run %d: raw %.3f s, collector %.3f s" % (run + 1, t_raw, t), file=sys.stderr)

    mb = len(data) / 1e6
    print("stream: %d reports, m = %d, batch %d, %d DATA frames, %.2f MB (%s)"
          % (args.n, args.bits, args.batch, n_frames, mb,
             "firmware" if args.firmware else "host encoder"))
    print("%-34s %9s %9s %12s %7s" % ("path (pty, pyserial)", "seconds", "MB/s", "reports/s",
                                      "ratio"))
    raw_rate = args.n / t_raw
    for name, t in (("raw byte copy", t_raw), ("collector -> SQLite (committed)", t_col)):
        rate = args.n / t
        print("%-34s %9.3f %9.2f %12.0f %7.3f" % (name, t, mb / t, rate, rate / raw_rate))
    line = 115200 / 10 / (len(data) / args.n)  # 8N1: 10 bits on the line per byte
    print("a 115200-baud UART carries %.0f reports/s of this stream: the collector keeps up "
          "with %.0f such lines" % (line, args.n / t_col / line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
