"""Scale: wall time and peak memory of analyze, export and compress as the store grows.

    python tools/bench_scale.py                # 10^5, 10^6, 10^7 reports x 1, 1000 devices
    python tools/bench_scale.py --sizes 1e5,1e6 --json scale.json
    python tools/bench_scale.py --sizes 1e8    # see "Disk" below
    python tools/bench_scale.py --pg postgresql://USER@HOST/DB   # PostgreSQL too
    python tools/bench_scale.py --pg temp      # ... on a throw-away local cluster
    python tools/bench_scale.py --make-store FILE --reports N [--devices D] [--bits 4]

The issue "Scale: a billion reports in constant memory": the commands that read a whole store
must take time linear in n and memory that does not grow with n.

Stores. One 4-bit grid profile (lo 23.5, hi 83.9, epsilon 1; 15 cells). Its reports are made
by the host's bulk sampler (zeal.mechanism.grid.bulk, statistical mode: numpy words, which is
fine for a benchmark and never for a device) from uniform readings, packed 64 to a DATA frame
by the host wire code (zeal.wire.bits.pack_bits for a whole block of frames, each frame
framed by zeal.wire.codec.encode_data_payload; the first frame is checked to be byte for byte
what the reference encoder wire.encode_data makes), with a HELLO every 16 DATA frames and a
STATUS STOPPED at the end, as the firmware sends them. D devices (default 1) share the frames
round-robin: frame f is device f mod D's frame number f div D, each device its own session
(boot 1, a random nonce) and its own line. Each line's bytes go through what the serial
collector runs on what it reads: zeal.collect.stream.Stream (deframing, CRC, sessions,
sequence numbers, events), zeal.collect.writer.Writer (links with their byte counts, one
transaction per line and block, loss accounting) into zeal.collect.store; only the ptys and
the reader threads are left out (tools/bench_collect.py measures those). So the store holds
what a real collection writes: the profile, devices, sessions (HELLO events), links, frames,
STATUS events; the build checks that every report was stored, nothing rejected, nothing lost.
Built stores are kept in --cache (default: zeal-bench-scale in the system's temp folder),
named by m, n, D and the seed, and reused by later runs.

Steps, on every store, each a child process timed by wall clock, with its peak RSS (its
ru_maxrss from wait4; started by a small launcher, since a child forked from this process
would count this process's RSS as its own):
  baseline         read every payload blob (sqlite3, or psycopg for PostgreSQL) and sum the
                   decoded reports with numpy (the m-bit fields unpacked with shifts and
                   masks): what reading the store costs at the least. Its sum of offsets is
                   checked against zeal's decoder (zeal.analysis.decode) on the smallest store.
  analyze --db     zeal analyze --db S --json
  export parquet   zeal export --db S --format parquet -o F
  compress         zeal compress --db S --out A
  analyze archive  zeal analyze --archive A --json
Best of --repeats runs (default 1). The table gives, per backend, size and device count, each
step's time as a ratio to the baseline's on the same store, its peak RSS in MB, and the
growth exponents a and b of time ~ n^a and RSS ~ n^b (log-log slope from the previous size;
the last lines fit all sizes, 3 or more). Constant memory is b near 0, linear time a near 1;
at small n the start-up of Python and its imports is most of every step (a, b near 0 there
say little). Also `zeal --version` against `python -c "import numpy"` (best of 5 each): the
CLI's start-up cost. A step that fails is a row "failed: ..." (exit status 1). With --pg the
stores are built the same way into databases zeal_scale_* on that server (the URL's user
must be allowed CREATE DATABASE; a database found whole is reused).

Disk (measured at 10^7): a store takes about 4 bytes per report (260 bytes per DATA frame of
64 reports, with its key and index); the Parquet export about 1.2 bytes per report and the
archive 0.5, each deleted after its step. So --sizes 1e8 needs about 0.4 GB per device count
for the stores (0.8 GB for the default 1 and 1000 devices) and about 0.2 GB more while export
and compress run; building them takes about 1.5 and 2.5 minutes. The tool checks the cache
folder's free space first and refuses, in one line, when it is short.
"""
import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = os.path.join(ROOT, "host")

LO, HI, EPS = 23.5, 83.9, 1.0
BATCH = 64                 # reports per DATA frame
HELLO_EVERY = 16           # a HELLO every 16 DATA frames, as the firmware's default
BLOCK_FRAMES = 16384       # frames generated, decoded and committed at a time
BUILD_VERSION = 1          # part of a cached store's name: bump when the build changes
DEFAULT_SIZES = (10 ** 5, 10 ** 6, 10 ** 7)
DEFAULT_DEVICES = (1, 1000)
STORE_BYTES_PER_REPORT = 4.5     # measured: 4.0-4.1 at 10^7 (260 bytes per frame), plus slack
EXPORT_BYTES_PER_REPORT = 3.0    # the Parquet file (1.2) or the archive (0.5), plus slack
VERIFY_MAX = 10 ** 6       # the baseline's sum is checked against zeal's decoder up to this n
STEPS = ("baseline", "analyze --db", "export parquet", "compress", "analyze archive")


