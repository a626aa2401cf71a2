# The sampling loop: sensor -> mechanism -> packer/framer -> serial line.
#
# Configuration lives in zeal_config.json on the device (all keys optional; a key of the wrong
# type, or an unknown key, stops the board with STATUS CONFIG):
#   period_ms     1000   time between sampling ticks (0: as fast as the source gives readings)
#   batch         64     reports per DATA frame (1..255)
#   hello_every   16     DATA frames between HELLOs (0..65535; 0: only at boot and on request)
#   status_every  64     DATA frames between STATUS heartbeats (0: none)
#   max_reports   0      stop after this many sampling ticks (0: never)
#   sensor        {"kind": "adc", "pin": 26} | {"kind": "adc", "channel": 4} |
#                 {"kind": "rp2040_temp"} | {"kind": "callable", "module": M, "function": F} |
#                 {"kind": "replay"} | {"kind": "replay", "file": "zeal_replay.txt"}
#                                                            (default: replay on the input)
#   output        {"kind": "repl"} | {"kind": "uart", "id": 1, "baudrate": 115200,
#                 "tx": 4, "rx": 5}                          (default: repl)
#   watchdog_ms   0      machine.WDT timeout, 0..8388 (RP2040's maximum; 0: no watchdog)
#   write_timeout_ms 250 a frame the output has not taken after this long is dropped and
#                        counted (STATUS frames_dropped); the watchdog is fed meanwhile
#   start_delay_ms 2000  grace period at boot, before Ctrl-C is disabled (repl output)
#   crash_reset_ms 10000 after an unexpected error: STATUS CRASH, then machine.reset()
#                        this long after (0: stay in the REPL)
#   profile       "zeal_profile.json"
#   seed          "zeal_seed.bin"  the seed file, rewritten at every boot (needs a writable FS)
#   vector_mode   false  allow a given generator key (tests only: frames are marked VECTOR)
#   vector_key    null   64 hex digits, used only when vector_mode is true
#   debug         false  NOT PRIVATE: send the replaced/clamped counters and SENSOR statuses
#                        (every frame is flagged DEBUG; a warning line is printed at boot)
#
# What leaves the board (shared_spec/mechanism.md, "The whole transcript"): every sampling
# tick makes exactly one report. A reading that cannot be privatised (NaN, infinity, a sensor
# error, a raw count without calibration, a bad type, a bad replay line) is replaced by the
# public value, the midpoint (lo + hi)/2 of the profile, before the mechanism. Frames are
# written only at the start of a tick (a full batch goes out at the start of the next tick,
# HELLO and STATUS when due or asked for), so when a frame leaves depends on the tick
# schedule, not on a reading. Nothing counted about readings leaves the default build.
#
# When frames share the REPL's stream, Ctrl-C is disabled while streaming (a 0x03 byte in a
# frame must not stop the board). The way back to the REPL: send the line "!stop" (the host's
# `zeal stop`), or reset the board and press Ctrl-C within start_delay_ms. With a watchdog
# running (it cannot be stopped) "!stop" writes the hold file zeal_hold and resets the board;
# boot() finds the file, removes it and stays in the REPL.
#
# Per report the loop allocates nothing of its own (no tuples, no bytes, no closures): the
# sources hand over an int and set .kind, the perturbation methods are bound once, and the
# Sender packs into buffers it made at start. Optional parts are imported when configured.
import sys

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


from . import frames, sources
from .mechanism import ReadingError, Zeal

CONFIG_PATH = "zeal_config.json"
HOLD_PATH = "zeal_hold"
WATCHDOG_MAX_MS = const(8388)  # RP2040's machine.WDT maximum; the portable limit
_CTL_MAX = const(8)            # control lines: "!stop", "!hello"
_CTL_STOP = const(1)
_CTL_HELLO = const(2)
_SLEEP_SLICE = const(500)      # sleep in slices so the watchdog keeps being fed
DEBUG_WARNING = (b"zeal: DEBUG build - NOT PRIVATE: counters of replaced and clamped "
                 b"readings and sensor errors are sent\r\n")


class ConfigError(Exception):
    pass


