# The sampling loop: sensor -> mechanism -> packer/framer -> serial line.
#
# Configuration lives in zeal_config.json on the device (all keys optional):
#   period_ms     1000   time between readings (0: as fast as the source gives them)
#   batch         64     reports per DATA frame (1..255)
#   hello_every   16     DATA frames between HELLOs
#   status_every  64     DATA frames between STATUS heartbeats (0: none)
#   max_reports   0      stop after this many reports (0: never)
#   sensor        {"kind": "adc", "pin": 26} | {"kind": "callable", "module": M,
#                 "function": F} | {"kind": "replay"}        (default: replay)
#   output        {"kind": "repl"} | {"kind": "uart", "id": 1, "baudrate": 115200,
#                 "tx": 4, "rx": 5}                          (default: repl)
#   watchdog_ms   0      machine.WDT timeout (0: no watchdog)
#   start_delay_ms 2000  grace period at boot, before Ctrl-C is disabled (repl output)
#   crash_reset_ms 10000 after an unexpected error: STATUS CRASH, then machine.reset()
#                        this long after (0: stay in the REPL)
#   profile       "zeal_profile.json";  seed  "zeal_seed.bin"
#   vector_mode   false  allow a given generator key (tests only: frames are marked VECTOR)
#   vector_key    null   64 hex digits, used only when vector_mode is true
#
# When frames share the REPL's stream, Ctrl-C is disabled while streaming (a 0x03 byte in a
# frame must not stop the board). The way back to the REPL: send the line "!stop" (the host's
# `zeal stop`), or reset the board and press Ctrl-C within start_delay_ms.
import sys
import time

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


from . import frames, sources
from . import profile as profile_mod
from . import words as words_mod
from .mechanism import ReadingError, Zeal

CONFIG_PATH = "zeal_config.json"
_STOP = b"!stop"
_STOP_LEN = const(5)


class ConfigError(Exception):
    pass


_DEFAULTS = {
    "period_ms": 1000, "batch": 64, "hello_every": 16, "status_every": 64, "max_reports": 0,
    "sensor": {"kind": "replay"}, "output": {"kind": "repl"}, "watchdog_ms": 0,
    "start_delay_ms": 2000, "crash_reset_ms": 10000, "profile": profile_mod.DEFAULT_PATH, "seed": "zeal_seed.bin",
    "vector_mode": False, "vector_key": None,
}


def load_config(path=CONFIG_PATH):
    """The device configuration merged over the defaults; a missing file means defaults."""
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
    for key in ("period_ms", "batch", "hello_every", "status_every", "max_reports",
                "watchdog_ms", "start_delay_ms", "crash_reset_ms"):
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ConfigError("%s must be a non-negative integer" % key)
    if not 1 <= cfg["batch"] <= 255:
        raise ConfigError("batch must be 1..255")
    return cfg


def _device_id():
    try:
        import machine

        return machine.unique_id()
    except (ImportError, AttributeError):
        return b"unix"


def _streams(cfg):
    """(out, inp): where frames go and where control/replay lines come from."""
    spec = cfg["output"]
    kind = spec.get("kind") if isinstance(spec, dict) else None
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
    """Non-blocking watch for the "!stop" line on the input stream (non-replay sources)."""

    def __init__(self, inp):
        self._inp = inp
        self._poll = None
        self._seen = 0
        try:
            import select

            self._poll = select.poll()
            self._poll.register(inp, select.POLLIN)
        except Exception:  # a stream that cannot be polled: no remote stop
            self._poll = None

    def stop_requested(self):
        if self._poll is None:
            return False
        while self._poll.poll(0):
            b = self._inp.read(1)
            if not b:
                return False
            if b[0] == _STOP[self._seen]:
                self._seen += 1
                if self._seen == _STOP_LEN:
                    return True
            else:
                self._seen = 1 if b[0] == _STOP[0] else 0
        return False


def _stop_with_status(sender, code, message):
    sender.hello()
    sender.status(code, message=message)


