# Boot-time work of the main loop, in a module of its own so that it can be freed before
# sampling starts (zealfw.main.run drops it from sys.modules; nothing it defines stays
# referenced): the config (read and type-checked), the profile (loaded by zealfw.profile,
# also freed), the generator key (zealfw.seed, also freed), the source, the Sender, the
# mechanism; and the rare ends: STATUS for a config/profile error, the hold after a stop
# with a watchdog, the CRASH report. The config keys are documented at the top of main.py.
#
# Nothing returned by setup() is an object of a class defined here (its methods would keep
# this module's globals, hence all of it, alive).
import sys

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


from . import frames
from .mechanism import Zeal

WATCHDOG_MAX_MS = const(8388)  # RP2040's machine.WDT maximum; the portable limit
_RP2040_TEMP = const(4)        # RP2040's ADC channel of the internal temperature sensor
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


def forget(module, attr):
    """Drop a module needed only at start so the collector can free it; on MicroPython only
    (CPython tests import it again)."""
    if sys.implementation.name != "micropython":
        return
    sys.modules.pop(module, None)
    import zealfw

    if attr in zealfw.__dict__:
        delattr(zealfw, attr)


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


def load_config(path):
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


def device_id():
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


def source_from_config(spec, stream=None):
    """Build a source from the device config's "sensor" object (a dict with a string
    "kind"), importing only that kind's module."""
    kind = spec.get("kind")
    if kind == "adc":
        from .src_adc import ADCSource

        channel = spec.get("channel")
        if channel is not None:
            if not isinstance(channel, int) or isinstance(channel, bool) or channel < 0:
                raise ValueError("sensor channel must be a non-negative integer")
            return ADCSource(channel=channel)
        pin = spec.get("pin")
        if pin is None:
            raise ValueError("adc sensor needs a pin or a channel")
        return ADCSource(pin, spec.get("atten"))
    if kind == "rp2040_temp":
        from .src_adc import ADCSource

        return ADCSource(channel=_RP2040_TEMP)
    if kind == "replay":
        path = spec.get("file")
        if path is not None and not isinstance(path, str):
            raise ValueError("replay file must be a string")
        if path is None and stream is None:
            raise ValueError("replay needs an input stream")
        from .src_replay import ReplaySource

        try:
            return ReplaySource(stream, path)
        except OSError:
            raise ValueError("replay file %s cannot be opened" % path)
    if kind == "callable":
        mod, fn = spec.get("module"), spec.get("function")
        if not isinstance(mod, str) or not isinstance(fn, str):
            raise ValueError("callable sensor needs module and function names")
        from .src_callable import CallableSource

        module = __import__(mod, None, None, [fn])
        return CallableSource(getattr(module, fn))
    raise ValueError("unknown sensor kind %r" % (kind,))


class _Profile:
    """The numbers of a checked profile that setup needs, detached from zealfw.profile (so
    that module can be freed before the rest is imported). Zeal keeps none of it."""


_PROFILE_FIELDS = ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent", "bits",
                   "cal", "fingerprint")


def _bits_of(n):
    # the number of binary digits of n > 0 (MicroPython has no int.bit_length)
    b = 0
    while n:
        n >>= 1
        b += 1
    return b


def midpoint(prof):
    """The public value (lo + hi)/2 as an exact (num, den)."""
    lon, lod = prof.lo
    hin, hid = prof.hi
    return lon * hid + hin * lod, 2 * lod * hid


def f64_pattern(num, den):
    """The float64 bit pattern of num/den if that value is a normal float64 exactly (den a
    power of two), else None. Once, at start: a replaced reading then takes the mechanism's
    float64 path (as two 32-bit halves), which allocates far less than perturb(num, den)
    with big denominators; the value, hence the report's law and the words it uses, is the
    same."""
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


def _boot_key(cfg, dev):
    """(key, boot counter) of this boot, or ConfigError with one clear line."""
    try:
        import os

        from . import seed as seed_mod
    except ImportError as exc:
        raise ConfigError("cannot import the generator: %s" % exc)
    if not hasattr(os, "urandom"):
        raise ConfigError("os.urandom is missing")
    try:
        return seed_mod.derive_boot_key(cfg["seed"], extra=bytes(dev))
    except OSError:
        raise ConfigError("no writable filesystem for the seed file %s" % cfg["seed"])
    finally:
        del seed_mod
        forget("zealfw.seed", "seed")


def _stop_with_status(sender, code, message):
    sender.hello()
    sender.status(code, message)