class BenchError(Exception):
    """A one-line error for the user (printed as `zeal: ...`, exit status 2)."""


def zeal_modules():
    """Put this checkout's host package first on sys.path. zeal is imported inside the
    functions that use it, never at the top: the baseline child runs this file too, and
    must load nothing but sqlite3 (or psycopg) and numpy."""
    if HOST not in sys.path:
        sys.path.insert(0, HOST)


def grid_profile(bits):
    zeal_modules()
    from zeal.mechanism.grid import profile as P

    return P.from_bits(LO, HI, EPS, bits)


# ---- building a store through the collector's code ---------------------------------------------
def device_ids(devices):
    """D device ids of 8 printable bytes ("sc000000", ...), as the firmware pads them."""
    return [("sc%06d" % i).encode() for i in range(devices)]


class FeedSource:
    """What zeal.collect.writer.Writer needs of its source, for lines fed from memory: the
    streams, nothing queued between decoding and the writer, nothing to hold while it
    writes (one thread), a plain wait before trying the store again."""

    interrupted = False

    def __init__(self, streams):
        self.streams = streams

    @staticmethod
    def queued_frames():
        return 0

    @staticmethod
    def holding():
        return contextlib.nullcontext()

    @staticmethod
    def release(seconds):
        time.sleep(seconds)