def run(config_path=CONFIG_PATH, out=None, inp=None):
    """Stream until stopped. Returns the number of reports sent."""
    try:
        cfg = load_config(config_path)
        if out is None:
            out, inp2, on_repl = _streams(cfg)
            inp = inp if inp is not None else inp2
        else:
            on_repl = False
    except (ConfigError, KeyError, AttributeError, ValueError) as exc:
        out = out if out is not None else sys.stdout.buffer
        _stop_with_status(frames.Sender(out, 0, device_id=_device_id()), frames.STATUS_CONFIG,
                          str(exc))
        return 0
    device_id = _device_id()
    try:
        prof = profile_mod.load(cfg["profile"])
    except profile_mod.ProfileError as exc:
        code = frames.STATUS_NO_PROFILE if exc.reason == "missing_file" else \
            frames.STATUS_BAD_PROFILE
        _stop_with_status(frames.Sender(out, 0, device_id=device_id), code, str(exc))
        return 0

    vector = bool(cfg["vector_mode"]) and cfg["vector_key"] is not None
    try:
        if vector:
            import binascii

            key, boot = binascii.unhexlify(cfg["vector_key"]), 0
            if len(key) != 32:
                raise ValueError("vector_key must be 64 hex digits")
        else:
            key, boot = words_mod.derive_boot_key(cfg["seed"], extra=bytes(device_id))
        source = sources.from_config(cfg["sensor"], inp)
        sender = frames.Sender(out, prof.bits, batch=cfg["batch"], device_id=device_id,
                               fingerprint=prof.fingerprint, boot=boot,
                               hello_every=cfg["hello_every"], vector=vector)
    except (ValueError, KeyError, TypeError, ImportError, AttributeError, OSError) as exc:
        _stop_with_status(frames.Sender(out, 0, device_id=device_id), frames.STATUS_CONFIG,
                          str(exc))
        return 0
    return _loop(cfg, prof, Zeal(prof, words_mod.CounterWords(key)), sender, source, inp,
                 on_repl)


def _loop(cfg, prof, mech, sender, source, inp, on_repl):
    replay = isinstance(source, sources.ReplaySource)
    control = None if replay or inp is None else _Control(inp)
    wdt = None
    if cfg["watchdog_ms"]:
        import machine

        wdt = machine.WDT(timeout=cfg["watchdog_ms"])
    if on_repl and cfg["start_delay_ms"]:
        time.sleep_ms(cfg["start_delay_ms"])  # a window for Ctrl-C before it is disabled
    kbd = None
    if on_repl:
        import micropython

        kbd = micropython
        kbd.kbd_intr(-1)
    perturb = (mech.perturb_raw, mech.perturb_float32, mech.perturb_float64)
    period, status_every, limit = cfg["period_ms"], cfg["status_every"], cfg["max_reports"]
    dropped = 0
    sensor_errors = 0
    reports = 0
    frames_since_status = 0
    sender.hello()
    try:
        while not limit or reports < limit:
            started = time.ticks_ms()
            try:
                reading = source.read()
            except sources.SourceError as exc:
                dropped += 1
                sensor_errors += 1
                if sensor_errors == 1 or sensor_errors % 100 == 0:  # tell, but never flood
                    sender.status(frames.STATUS_SENSOR, dropped, mech.clamped, str(exc))
                reading = False
            if reading is None:  # replay exhausted or stopped
                break
            if reading:
                try:
                    k = perturb[reading[0]](reading[1])
                except (ReadingError, IndexError, TypeError):
                    dropped += 1  # NaN, infinity, or a raw count without calibration
                else:
                    reports += 1
                    if sender.add(mech.low(k)):
                        frames_since_status += 1
                        if status_every and frames_since_status >= status_every:
                            sender.status(frames.STATUS_OK, dropped, mech.clamped, b"")
                            frames_since_status = 0
            if wdt is not None:
                wdt.feed()
            if control is not None and control.stop_requested():
                break
            if period:
                left = period - time.ticks_diff(time.ticks_ms(), started)
                while left > 0:  # sleep in slices so the watchdog keeps being fed
                    step = left if left < 500 else 500
                    time.sleep_ms(step)
                    left -= step
                    if wdt is not None:
                        wdt.feed()
    finally:
        sender.flush()
        sender.status(frames.STATUS_STOPPED, dropped, mech.clamped, b"stopped")
        if kbd is not None:
            kbd.kbd_intr(3)
    return reports


def boot(config_path=CONFIG_PATH):
    """Entry point for the board's main.py. A bug must not leave a deployed board silent: an
    unexpected error is reported as STATUS CRASH and the board resets after crash_reset_ms
    (a watchdog, if configured, would reset it anyway)."""
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
        sender = frames.Sender(sys.stdout.buffer, 0, device_id=_device_id())
        sender.status(frames.STATUS_CRASH, message="%s: %s" % (type(exc).__name__, exc))
        delay = cfg["crash_reset_ms"]
        try:
            import machine

            reset = machine.reset
        except (ImportError, AttributeError):  # the unix port: nothing to reset
            raise exc
        if not delay:
            raise exc
        time.sleep_ms(delay)  # a window to connect and look before the reset
        reset()