_DEFAULTS = {
    "period_ms": 1000, "batch": 64, "hello_every": 16, "status_every": 64, "max_reports": 0,
    "sensor": {"kind": "replay"}, "output": {"kind": "repl"}, "watchdog_ms": 0,
    "write_timeout_ms": 250, "start_delay_ms": 2000, "crash_reset_ms": 10000,
    "profile": "zeal_profile.json", "seed": "zeal_seed.bin", "vector_mode": False,
    "vector_key": None, "debug": False,
}
_INT_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "watchdog_ms",
             "write_timeout_ms", "start_delay_ms", "crash_reset_ms")
_INT_MAX = const(0x3FFFFFFF)  # a small int on every port; ~12 days of milliseconds


def _check_config(cfg):
    for key in _INT_KEYS:
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > _INT_MAX:
            raise ConfigError("%s must be an integer in [0, %d]" % (key, _INT_MAX))
    if not 1 <= cfg["batch"] <= 255:
        raise ConfigError("batch must be 1..255")
    if cfg["hello_every"] > 0xFFFF:
        raise ConfigError("hello_every must be 0..65535")
    if cfg["watchdog_ms"] > WATCHDOG_MAX_MS:
        raise ConfigError("watchdog_ms must be at most %d (RP2040's machine.WDT maximum)"
                          % WATCHDOG_MAX_MS)
    for key in ("sensor", "output"):
        v = cfg[key]
        if not isinstance(v, dict) or not isinstance(v.get("kind"), str):
            raise ConfigError('%s must be an object with a string "kind"' % key)
    for key in ("profile", "seed"):
        if not isinstance(cfg[key], str) or not cfg[key]:
            raise ConfigError("%s must be a file name (a string)" % key)
    for key in ("vector_mode", "debug"):
        if not isinstance(cfg[key], bool):
            raise ConfigError("%s must be true or false" % key)
    if cfg["vector_key"] is not None and not isinstance(cfg["vector_key"], str):
        raise ConfigError("vector_key must be 64 hex digits or null")


def load_config(path=CONFIG_PATH):
    """The device configuration merged over the defaults and type-checked (ConfigError);
    a missing file means defaults."""
    import json

    cfg = dict(_DEFAULTS)
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except OSError:
        return cfg
    except ValueError:
        raise ConfigError("config is not valid JSON")
    if not isinstance(doc, dict):
        raise ConfigError("config must be a JSON object")
    for key in doc:
        if key not in _DEFAULTS:
            raise ConfigError("unknown config key %s" % key)
        cfg[key] = doc[key]
    _check_config(cfg)
    return cfg


def _device_id():
    try:
        import machine

        return machine.unique_id()
    except (ImportError, AttributeError):
        return b"unix"


def _streams(cfg):
    """(out, inp, on_repl): where frames go and where control/replay lines come from."""
    spec = cfg["output"]
    kind = spec["kind"]
    if kind == "uart":
        import machine

        args = {"baudrate": spec.get("baudrate", 115200)}
        for pin in ("tx", "rx"):
            if pin in spec:
                args[pin] = machine.Pin(spec[pin])
        uart = machine.UART(spec.get("id", 1), **args)
        return uart, uart, False
    if kind == "repl":
        return sys.stdout.buffer, sys.stdin.buffer, True
    raise ConfigError("output kind must be repl or uart")


class _Control:
    """Non-blocking watch for the control lines "!stop" and "!hello" on the input stream
    (every source but the replay from the input, which reads them itself). No allocation
    while nothing arrives (ipoll reuses its result); a byte is read into a buffer."""

    def __init__(self, inp):
        self._inp = inp
        self._poll = None
        self._ipoll = None
        self._line = bytearray(_CTL_MAX)
        self._one = bytearray(1)
        self._n = 0
        try:
            import select

            p = select.poll()
            p.register(inp, select.POLLIN)
            self._poll = p
            self._ipoll = getattr(p, "ipoll", None)
        except Exception:  # a stream that cannot be polled: no remote stop
            self._poll = None

    def _ready(self):
        if self._ipoll is not None:
            for _ in self._ipoll(0):
                return True
            return False
        return bool(self._poll.poll(0))

    def poll(self):
        """0, or _CTL_STOP / _CTL_HELLO when such a line has arrived."""
        if self._poll is None:
            return 0
        one = self._one
        while self._ready():
            if not self._inp.readinto(one):  # end of input: nothing more will come
                self._poll = None
                return 0
            c = one[0]
            if c == 10 or c == 13:
                n = self._n
                self._n = 0
                if n and self._is_n(n, sources.STOP_LINE):
                    return _CTL_STOP
                if n and self._is_n(n, sources.HELLO_LINE):
                    return _CTL_HELLO
            elif self._n < _CTL_MAX:
                self._line[self._n] = c
                self._n += 1
            else:
                self._n = _CTL_MAX + 1  # overlong: matches nothing
        return 0

    def _is_n(self, n, word):
        if n != len(word):
            return False
        line = self._line
        for i in range(n):
            if line[i] != word[i]:
                return False
        return True