def setup(config_path, out, inp):
    """Everything the loop needs, or None after a STATUS CONFIG / NO_PROFILE / BAD_PROFILE:
    (cfg, mech, sender, source, control, on_repl, replay_in, public) with public the
    replaced readings' value (lo + hi)/2 as (hi32, lo32) float64 halves, or as (num, den)
    when it is no float64 (then `public_is_f64` False): (flag, a, b)."""
    dev = device_id()
    try:
        cfg = load_config(config_path)
        if out is None:
            out, inp2, on_repl = _streams(cfg)
            inp = inp if inp is not None else inp2
        else:
            on_repl = False
    except (ConfigError, KeyError, AttributeError, ValueError, TypeError) as exc:
        out = out if out is not None else sys.stdout.buffer
        _stop_with_status(frames.Sender(out, 0, device_id=dev), frames.STATUS_CONFIG,
                          str(exc))
        return None
    debug = cfg["debug"]
    if debug:
        out.write(DEBUG_WARNING)  # text: the host's framer skips it
    from . import profile as profile_mod

    try:
        p = profile_mod.load(cfg["profile"])
    except profile_mod.ProfileError as exc:
        code = frames.STATUS_NO_PROFILE if exc.reason == "missing_file" else \
            frames.STATUS_BAD_PROFILE
        _stop_with_status(frames.Sender(out, 0, device_id=dev, debug=debug), code, str(exc))
        return None
    prof = _Profile()
    for name in _PROFILE_FIELDS:
        setattr(prof, name, getattr(p, name))
    del p, profile_mod
    forget("zealfw.profile", "profile")

    mid_n, mid_d = midpoint(prof)
    bits = f64_pattern(mid_n, mid_d)
    public = (False, mid_n, mid_d) if bits is None else (True, bits >> 32, bits & 0xFFFFFFFF)
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
            key, boot = _boot_key(cfg, dev)
        source = source_from_config(cfg["sensor"], inp)
        sender = frames.Sender(out, prof.bits, batch=cfg["batch"], device_id=dev,
                               fingerprint=prof.fingerprint, boot=boot,
                               nonce=frames.nonce_of(key), hello_every=cfg["hello_every"],
                               vector=vector, debug=debug,
                               write_timeout_ms=cfg["write_timeout_ms"])
        from .words import CounterWords

        mech = Zeal(prof, CounterWords(key))
    except (ConfigError, ValueError, KeyError, TypeError, ImportError, AttributeError,
            OSError) as exc:
        _stop_with_status(frames.Sender(out, 0, device_id=dev, debug=debug),
                          frames.STATUS_CONFIG, str(exc))
        return None
    replay_in = getattr(source, "from_file", True) is False
    control = None
    if not replay_in and inp is not None:
        from .control import Control

        control = Control(inp)
    return cfg, mech, sender, source, control, on_repl, replay_in, public


def hold(sender, ticks, path):
    """A running watchdog cannot be stopped: write the hold file, say so, reset. At the next
    boot, boot() finds the file, removes it and stays in the REPL (mpremote, `zeal flash`)."""
    try:
        with open(path, "w") as fh:
            fh.write("held\n")
        try:
            import os

            sync = getattr(os, "sync", None)
            if sync is not None:
                sync()
        except ImportError:
            pass
        msg = "watchdog running: resetting into the REPL (hold file %s)" % path
    except OSError:
        msg = ("watchdog running: no writable filesystem for the hold file %s; the board "
               "streams again after this reset" % path)
    sender.status(frames.STATUS_HELD, msg, ticks=ticks)
    import machine

    machine.reset()


def take_hold(path):
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


def crash(exc, config_path):
    """STATUS CRASH for an unexpected error, then machine.reset() after crash_reset_ms.
    Returns (so that the caller re-raises) where there is nothing to reset (the unix port)
    or crash_reset_ms is 0. The private build names the exception's type only (its text
    could depend on a reading); the debug build sends the text too."""
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
    sender = frames.Sender(sys.stdout.buffer, 0, device_id=device_id(), debug=debug)
    name = type(exc).__name__
    sender.status(frames.STATUS_CRASH, "%s: %s" % (name, exc) if debug else name)
    delay = cfg["crash_reset_ms"]
    try:
        import machine

        reset = machine.reset
    except (ImportError, AttributeError):  # the unix port: nothing to reset
        return
    if not delay:
        return
    frames.sleep_ms(delay)  # a window to connect and look before the reset
    reset()