def check_shape(n, devices):
    """Every device sends at least one DATA frame (BenchError otherwise)."""
    if n < 1 or devices < 1:
        raise BenchError("a store needs at least one report and one device")
    if devices > -(-n // BATCH):
        raise BenchError("%d reports make %d DATA frames of %d: too few for %d devices (each "
                         "sends at least one)" % (n, -(-n // BATCH), BATCH, devices))


def build(target, n, devices, bits, seed, say=None):
    """Build the store `target` (an SQLite path or a postgresql:// URL, empty) of n reports on
    `devices` lines (see the module docstring). Returns the store's figures (Store.meta:
    frames, reports, devices, events, links, bytes read on the links) and build_s."""
    zeal_modules()
    from zeal import wire
    from zeal.collect.progress import Devices, Progress
    from zeal.collect.store import open_store
    from zeal.collect.stream import Stream
    from zeal.collect.writer import Writer
    from zeal.mechanism.grid import bulk
    from zeal.wire.bits import pack_bits
    from zeal.wire.codec import encode_data_payload

    check_shape(n, devices)
    prof = grid_profile(bits)
    if (BATCH * bits) % 8:
        raise BenchError("--bits %d: frames of %d reports are not whole bytes" % (bits, BATCH))
    frame_bytes = BATCH * bits // 8
    rng = np.random.default_rng(seed)
    fp8 = bytes.fromhex(prof.fingerprint)[:8]
    ids = device_ids(devices)
    nonces = [bytes(rng.integers(0, 256, 8, dtype=np.uint8)) for _ in ids]
    sessions = [wire.session_bytes(d, fp8, 1, nonce) for d, nonce in zip(ids, nonces)]
    add = prof.k_lo - prof.wire_base          # offset j -> the m bits sent
    n_frames = -(-n // BATCH)
    made = [0] * devices                      # reports each device made (its STATUS ticks)

    store = open_store(target)
    try:
        store.add_profile(prof)
        profiles = store.profiles()
        streams = [Stream("bench:%s" % d.decode(), wire.Decoder(profiles)) for d in ids]
        source = FeedSource(streams)
        progress = Progress()
        progress.devices = Devices(store)
        writer = Writer(store, progress, source, log=say or (lambda text: None))
        for p in streams:
            writer.take(("connect", p, None))

        def feed(p, data):
            p.nbytes += len(data)
            writer.take(("data", p, (p.decode(data), p.nbytes)))
            writer.commit(p)

        started = time.monotonic()
        checked = False
        for f0 in range(0, n_frames, BLOCK_FRAMES):
            f1 = min(n_frames, f0 + BLOCK_FRAMES)
            r0, r1 = f0 * BATCH, min(n, f1 * BATCH)
            x = rng.uniform(LO, HI, r1 - r0)
            lows = bulk.sample_offsets_fast(prof, x, rng) + add
            packed = pack_bits(lows.astype(np.uint64), bits)
            chunks = [[] for _ in range(devices)]
            for f in range(f0, f1):
                d, seq = f % devices, f // devices
                out = chunks[d]
                if seq % HELLO_EVERY == 0:
                    out.append(wire.encode_hello(device_id=ids[d], fingerprint=fp8, boot=1,
                                                 bits=bits, batch=BATCH, nonce=nonces[d],
                                                 next_seq=seq))
                a = (f - f0) * BATCH
                count = min(BATCH, r1 - r0 - a)
                if count == BATCH:
                    out.append(encode_data_payload(
                        seq=seq, count=count, session=sessions[d],
                        payload=packed[(f - f0) * frame_bytes:(f - f0 + 1) * frame_bytes]))
                    if not checked:  # the block packing is the reference encoder's, byte for byte
                        want = wire.encode_data(seq=seq, bits=bits, session=sessions[d],
                                                reports=lows[a:a + count].tolist())
                        if out[-1] != want:
                            raise BenchError("the packed DATA frame differs from "
                                             "wire.encode_data's")
                        checked = True
                else:  # the last frame, shorter
                    out.append(wire.encode_data(seq=seq, bits=bits, session=sessions[d],
                                                reports=lows[a:a + count].tolist()))
                made[d] += count
            for d, out in enumerate(chunks):
                if out:
                    feed(streams[d], b"".join(out))
            if say is not None:
                say("  built %d of %d frames (%.0f s)" % (f1, n_frames,
                                                          time.monotonic() - started))
        for d, p in enumerate(streams):
            feed(p, wire.encode_status(code=wire.STOPPED, ticks=made[d], message="stopped"))
            writer.take(("disconnect", p, ("", p.nbytes)))
        meta = store.meta()
    finally:
        store.close()
    meta["build_s"] = time.monotonic() - started
    if (progress.reports != n or meta["reports"] != n or progress.gaps or progress.rejects
            or progress.unresolved or progress.stopped != devices):
        raise BenchError("the build stored %d of %d reports (%d in the store; %d rejects, "
                         "%d lost, %d unresolved, %d of %d devices stopped)"
                         % (progress.reports, n, meta["reports"], sum(progress.rejects.values()),
                            progress.gaps, progress.unresolved, progress.stopped, devices))
    return meta


def make_store(path, n, devices, bits, seed, say=None):
    """Build the SQLite file `path` (refused if it exists): into a temporary name beside it,
    renamed when complete, so an interrupted build leaves nothing that looks whole."""
    if os.path.exists(path):
        raise BenchError("%s exists: give a new file" % path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BenchError("no folder %s" % folder)
    part = path + ".part"
    for extra in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(part + extra)
    try:
        meta = build(part, n, devices, bits, seed, say)
        os.replace(part, path)
    finally:
        for extra in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(part + extra)
    return meta


# ---- the baseline: payload blobs -> numpy sum ----------------------------------------------------
def sum_payloads(db, bits):
    """The baseline child: every DATA payload of the store (sqlite3, or psycopg for a URL),
    unpacked with numpy (reports LSB first, m bits each, m dividing 8) and summed. Prints
    JSON {"frames", "reports", "sum_lows"} (the padding bits of a short frame are zero, so
    they add nothing)."""
    if 8 % bits:
        raise BenchError("the baseline reads reports of 1, 2, 4 or 8 bits, not %d" % bits)
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    shifts = np.arange(per, dtype=np.uint8) * np.uint8(bits)
    sql = "SELECT count, payload FROM frames WHERE vector = 0"
    if db.startswith(("postgresql://", "postgres://")):
        import psycopg

        conn = psycopg.connect(db)
        cur = conn.cursor(name="zeal_scale_baseline")  # server-side: rows come in pages
    else:
        import sqlite3
        from urllib.parse import quote

        conn = sqlite3.connect("file:%s?mode=ro" % quote(os.path.abspath(db)), uri=True)
        cur = conn.cursor()
    frames = reports = total = 0
    try:
        cur.execute(sql)
        while True:
            rows = cur.fetchmany(65536)
            if not rows:
                break
            frames += len(rows)
            reports += sum(r[0] for r in rows)
            packed = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.uint8)
            lows = (packed[:, None] >> shifts) & mask   # (bytes, reports per byte)
            total += int(lows.sum(dtype=np.uint64))
    finally:
        conn.close()
    print(json.dumps({"frames": frames, "reports": reports, "sum_lows": total}))


def decoder_sum(target, prof):
    """(reports, sum of offsets j) of the store by zeal's own decoder, page by page."""
    zeal_modules()
    from zeal.analysis.decode import decode_frames
    from zeal.collect.store import open_store

    n = total = 0
    store = open_store(target, read_only=True)
    try:
        for rows in store.iter_frames(fingerprint=prof.fingerprint):
            j = decode_frames(prof, rows)
            n += j.size
            total += int(j.sum())
    finally:
        store.close()
    return n, total


# ---- running a child and measuring it ------------------------------------------------------------
# A child's ru_maxrss starts from the RSS of the process it was forked from (Linux carries the
# high-water mark of the forked copy across exec), and this process holds numpy, zeal and
# pyarrow: so each child is started by this small launcher (python -S, a few MB, far below any
# child measured), which forks it, times it from fork to exit, waits for it without reaping it
# (waitid WNOWAIT: a timeout's kill never reaches a reused pid), then reaps it with wait4 for
# its own rusage. argv: stdout file, stderr file, timeout (s), command...; prints
# [seconds, ru_maxrss, wait status, killed].
LAUNCHER = r"""
import os, signal, sys, time
out, err, timeout, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
fds = [os.open(os.devnull, os.O_RDONLY)] + [
    os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for p in (out, err)]
killed = []
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
def kill(*_):
    killed.append(1)
    os.kill(pid, signal.SIGKILL)
signal.signal(signal.SIGALRM, kill)
signal.setitimer(signal.ITIMER_REAL, timeout)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
t = time.perf_counter() - t0
signal.setitimer(signal.ITIMER_REAL, 0)
_, status, usage = os.wait4(pid, 0)
print("%r %d %d %d" % (t, usage.ru_maxrss, status, len(killed)))
"""
RSS_UNIT = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere


def run_child(cmd, folder, timeout):
    """Run cmd through LAUNCHER: (seconds of wall clock, peak RSS in bytes, exit code, stdout,
    stderr)."""
    out_path, err_path = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
    env = dict(os.environ)  # the zeal of this checkout, whatever else is installed
    env["PYTHONPATH"] = os.pathsep.join([HOST] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH")
                                                  else []))
    done = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, out_path, err_path,
                           str(timeout)] + list(cmd), capture_output=True, text=True, env=env)
    try:
        t, rss, status, killed = done.stdout.split()
    except ValueError:
        raise BenchError("the launcher failed: %s" % last_line(done.stderr)) from None
    with open(out_path, "rb") as fh:
        stdout = fh.read().decode("utf-8", "replace")
    with open(err_path, "rb") as fh:
        stderr = fh.read().decode("utf-8", "replace")
    if int(killed):
        stderr += "\nkilled after the timeout of %g s" % timeout
    return (float(t), int(rss) * RSS_UNIT, os.waitstatus_to_exitcode(int(status)), stdout,
            stderr)


def zeal_command():
    """The `zeal` console script beside this Python (a venv's), else on PATH, else -m zeal
    (children run with this checkout's host folder first on PYTHONPATH)."""
    here = os.path.join(os.path.dirname(sys.executable), "zeal")
    if os.access(here, os.X_OK):
        return [here]
    found = shutil.which("zeal")
    return [found] if found else [sys.executable, "-m", "zeal"]


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


# ---- the benchmark -------------------------------------------------------------------------------
def store_name(n, devices, bits, seed):
    return "zeal_scale_v%d_m%d_n%d_d%d_s%d" % (BUILD_VERSION, bits, n, devices, seed)


class Backend:
    """Where the stores live: SQLite files in the cache folder, or databases on a PostgreSQL
    server (one per store, named as the cache's files; `temp`: a throw-away local cluster
    from tests/pg_server.py)."""

    def __init__(self, kind, cache, pg=None):
        self.kind, self.cache, self.pg, self.cluster = kind, cache, pg, None
        if kind == "postgresql" and pg == "temp":
            sys.path.insert(0, os.path.join(ROOT, "tests"))
            try:
                from pg_server import PgCluster, missing
            except ImportError as exc:
                raise BenchError("--pg temp needs tests/pg_server.py and pytest (%s)" % exc)
            why = missing()
            if why:
                raise BenchError("--pg temp: " + why)
            self.cluster = PgCluster()
            self.pg = self.cluster.url("postgres")

    def close(self):
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def label(self):
        return "SQLite" if self.kind == "sqlite" else "PostgreSQL"

    def target(self, n, devices, bits, seed):
        name = store_name(n, devices, bits, seed)
        if self.kind == "sqlite":
            return os.path.join(self.cache, name + ".db")
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.pg)
        return urlunsplit(parts._replace(path="/" + name))

    def _admin(self):
        import psycopg

        return psycopg.connect(self.pg, autocommit=True)

    def cached(self, target, n):
        """True if the store is there, whole (n reports)."""
        zeal_modules()
        from zeal.collect.store import StoreError, open_store

        if self.kind == "sqlite":
            if not os.path.exists(target):
                return False
        else:
            name = target.rsplit("/", 1)[1]
            with self._admin() as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                (name,)).fetchone() is None:
                    return False
        try:
            store = open_store(target, read_only=True)
            try:
                return store.meta()["reports"] == n
            finally:
                store.close()
        except StoreError:
            return False

    def make(self, target, n, devices, bits, seed, say):
        if self.kind == "sqlite":
            if os.path.exists(target):
                os.remove(target)
            return make_store(target, n, devices, bits, seed, say)
        name = target.rsplit("/", 1)[1]
        with self._admin() as conn:  # a partial build of an earlier run goes
            conn.execute('DROP DATABASE IF EXISTS "%s"' % name)
            conn.execute('CREATE DATABASE "%s"' % name)
        return build(target, n, devices, bits, seed, say)

    def size(self, target):
        if self.kind == "sqlite":
            return os.path.getsize(target)
        name = target.rsplit("/", 1)[1]
        with self._admin() as conn:
            return conn.execute("SELECT pg_database_size(%s)", (name,)).fetchone()[0]