class _Profile:
    """The numbers of a checked profile that the loop needs, detached from zealfw.profile."""


_PROFILE_FIELDS = ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent", "bits",
                   "cal", "fingerprint")


def _detach(p):
    d = _Profile()
    for name in _PROFILE_FIELDS:
        setattr(d, name, getattr(p, name))
    return d


def _forget(module, attr):
    """Drop a module needed only at start (its code is ~10 KB of heap on the unix port) so
    the collector can free it; on MicroPython only (CPython tests import it again)."""
    if sys.implementation.name != "micropython":
        return
    sys.modules.pop(module, None)
    import zealfw

    if attr in zealfw.__dict__:
        delattr(zealfw, attr)


def _stop_with_status(sender, code, message):
    sender.hello()
    sender.status(code, message)


def _midpoint(prof):
    """The public value (lo + hi)/2 as an exact (num, den)."""
    lon, lod = prof.lo
    hin, hid = prof.hi
    return lon * hid + hin * lod, 2 * lod * hid


def _bits_of(n):
    # the number of binary digits of n > 0 (MicroPython has no int.bit_length)
    b = 0
    while n:
        n >>= 1
        b += 1
    return b


def f64_pattern(num, den):
    """The float64 bit pattern of num/den if that value is a normal float64 exactly (den a
    power of two), else None. Once, at start: a replaced reading then takes the mechanism's
    float64 path, which allocates far less than perturb(num, den) with big denominators; the
    value, hence the report's law and the words it uses, is the same."""
    if den <= 0 or den & (den - 1):
        return None
    if num == 0:
        return 0
    sign = 0
    if num < 0:
        sign, num = 1, -num
    while not num & 1 and den > 1:
        num >>= 1
        den >>= 1
    nb = _bits_of(num)
    if nb > 53:
        return None
    e = 1075 - (_bits_of(den) - 1) - 53 + nb
    if e < 1 or e > 2046:
        return None
    return (sign << 63) | (e << 52) | ((num << (53 - nb)) - (1 << 52))


def _boot_key(cfg, device_id):
    """(key, boot counter) of this boot, or ConfigError with one clear line."""
    try:
        import os

        from . import words as words_mod
    except ImportError as exc:
        raise ConfigError("cannot import the generator: %s" % exc)
    if not hasattr(os, "urandom"):
        raise ConfigError("os.urandom is missing")
    try:
        return words_mod.derive_boot_key(cfg["seed"], extra=bytes(device_id))
    except OSError:
        raise ConfigError("no writable filesystem for the seed file %s" % cfg["seed"])


