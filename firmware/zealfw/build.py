# Boot-time work of the main loop, stage three for a board that reads one value (a grid or a
# table profile: the sniff (zealfw.start.prepare) names this stage; zealfw.mstart is a tuple board's): from
# zealfw.start.prepare's plain data and the loaded profile (zealfw.profile or
# zealfw.tprofile, loaded alone and freed by zealfw.main), the boot key (zealfw.seed, freed at
# once), the Sender (its set-up, zealfw.wire_setup, freed after), the source (only the
# configured kind's module is imported) and the control-line watch, set on the loop's state.
# zealfw.main.run frees this module, then makes the sampler: its module and its set-up
# (zealfw.mech_setup) are the largest of the sampling path, so they are loaded when nothing
# of the start is left. Nothing make() sets is an object of a class with methods defined
# here (it would keep this module alive).
#
# Order, as the wire protocol promises (tests/test_firmware_loop.py): a bad config or a bad
# profile ends the start with a HELLO without a profile and one STATUS before the seed file
# is touched, so a board that cannot stream never advances its boot counter; the seed is
# advanced and written before the first report (zealfw.seed), so a reboot never replays noise.
try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


_RP2040_TEMP = const(4)        # RP2040's ADC channel of the internal temperature sensor
_STATUS_NO_PROFILE = const(1)  # = wire.STATUS_* (named in zealfw.reference)
_STATUS_BAD_PROFILE = const(2)
_STATUS_CONFIG = const(5)


def source_from_config(spec, stream=None):
    """Build a source from the device config's "sensor" object (a dict with a string
    "kind"), importing only that kind's module."""
    kind = spec.get("kind")
    if kind == "adc":
        from .src_adc import Source

        channel = spec.get("channel")
        if channel is not None:
            if not isinstance(channel, int) or isinstance(channel, bool) or channel < 0:
                raise ValueError("sensor channel must be a non-negative integer")
            return Source(channel=channel)
        pin = spec.get("pin")
        if pin is None:
            raise ValueError("adc sensor needs a pin or a channel")
        return Source(pin, spec.get("atten"))
    if kind == "rp2040_temp":
        from .src_adc import Source

        return Source(channel=_RP2040_TEMP)
    if kind == "replay":
        path = spec.get("file")
        if path is not None and not isinstance(path, str):
            raise ValueError("replay file must be a string")
        if path is None and stream is None:
            raise ValueError("replay needs an input stream")
        from .src_replay import Source

        try:
            return Source(stream, path)
        except OSError:
            raise ValueError("replay file %s cannot be opened" % path)
    if kind == "callable":
        mod, fn = spec.get("module"), spec.get("function")
        if not isinstance(mod, str) or not isinstance(fn, str):
            raise ValueError("callable sensor needs module and function names")
        from .src_callable import Source

        module = __import__(mod, None, None, [fn])
        return Source(getattr(module, fn))
    if kind == "gps":  # its config is checked there (ValueError), only when configured
        from .src_gps import Source

        try:
            return Source(spec, stream)
        except OSError:
            raise ValueError("gps file %s cannot be opened" % spec.get("file"))
    raise ValueError("unknown sensor kind %r" % (kind,))


def boot_key(cfg, dev):
    """(key, boot counter, vector) of this boot; ValueError with one clear line. The caller
    frees zealfw.seed (forget("seed"))."""
    if cfg["vector_mode"] and cfg["vector_key"] is not None:
        import binascii

        try:
            key = binascii.unhexlify(cfg["vector_key"])
        except ValueError:
            key = b""
        if len(key) != 32:
            raise ValueError("vector_key must be 64 hex digits")
        return key, 0, True
    try:
        import os

        from . import seed
    except ImportError as exc:
        raise ValueError("cannot import the generator: %s" % exc)
    if not hasattr(os, "urandom"):
        raise ValueError("os.urandom is missing")
    try:
        key, boot = seed.derive_boot_key(cfg["seed"], extra=bytes(dev))
    except OSError:
        raise ValueError("no writable filesystem for the seed file %s" % cfg["seed"])
    return key, boot, False