def slope(xs, ys):
    """Least-squares slope of log y on log x (None if fewer than two usable points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x and y and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


class Throttled:
    """say(text) to stderr, at most every `every` seconds (the first after `every`)."""

    def __init__(self, every=10.0):
        self.every, self.next = every, time.monotonic() + every

    def __call__(self, text):
        now = time.monotonic()
        if now >= self.next:
            self.next = now + self.every
            print(text, file=sys.stderr, flush=True)


def note(text):
    print(text, file=sys.stderr, flush=True)


def startup(folder, timeout, repeats=5):
    """zeal --version against python -c "import numpy": best of `repeats` each, alternately."""
    best = {"zeal --version": None, "import numpy": None}
    cmds = {"zeal --version": zeal_command() + ["--version"],
            "import numpy": [sys.executable, "-c", "import numpy"]}
    for _ in range(repeats):
        for name, cmd in cmds.items():
            t, rss, code, _out, err = run_child(cmd, folder, timeout)
            if code != 0:
                raise BenchError("%s failed (exit %d): %s" % (name, code, last_line(err)))
            old = best[name]
            best[name] = (min(t, old[0]), max(rss, old[1])) if old else (t, rss)
    (tz, rz), (tn, rn) = best["zeal --version"], best["import numpy"]
    return {"zeal_version_s": tz, "zeal_version_peak_rss_mb": rz / 1e6,
            "numpy_import_s": tn, "numpy_import_peak_rss_mb": rn / 1e6,
            "ratio_zeal_version_to_numpy_import": tz / tn}


def check_step(step, out, n, devices, files):
    """'' if the step's output is what it should be, else why not (one line)."""
    if step == "baseline":
        doc = json.loads(out)
        return "" if doc["reports"] == n else "it read %d reports" % doc["reports"]
    if step in ("analyze --db", "analyze archive"):
        doc = json.loads(out)["overall"]
        if doc["n"] != n:
            return "it reports n = %d" % doc["n"]
        if step == "analyze --db" and doc.get("devices") != devices:
            return "it reports %s devices" % doc.get("devices")
        return ""
    path = files["parquet" if step == "export parquet" else "archive"]
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return "it wrote no %s" % os.path.basename(path)
    if step == "export parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            return ""
        rows = pq.ParquetFile(path).metadata.num_rows
        return "" if rows == n else "the Parquet file holds %d rows" % rows
    return ""