def run(config_path=CONFIG_PATH, out=None, inp=None):
    """Stream until stopped. Returns the number of reports (sampling ticks) made."""
    device_id = _device_id()
    try:
        cfg = load_config(config_path)
        if out is None:
            out, inp2, on_repl = _streams(cfg)
            inp = inp if inp is not None else inp2
        else:
            on_repl = False
    except (ConfigError, KeyError, AttributeError, ValueError, TypeError) as exc:
        out = out if out is not None else sys.stdout.buffer
        _stop_with_status(frames.Sender(out, 0, device_id=device_id), frames.STATUS_CONFIG,
                          str(exc))
        return 0
    debug = cfg["debug"]
    if debug:
        out.write(DEBUG_WARNING)  # text: the host's framer skips it
    from . import profile as profile_mod

    try:
        prof = _detach(profile_mod.load(cfg["profile"]))
    except profile_mod.ProfileError as exc:
        code = frames.STATUS_NO_PROFILE if exc.reason == "missing_file" else \
            frames.STATUS_BAD_PROFILE
        _stop_with_status(frames.Sender(out, 0, device_id=device_id, debug=debug), code,
                          str(exc))
        return 0
    del profile_mod
    _forget("zealfw.profile", "profile")

    vector = cfg["vector_mode"] and cfg["vector_key"] is not None
    try:
        if vector:
            import binascii

            try:
                key = binascii.unhexlify(cfg["vector_key"])
            except ValueError:
                key = b""
            if len(key) != 32:
                raise ConfigError("vector_key must be 64 hex digits")
            boot = 0
        else:
            key, boot = _boot_key(cfg, device_id)
        source = sources.from_config(cfg["sensor"], inp)
        sender = frames.Sender(out, prof.bits, batch=cfg["batch"], device_id=device_id,
                               fingerprint=prof.fingerprint, boot=boot,
                               nonce=frames.nonce_of(key), hello_every=cfg["hello_every"],
                               vector=vector, debug=debug,
                               write_timeout_ms=cfg["write_timeout_ms"])
        from . import words as words_mod

        mech = Zeal(prof, words_mod.CounterWords(key))
    except (ConfigError, ValueError, KeyError, TypeError, ImportError, AttributeError,
            OSError) as exc:
        _stop_with_status(frames.Sender(out, 0, device_id=device_id, debug=debug),
                          frames.STATUS_CONFIG, str(exc))
        return 0
    return _loop(cfg, prof, mech, sender, source, inp, on_repl)


def _loop(cfg, prof, mech, sender, source, inp, on_repl):
    replay_in = isinstance(source, sources.ReplaySource) and not source.from_file
    control = None if replay_in or inp is None else _Control(inp)
    wdt = None
    if cfg["watchdog_ms"]:
        import machine

        wdt = machine.WDT(timeout=cfg["watchdog_ms"])
        sender.idle = wdt.feed  # bound once: a stalled write keeps the watchdog fed
    if on_repl and cfg["start_delay_ms"]:
        frames.sleep_ms(cfg["start_delay_ms"])  # a window for Ctrl-C before it is disabled
    kbd = None
    if on_repl:
        import micropython

        kbd = micropython
        kbd.kbd_intr(-1)
    debug = cfg["debug"]
    perturb = (mech.perturb_raw, mech.perturb_float32, mech.perturb_float64)
    mid_n, mid_d = _midpoint(prof)
    mid_bits = f64_pattern(mid_n, mid_d)
    ticks_ms, ticks_diff, sleep_ms = frames.ticks_ms, frames.ticks_diff, frames.sleep_ms
    period, status_every, limit = cfg["period_ms"], cfg["status_every"], cfg["max_reports"]
    ticks = 0            # sampling ticks = reports made (public)
    replaced = 0         # readings replaced by the public value (sent only in debug)
    sensor_errors = 0    # debug: SourceErrors, for the SENSOR statuses
    sensor_msg = None    # debug: a SENSOR status due at the next tick
    since_status = 0     # DATA frames since the last STATUS
    hello_due = False
    full = False
    stopped = False      # by "!stop" or the end of the replay (not by max_reports)
    sender.hello()
    try:
        while not limit or ticks < limit:
            started = ticks_ms()
            # ---- start of the tick: every frame that is due, nothing else writes ---------
            if full:
                sender.flush()  # and the HELLO of hello_every, if due
                full = False
                since_status += 1
            if control is not None:
                c = control.poll()
                if c == _CTL_STOP:
                    stopped = True
                    break
                if c == _CTL_HELLO:
                    hello_due = True
            elif replay_in and source.hello_requested:
                source.hello_requested = False
                hello_due = True
            if hello_due:
                sender.hello()
                hello_due = False
            if status_every and since_status >= status_every:
                if debug:
                    sender.status(frames.STATUS_OK, b"", ticks=ticks, replaced=replaced,
                                  clamped=getattr(mech, "clamped", 0))
                else:
                    sender.status(frames.STATUS_OK, b"", ticks=ticks)
                since_status = 0
            if sensor_msg is not None:  # debug build only
                sender.status(frames.STATUS_SENSOR, sensor_msg, ticks=ticks,
                              replaced=replaced, clamped=getattr(mech, "clamped", 0))
                sensor_msg = None
            # ---- the reading and its one report ----------------------------------------
            kind = -1
            try:
                value = source.read()
                if value is None:  # the replay ended or was stopped
                    stopped = True
                    break
                kind = source.kind
            except sources.SourceError as exc:
                if debug:
                    sensor_errors += 1
                    if sensor_errors == 1 or sensor_errors % 100 == 0:  # tell, never flood
                        sensor_msg = str(exc)
            if kind >= 0:
                try:
                    k = perturb[kind](value)
                except ReadingError:  # NaN, infinity, a raw count without calibration, type
                    kind = -1       # (raised before any word is drawn)
            if kind < 0:
                replaced += 1
                if mid_bits is not None:   # the public value, (lo + hi)/2
                    k = perturb[2](mid_bits)
                else:
                    k = mech.perturb(mid_n, mid_d)
            full = sender.add(mech.low(k))
            ticks += 1
            if wdt is not None:
                wdt.feed()
            if period:
                left = period - ticks_diff(ticks_ms(), started)
                while left > 0:
                    step = left if left < _SLEEP_SLICE else _SLEEP_SLICE
                    sleep_ms(step)
                    left -= step
                    if wdt is not None:
                        wdt.feed()
    finally:
        sender.flush()  # a full batch, or the short one at the end
        if debug:
            sender.status(frames.STATUS_STOPPED, b"stopped", ticks=ticks, replaced=replaced,
                          clamped=getattr(mech, "clamped", 0))
        else:
            sender.status(frames.STATUS_STOPPED, b"stopped", ticks=ticks)
        if kbd is not None:
            kbd.kbd_intr(3)
    if isinstance(source, sources.ReplaySource):
        source.close()
    if wdt is not None and (stopped or limit):
        _hold(sender, ticks)  # does not return on a board
    return ticks


