# Boot-time work of the main loop, stage one, in a module of its own so that it is freed
# before anything else is loaded (zealfw.main.run drops it from sys.modules): the config
# (read and type-checked), the streams, the device id and the one sniff of the device
# (sniff: which kind the profile file is, as the loader that reads it). Stage two is that
# loader (zealfw.profile, tprofile, mprofile or sprofile); stage three, the one it names
# (zealfw.build or zealfw.mstart), derives the boot key (zealfw.seed) and makes the Sender
# and the source; the sampler is made last, by zealfw.main, once stage three is freed. (The
# sniff is here, not in a module of its own: loading one more module between the stages
# left the table profile's start 5 KiB more heap in the unix port's fragmented heap.) Also the rare
# ends, imported when they happen: the hold after a stop with a watchdog, the CRASH report
# and the count of crashes in a row (both in the hold file). The config keys are documented
# at the top of main.py.
#
# Heap: the profile's loader is the largest start-up module; loading it while this module
# was alive too was the start's highest peak, hence the split.
#
# prepare() sets plain data only on the loop's state: an object of a class defined here would
# keep this module's globals, hence all of it, alive.
import sys

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


_WATCHDOG_MAX_MS = const(8388)  # RP2040's machine.WDT maximum; the portable limit


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
_STATUS_STOPPED = const(4)      # = wire.STATUS_* (wire is not imported in stage one)
_STATUS_CONFIG = const(5)
_STATUS_CRASH = const(6)
_STATUS_HELD = const(7)
_CRASH_LIMIT = const(3)         # crashes in a row before a first report: then the REPL


def _check_config(cfg):
    for key in _INT_KEYS:
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > _INT_MAX:
            raise ConfigError("%s must be an integer in [0, %d]" % (key, _INT_MAX))
    if not 1 <= cfg["batch"] <= 255:
        raise ConfigError("batch must be 1..255")
    if cfg["hello_every"] > 0xFFFF:
        raise ConfigError("hello_every must be 0..65535")
    if cfg["watchdog_ms"] > _WATCHDOG_MAX_MS:
        raise ConfigError("watchdog_ms must be at most %d (RP2040's machine.WDT maximum)"
                          % _WATCHDOG_MAX_MS)
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


def device_id(config_path="zeal_config.json"):
    """machine.unique_id(), or on a port without one (the unix port) a random id made once
    and kept in zeal_id.bin beside the config: a fixed fallback gave every such board one id."""
    try:
        import machine

        return machine.unique_id()
    except (ImportError, AttributeError):
        pass
    path = config_path[:config_path.rfind("/") + 1] + "zeal_id.bin"
    try:
        with open(path, "rb") as f:
            uid = f.read(9)
        if 0 < len(uid) < 9:
            return uid
    except OSError:
        pass
    import os

    if not hasattr(os, "urandom"):  # this board cannot run anyway (the key needs it)
        return b"unix"
    uid = os.urandom(8)
    try:
        with open(path, "wb") as f:
            f.write(uid)
    except OSError:  # no writable filesystem: this boot's id only
        pass
    return uid


def _streams(cfg, dev):
    """(out, inp, on_repl): where frames go and where control/replay lines come from."""
    spec = cfg["output"]
    kind = spec["kind"]
    if kind == "mqtt":  # zealfw.mqtt_cfg: loaded for an MQTT board only (and freed)
        from .mqtt_cfg import make

        return make(spec, dev), sys.stdin.buffer, False
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
    raise ConfigError("output kind must be repl, uart or mqtt")