def run_store(backend, target, n, devices, bits, work, repeats, timeout):
    """Every step on one store: {step: {seconds, peak_rss_mb, error}} (best time of
    `repeats`, largest RSS), and the sizes of what they wrote."""
    zeal = zeal_command()
    files = {"parquet": os.path.join(work, "export.parquet"),
             "archive": os.path.join(work, "store.zeal.zip")}
    cmds = {
        "baseline": [sys.executable, os.path.abspath(__file__), "--sum-payloads", target,
                     "--bits", str(bits)],
        "analyze --db": zeal + ["analyze", "--db", target, "--json"],
        "export parquet": zeal + ["export", "--db", target, "--format", "parquet",
                                  "-o", files["parquet"]],
        "compress": zeal + ["compress", "--db", target, "--out", files["archive"]],
        "analyze archive": zeal + ["analyze", "--archive", files["archive"], "--json"],
    }
    res = {step: {"seconds": None, "peak_rss_mb": None, "error": ""} for step in STEPS}
    sizes = {}
    baseline = None
    for _ in range(repeats):
        for step in STEPS:
            if step == "analyze archive" and res["compress"]["error"]:
                res[step]["error"] = "no archive (compress failed)"
                continue
            made = {"export parquet": "parquet", "compress": "archive"}.get(step)
            if made == "archive":
                _remove_archive(files["archive"])
            elif made and os.path.exists(files[made]):
                os.remove(files[made])
            t, rss, code, out, err = run_child(cmds[step], work, timeout)
            why = ("exit %d: %s" % (code, last_line(err))) if code else ""
            if not why:
                try:
                    why = check_step(step, out, n, devices, files)
                except (ValueError, KeyError, TypeError) as exc:
                    why = "unreadable output (%s)" % exc
            r = res[step]
            if why:
                r["error"] = why
                note("  %s failed: %s" % (step, why))
                continue
            r["seconds"] = t if r["seconds"] is None else min(r["seconds"], t)
            r["peak_rss_mb"] = max(r["peak_rss_mb"] or 0.0, rss / 1e6)
            if step == "baseline":
                baseline = json.loads(out)
            if step == "export parquet":
                sizes["parquet_bytes"] = os.path.getsize(files["parquet"])
                os.remove(files["parquet"])  # the disk it takes is said, not kept
            if step == "compress":
                vols = _archive_set(files["archive"])
                sizes["archive_bytes"] = sum(os.path.getsize(v) for v in vols)
                sizes["archive_volumes"] = len(vols)
    _remove_archive(files["archive"])
    return res, sizes, baseline