def _hold(sender, ticks):
    """A running watchdog cannot be stopped: write the hold file, say so, reset. At the next
    boot, boot() finds the file, removes it and stays in the REPL (mpremote, `zeal flash`)."""
    try:
        with open(HOLD_PATH, "w") as fh:
            fh.write("held\n")
        try:
            import os

            sync = getattr(os, "sync", None)
            if sync is not None:
                sync()
        except ImportError:
            pass
        msg = "watchdog running: resetting into the REPL (hold file %s)" % HOLD_PATH
    except OSError:
        msg = ("watchdog running: no writable filesystem for the hold file %s; the board "
               "streams again after this reset" % HOLD_PATH)
    sender.status(frames.STATUS_HELD, msg, ticks=ticks)
    import machine

    machine.reset()


def take_hold(path=HOLD_PATH):
    """True (and the file removed) if a stop left the hold file: the board stays in the REPL."""
    try:
        import os
    except ImportError:
        return False
    try:
        os.stat(path)
    except OSError:
        return False
    try:
        os.remove(path)
    except OSError:
        pass
    return True


def boot(config_path=CONFIG_PATH):
    """Entry point for the board's main.py. After a stop with a watchdog running (hold file
    present) it removes the file and returns at once: the board stays in the REPL.

    A bug must not leave a deployed board silent: an unexpected error is reported as STATUS
    CRASH and the board resets after crash_reset_ms (a watchdog, if configured, would reset
    it anyway). In the private build the CRASH message is the exception's type name only
    (its text could depend on a reading); the debug build sends the text too."""
    if take_hold():
        print("zeal: held after a stop; in the REPL. Reset the board to stream again.")
        return 0
    try:
        return run(config_path)
    except Exception as exc:
        try:
            import micropython

            micropython.kbd_intr(3)
        except (ImportError, AttributeError):
            pass
        try:
            cfg = load_config(config_path)
        except ConfigError:
            cfg = dict(_DEFAULTS)
        debug = cfg["debug"]
        sender = frames.Sender(sys.stdout.buffer, 0, device_id=_device_id(), debug=debug)
        name = type(exc).__name__
        sender.status(frames.STATUS_CRASH, "%s: %s" % (name, exc) if debug else name)
        delay = cfg["crash_reset_ms"]
        try:
            import machine

            reset = machine.reset
        except (ImportError, AttributeError):  # the unix port: nothing to reset
            raise exc
        if not delay:
            raise exc
        frames.sleep_ms(delay)  # a window to connect and look before the reset
        reset()