def prepare(b, config_path, out, inp):
    """Stage one of the start, before any other module is loaded: the config, the streams,
    the device id, set on the loop's state b (zealfw.main.Board) as cfg, out, inp, repl (the
    frames share the REPL's stream), dev. Returns the names of the profile kind's loader and last start stage (sniff: the
    one sniff), or None after a STATUS CONFIG."""
    dev = device_id(config_path)
    try:
        cfg = load_config(config_path)
        if cfg["watchdog_ms"]:
            # before anything starts: a board without machine.WDT would crash at every boot
            # (a missing machine.ADC or UART is a STATUS CONFIG when the source or the
            # output is made)
            try:
                import machine
            except ImportError:
                machine = None
            if not hasattr(machine, "WDT"):
                raise ConfigError("watchdog_ms needs machine.WDT: this board has none")
            machine = None
        if out is None:
            out, inp2, on_repl = _streams(cfg, dev)
            inp = inp if inp is not None else inp2
        else:
            on_repl = False
    except (ConfigError, KeyError, AttributeError, ValueError, TypeError) as exc:
        from .wire import Sender
        from .wire_setup import stop_with_status

        out = out if out is not None else sys.stdout.buffer
        stop_with_status(Sender, out, dev, False, _STATUS_CONFIG, str(exc))
        return None
    if cfg["debug"]:
        # text: the host's framer skips it
        out.write(b"zeal: DEBUG build - NOT PRIVATE: counters of replaced and clamped "
                  b"readings and sensor errors are sent\r\n")
    b.cfg = cfg
    b.out = out
    b.inp = inp
    b.repl = on_repl
    b.dev = dev
    # The one sniff of the device: shared_spec/profile.md's dispatch rule, within the file's
    # first 503 bytes (one more than a grid profile can be): "zeal-multi/1" a
    # multi-attribute header (zealfw.mprofile), "zeal-shuffle/" a shuffle profile of either
    # version (zealfw.sprofile, which refuses a withdrawn "zeal-shuffle/1" with reason
    # format), "zeal-table/" a table profile of either version (zealfw.tprofile), else a grid profile
    # (zealfw.profile). Every loader's numbers(path) returns the same record
    # (zealfw.profile.numbers), which zealfw.main.run asks, never the kind. The result:
    # (loader, stage), the loader's module and the start's last stage ("build" for a board
    # that reads one value, "mstart" for one that reads a tuple); the grid's for a file that
    # cannot be read (its loader then says NO_PROFILE for a missing file, BAD_PROFILE
    # otherwise). Here, not a function or module of its own: every name is interned for good.
    try:
        with open(cfg["profile"], "rb") as fh:
            buf = fh.read(503)
    except OSError:
        return "profile", "build"
    for tag, kind in ((b"zeal-multi/1", ("mprofile", "mstart")),
                      (b"zeal-shuffle/", ("sprofile", "mstart")),
                      (b"zeal-table/", ("tprofile", "build"))):
        if buf.find(tag) >= 0:
            return kind
    return "profile", "build"


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
    sender.status(_STATUS_HELD, msg, ticks=ticks)
    import machine

    machine.reset()


# The hold file holds "held" (a stop with a watchdog running: hold) or the number of crashes
# in a row (crash). Helpers of their own would intern their names for good (heap): inline.
def take_hold(path):
    """None (start streaming), or the line boot() prints before it stays in the REPL: a stop
    with a watchdog left the hold file ("held"), or the board crashed _CRASH_LIMIT times in a
    row without a report (crash() counts them in the same file; the loop removes it at its
    first report). The file is removed then: the next reset starts afresh."""
    try:
        with open(path) as fh:
            n = fh.read(8)
    except OSError:
        return None
    n = int(n) if n.isdigit() else 0
    if 0 < n < _CRASH_LIMIT:
        return None
    try:
        import os

        os.remove(path)
    except (ImportError, OSError):
        pass
    if n:
        return ("zeal: %d crashes in a row before a first report (STATUS CRASH); in the REPL. "
                "Fix the cause and flash again, or reset the board to try again." % n)
    return "zeal: held after a stop; in the REPL. Reset the board to stream again."


def crash(exc, config_path, path="zeal_hold"):
    """STATUS CRASH for an unexpected error, then machine.reset() after crash_reset_ms.

    The crash loop can always be broken. The wait watches the REPL's input: the line
    "!stop" (`zeal stop`, `zeal flash`) gets STATUS STOPPED and the REPL (returns True:
    boot() returns), or with watchdog_ms set (a watchdog may be running) STOPPED, HELD and a
    reset into the held REPL, as a stop while streaming does; Ctrl-C works too. A crash that
    resets counts itself in the hold file `path`, which the loop removes at its first
    report: after _CRASH_LIMIT crashes in a row without one, the next boot stays in the REPL
    (take_hold). Returns False (so that the caller re-raises) where there is nothing to reset
    (the unix port) or crash_reset_ms is 0. The private build names the exception's type
    only (its text could depend on a reading); the debug build sends the text too."""
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
    from . import wire

    sender = wire.Sender(sys.stdout.buffer, 0, device_id=device_id(config_path), debug=debug)
    name = type(exc).__name__
    sender.status(_STATUS_CRASH, "%s: %s" % (name, exc) if debug else name)
    delay = cfg["crash_reset_ms"]
    try:
        import machine

        reset = machine.reset
    except (ImportError, AttributeError):  # the unix port: nothing to reset
        return False
    if not delay:
        return False
    n = 1
    try:
        with open(path) as fh:
            n += int(fh.read(8))  # "held" (not a count) is a ValueError
    except (OSError, ValueError):
        pass
    try:
        with open(path, "w") as fh:
            fh.write(str(n))
    except OSError:  # no writable filesystem: no count
        pass
    ctl = None
    try:
        from .control import Control

        ctl = Control(sys.stdin.buffer)
    except Exception:  # no input to watch: Ctrl-C only
        pass
    t0 = wire.ticks_ms()
    while wire.ticks_diff(wire.ticks_ms(), t0) < delay:  # a window to connect and look
        if ctl is not None and ctl.poll() == 1:  # "!stop" (control.CTL_STOP)
            sender.status(_STATUS_STOPPED, b"stopped")
            if cfg["watchdog_ms"] and hasattr(machine, "WDT"):
                hold(sender, 0, path)  # does not return on a board
            try:
                import os

                os.remove(path)
            except (ImportError, OSError):
                pass
            return True
        wire.sleep_ms(50)
    reset()
    return False