def _archive_set(path):
    """The archive and the volumes beside it (NAME.v2.zeal.zip, ...) that compress wrote."""
    import glob

    stem = path[:-len(".zeal.zip")] if path.endswith(".zeal.zip") else path
    more = glob.glob(glob.escape(stem) + ".v*.zeal.zip")
    return ([path] if os.path.exists(path) else []) + sorted(more)


def _remove_archive(path):
    for v in _archive_set(path):
        os.remove(v)


def parse_sizes(text, what):
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            v = float(part)
        except ValueError:
            raise BenchError("%s: %r is not a number" % (what, part)) from None
        if not (v >= 1 and v == int(v) and v <= 1e12):
            raise BenchError("%s: %r is not a whole number from 1 to 1e12" % (what, part))
        out.append(int(v))
    if not out or len(set(out)) != len(out):
        raise BenchError("%s: give distinct values, e.g. 1e5,1e6" % what)
    return sorted(out)


def fmt_n(n):
    e = int(round(math.log10(n)))
    return "1e%d" % e if 10 ** e == n else str(n)


def fmt(v, spec, missing="-"):
    return missing if v is None else spec % v


def table(doc):
    """The table's lines."""
    lines = []
    st = doc["startup"]
    prof = doc["profile"]
    lines.append("scale: %d-bit grid profile (%d cells), DATA frames of %d reports, a HELLO every "
                 "%d frames; best of %d run(s)" % (prof["bits"], prof["n_cells"], BATCH,
                                                   HELLO_EVERY, doc["repeats"]))
    lines.append("columns: time (s) = wall clock; x baseline = time / the baseline's time on the "
                 "same store; peak RSS (MB) = the child's ru_maxrss; over start-up (MB) = peak "
                 "RSS minus that of `zeal --version` (baseline: of python -c 'import numpy'); "
                 "a, b = growth exponents of time ~ n^a and RSS ~ n^b from the previous size")
    head = "%-10s %10s %7s  %-16s %9s %11s %14s %17s %7s %7s" % (
        "backend", "n reports", "devices", "step", "time (s)", "x baseline", "peak RSS (MB)",
        "over start-up (MB)", "a", "b")
    for backend in doc["backends"]:
        lines.append("")
        lines.append(head)
        lines.append("-" * len(head))
        for devices in doc["devices_list"]:
            runs = [r for r in doc["runs"] if r["backend"] == backend
                    and r["devices"] == devices]
            for run in runs:
                for step in STEPS:
                    s = run["steps"][step]
                    if s["error"]:
                        lines.append("%-10s %10s %7d  %-16s  failed: %s" % (
                            backend, fmt_n(run["reports"]), devices, step, s["error"]))
                        continue
                    lines.append("%-10s %10s %7d  %-16s %9.3f %11s %14.1f %17s %7s %7s" % (
                        backend, fmt_n(run["reports"]), devices, step, s["seconds"],
                        fmt(s["ratio_to_baseline"], "%.2f"), s["peak_rss_mb"],
                        fmt(s["rss_over_startup_mb"], "%.1f"), fmt(s["time_exponent"], "%.2f"),
                        fmt(s["rss_exponent"], "%.2f")))
    if doc["fits"]:
        lines.append("")
        lines.append("growth over all sizes (least-squares slope of log time and log peak RSS "
                     "on log n): time ~ n^a, RSS ~ n^b")
        head = "%-10s %7s  %-16s %-22s %7s %7s" % ("backend", "devices", "step", "n reports",
                                                   "a", "b")
        lines.append(head)
        lines.append("-" * len(head))
        for f in doc["fits"]:
            lines.append("%-10s %7d  %-16s %-22s %7s %7s" % (
                f["backend"], f["devices"], f["step"], "..".join(map(fmt_n, f["sizes"])),
                fmt(f["time_exponent"], "%.2f"), fmt(f["rss_exponent"], "%.2f")))
    lines.append("")
    lines.append("start-up: zeal --version %.3f s, peak RSS %.1f MB; python -c 'import numpy' "
                 "%.3f s, peak RSS %.1f MB; ratio zeal --version / import numpy = %.2f "
                 "(time, best of 5)" % (st["zeal_version_s"], st["zeal_version_peak_rss_mb"],
                                        st["numpy_import_s"], st["numpy_import_peak_rss_mb"],
                                        st["ratio_zeal_version_to_numpy_import"]))
    return lines