def _bits_of(n):
    # the number of binary digits of n > 0 (MicroPython has no int.bit_length)
    b = 0
    while n:
        n >>= 1
        b += 1
    return b


def midpoint(p):
    """The public value (lo + hi)/2 of profile p as an exact (num, den)."""
    lon, lod = p.lo
    hin, hid = p.hi
    return lon * hid + hin * lod, 2 * lod * hid


def f64_pattern(n, d):
    """The float64 bit pattern of n/d if that value is a normal float64 exactly (d a
    power of two), else None. Once, at start: a replaced reading then takes the mechanism's
    float64 path (as two 32-bit halves), which allocates far less than perturb(n, d)
    with big denominators; the value, hence the report's law and the words it uses, is the
    same."""
    if d <= 0 or d & (d - 1):
        return None
    if n == 0:
        return 0
    sign = 0
    if n < 0:
        sign, n = 1, -n
    while not n & 1 and d > 1:
        n >>= 1
        d >>= 1
    nb = _bits_of(n)
    if nb > 53:
        return None
    e = 1075 - (_bits_of(d) - 1) - 53 + nb
    if e < 1 or e > 2046:
        return None
    return (sign << 63) | (e << 52) | ((n << (53 - nb)) - (1 << 52))


def make(b, p, st):
    """Stage three for a board that reads one value, from the loop's state b
    (zealfw.start.prepare's cfg, out, inp, repl, dev) and the loaded profile p
    (zealfw.main.Profile: the numbers zealfw.profile.numbers or zealfw.tprofile.numbers
    named, the loader itself freed) or its loader's st (STATUS code, message): sets b's key,
    sender, source, control, replay_in and midpoint and returns True, for zealfw.main, which
    makes the sampler from p and key; or False after a STATUS CONFIG / NO_PROFILE /
    BAD_PROFILE. midpoint: the
    replaced readings' value (lo + hi)/2 as (True, hi32, lo32), its float64 pattern's halves,
    or as (False, num, den) when it is no float64."""
    prof, err = p, st  # (short parameter names: each is interned for good)
    cfg, out, inp, dev = b.cfg, b.out, b.inp, b.dev
    from . import forget

    debug = cfg["debug"]
    if err is None:
        try:
            key, boot, vector = boot_key(cfg, dev)
        except ValueError as exc:
            err = (_STATUS_CONFIG, str(exc))
        forget("seed")
    if err is not None:
        from .wire import Sender
        from .wire_setup import stop_with_status

        stop_with_status(Sender, out, dev, debug, err[0], err[1])
        return False
    mid_n, mid_d = midpoint(prof)
    bits = f64_pattern(mid_n, mid_d)
    public = (False, mid_n, mid_d) if bits is None else (True, bits >> 32, bits & 0xFFFFFFFF)
    try:
        # One set-up module at a time, each freed before the next is loaded: the Sender's
        # (zealfw.wire_setup), then the source's own module.
        from . import wire
        from .wire_setup import nonce_of

        sender = wire.Sender(out, prof.bits, batch=cfg["batch"], device_id=dev,
                             fingerprint=prof.fingerprint, boot=boot,
                             nonce=nonce_of(key), hello_every=cfg["hello_every"],
                             vector=vector, debug=debug,
                             write_timeout_ms=cfg["write_timeout_ms"])
        forget("wire_setup")
        source = source_from_config(cfg["sensor"], inp)
    except (ValueError, KeyError, TypeError, ImportError, AttributeError, OSError) as exc:
        from .wire import Sender
        from .wire_setup import stop_with_status

        stop_with_status(Sender, out, dev, debug, _STATUS_CONFIG, str(exc))
        return False
    replay_in = getattr(source, "from_file", True) is False
    control = None
    if hasattr(out, "poll"):  # an MQTT board (zealfw.mqtt_out): its control topic, and
        control = out       # its ring delivered when the loop closes the source (names
        out.stream = getattr(source, "close", None)  # interned anyway: none costs heap)
        source.close = out.close
    elif not replay_in and inp is not None:
        from .control import Control

        control = Control(inp)
    b.key = key
    b.sender = sender
    b.source = source
    b.control = control
    b.replay_in = replay_in
    b.midpoint = public
    return True