def add_exponents(doc):
    """Each step's ratio to the baseline, RSS over start-up, exponents from the previous size,
    and the least-squares fits over all sizes (3 or more)."""
    st = doc["startup"]
    for run in doc["runs"]:
        base = run["steps"]["baseline"]["seconds"]
        for step, s in run["steps"].items():
            ok = not s["error"]
            s["ratio_to_baseline"] = s["seconds"] / base if ok and base else None
            ref = (st["numpy_import_peak_rss_mb"] if step == "baseline"
                   else st["zeal_version_peak_rss_mb"])
            s["rss_over_startup_mb"] = s["peak_rss_mb"] - ref if ok else None
            s["time_exponent"] = s["rss_exponent"] = None
    doc["fits"] = []
    for backend in doc["backends"]:
        for devices in doc["devices_list"]:
            runs = [r for r in doc["runs"] if r["backend"] == backend
                    and r["devices"] == devices]
            for prev, run in zip(runs, runs[1:]):
                for step in STEPS:
                    a, b = prev["steps"][step], run["steps"][step]
                    if a["error"] or b["error"]:
                        continue
                    ns = (prev["reports"], run["reports"])
                    b["time_exponent"] = slope(ns, (a["seconds"], b["seconds"]))
                    b["rss_exponent"] = slope(ns, (a["peak_rss_mb"], b["peak_rss_mb"]))
            if len(runs) >= 3:
                for step in STEPS:
                    ok = [r for r in runs if not r["steps"][step]["error"]]
                    ns = [r["reports"] for r in ok]
                    doc["fits"].append({
                        "backend": backend, "devices": devices, "step": step,
                        "sizes": ns,
                        "time_exponent": slope(ns, [r["steps"][step]["seconds"] for r in ok]),
                        "rss_exponent": slope(ns, [r["steps"][step]["peak_rss_mb"]
                                                   for r in ok])})


def check_disk(backends, sizes, devices_list, bits, seed, cache):
    """Refuse (one line) when the cache's disk lacks room for the stores still to build and
    the largest export."""
    need = 0
    for backend in backends:
        if backend.kind != "sqlite":
            continue
        for n in sizes:
            for devices in devices_list:
                if not os.path.exists(backend.target(n, devices, bits, seed)):
                    need += n * STORE_BYTES_PER_REPORT
        need += max(sizes) * EXPORT_BYTES_PER_REPORT
    free = shutil.disk_usage(cache).free
    if need > free:
        raise BenchError("the cache folder %s has %.2f GB free; these sizes need about %.2f GB "
                         "(stores ~%.1f bytes per report, the export or the archive ~%.0f while "
                         "it exists): free some, or give --cache on a larger disk"
                         % (cache, free / 1e9, need / 1e9, STORE_BYTES_PER_REPORT,
                            EXPORT_BYTES_PER_REPORT))
    return need


def bench(args):
    sizes = parse_sizes(args.sizes, "--sizes")
    devices_list = parse_sizes(args.devices_list, "--devices-list")
    if 8 % args.bits:
        raise BenchError("--bits: the benchmark's baseline reads 1, 2, 4 or 8 bits per report")
    for n in sizes:
        for devices in devices_list:
            check_shape(n, devices)
    prof = grid_profile(args.bits)
    cache = os.path.abspath(args.cache)
    os.makedirs(cache, exist_ok=True)
    backends = [Backend("sqlite", cache)]
    if args.pg:
        backends.append(Backend("postgresql", cache, args.pg))
    work = tempfile.mkdtemp(prefix="work-", dir=cache)
    doc = {"profile": {"kind": "grid", "bits": prof.bits, "n_cells": prof.n_cells,
                       "lo": LO, "hi": HI, "epsilon": EPS, "fingerprint": prof.fingerprint},
           "batch": BATCH, "hello_every": HELLO_EVERY, "repeats": args.repeats,
           "sizes": sizes, "devices_list": devices_list,
           "backends": [b.kind for b in backends], "runs": []}
    try:
        need = check_disk(backends, sizes, devices_list, args.bits, args.seed, cache)
        note("bench_scale: stores in %s%s; %.0f MB of disk still needed"
             % (cache, " and as databases zeal_scale_* on the PostgreSQL server" if args.pg
                else "", need / 1e6))
        doc["startup"] = startup(work, args.timeout)
        for backend in backends:
            for devices in devices_list:
                for n in sizes:
                    target = backend.target(n, devices, args.bits, args.seed)
                    run = {"backend": backend.kind, "reports": n, "devices": devices,
                           "frames": -(-n // BATCH), "build_s": None}
                    if backend.cached(target, n):
                        note("%s, n = %s, %d device(s): cached store" % (
                            backend.label(), fmt_n(n), devices))
                    else:
                        note("%s, n = %s, %d device(s): building the store ..." % (
                            backend.label(), fmt_n(n), devices))
                        t0 = time.perf_counter()
                        backend.make(target, n, devices, args.bits, args.seed, Throttled())
                        run["build_s"] = time.perf_counter() - t0
                        note("  built in %.1f s" % run["build_s"])
                    run["store_bytes"] = backend.size(target)
                    note("  running the steps ...")
                    steps, files, base = run_store(backend, target, n, devices, args.bits,
                                                   work, args.repeats, args.timeout)
                    run["steps"] = steps
                    run.update(files)
                    if base is not None and n == min(sizes) and n <= VERIFY_MAX:
                        got_n, got_sum = decoder_sum(target, prof)
                        add = prof.wire_base - prof.k_lo
                        mine = base["sum_lows"] + base["reports"] * add
                        if (got_n, got_sum) != (base["reports"], mine):
                            raise BenchError("the baseline's decoding disagrees with zeal's: "
                                             "%d reports summing to %d, zeal %d and %d"
                                             % (base["reports"], mine, got_n, got_sum))
                        run["baseline_checked_against_decoder"] = True
                    doc["runs"].append(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for backend in backends:
            backend.close()
    add_exponents(doc)
    for line in table(doc):
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    failed = sum(1 for r in doc["runs"] for s in r["steps"].values() if s["error"])
    return 1 if failed else 0


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BenchError(message)


def main(argv=None):
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-store", metavar="FILE",
                    help="only build this SQLite store (a new file) of --reports reports")
    ap.add_argument("--reports", type=float, help="reports in --make-store's store (e.g. 1e6)")
    ap.add_argument("--devices", type=int, default=1,
                    help="devices sharing --make-store's frames round-robin (default 1)")
    ap.add_argument("--bits", type=int, default=4, help="bits per report (default 4)")
    ap.add_argument("--sizes", default=",".join(fmt_n(n) for n in DEFAULT_SIZES),
                    help="store sizes in reports (default 1e5,1e6,1e7)")
    ap.add_argument("--devices-list", default=",".join(map(str, DEFAULT_DEVICES)),
                    help="device counts (default 1,1000)")
    ap.add_argument("--pg", metavar="URL",
                    help="also PostgreSQL: a server URL where the tool may create databases "
                         "zeal_scale_* (one per store, kept as a cache), or 'temp' for a "
                         "throw-away local cluster")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "zeal-bench-scale"),
                    help="folder of the built stores, reused by later runs (default: "
                         "zeal-bench-scale in the system's temp folder)")
    ap.add_argument("--repeats", type=int, default=1, help="best of this many (default 1)")
    ap.add_argument("--timeout", type=float, default=7200.0,
                    help="seconds a step may take (default 7200)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON here")
    ap.add_argument("--sum-payloads", metavar="DB", help=argparse.SUPPRESS)  # the baseline
    try:
        args = ap.parse_args(argv)
        if args.bits < 1 or args.repeats < 1 or args.timeout <= 0 or args.devices < 1:
            raise BenchError("--bits, --repeats, --devices and --timeout must be positive")
        if args.sum_payloads:
            sum_payloads(args.sum_payloads, args.bits)
            return 0
        if args.make_store:
            if args.reports is None:
                raise BenchError("--make-store needs --reports N")
            n = parse_sizes(str(args.reports), "--reports")[0]
            meta = make_store(args.make_store, n, args.devices, args.bits, args.seed,
                              Throttled())
            print("%s: %d reports in %d DATA frames from %d device(s), %d bytes on the "
                  "wire, %d bytes on disk, built in %.1f s"
                  % (args.make_store, meta["reports"], meta["frames"], meta["devices"],
                     meta["bytes"], os.path.getsize(args.make_store), meta["build_s"]))
            return 0
        return bench(args)
    except BenchError as exc:
        print("zeal: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
