# The start of a board whose profile reads a tuple (zealfw.build's counterpart): a
# multi-attribute header "zeal-multi/1" (kind 1: zealfw.mprofile, the sampler
# zealfw.msample) or a shuffle profile "zeal-shuffle/2" (kind 2: zealfw.sprofile with its
# privacy rule zealfw.sgamma, the randomiser zealfw.srand), as zealfw.profile.numbers' sniff
# found it ("zeal-shuffle/" of either version; sprofile refuses a withdrawn
# "zeal-shuffle/1"). zealfw.main.run calls make() with this module alone loaded after the
# start's first stage, frees it after, and runs the one loop (zealfw.main._loop) with what
# it returns: the loop builds the sampler from prof.table (the sampler's class) and hands it
# the tuple source's readings.
#
# A shuffle board sends t reports a tick (its t messages, bits = P each: HELLO announces P);
# its Sender's batch is the config's rounded down to a multiple of t, at least t, so a
# tick's reports share one DATA frame and every frame's size depends on the tick count only.
#
# Order as for every profile: a bad profile ends the start with a HELLO without a profile
# and one STATUS before the seed file is touched. A tuple board reads its values from a
# callable or a replay (zealfw.src_tuple); any other sensor kind is a STATUS CONFIG.
try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x

_STATUS_CONFIG = const(5)


class _Profile:
    """fields: the loader's numbers; table: the sampler's class; fingerprint."""


def make(st, kind):
    """(cfg, prof, key, sender, source, control, on_repl, replay_in, public) for
    zealfw.main._loop, or None after a STATUS (CONFIG / NO_PROFILE / BAD_PROFILE)."""
    cfg, out, inp, on_repl, dev = st
    st = None
    from . import forget

    debug = cfg["debug"]
    if kind == 1:
        from .mprofile import numbers
    else:
        from .sprofile import numbers
    fields, err = numbers(cfg["profile"])
    numbers = None
    for name in ("mprofile", "sprofile", "sgamma", "profile", "tprofile", "pfile"):
        forget(name)
    if err is None:
        from .build import boot_key

        try:
            key, boot, vector = boot_key(cfg, dev)
        except ValueError as exc:
            err = (_STATUS_CONFIG, str(exc))
        boot_key = None
        forget("build")
        forget("seed")
    if err is not None:
        from .wire import Sender
        from .wire_setup import stop_with_status

        stop_with_status(Sender, out, dev, debug, err[0], err[1])
        return None
    prof = _Profile()
    prof.fields = fields
    prof.fingerprint = fields[-1]
    spec = cfg["sensor"]
    try:
        from .wire_setup import nonce_of

        batch = cfg["batch"]
        if kind == 1:
            from .msample import Sender, Zeal
        else:
            from .wire import Sender
            from .srand import Zeal

            t = fields[2]  # a tick's t reports in one frame: a multiple of t, at least t
            batch = t if batch < t else batch - batch % t
        args = (out, fields[-2], batch, dev, prof.fingerprint, boot, nonce_of(key),
                cfg["hello_every"], vector, debug, cfg["write_timeout_ms"])
        prof.table = Zeal
        sender = Sender(args[0], args[1], batch=args[2], device_id=args[3],
                        fingerprint=args[4], boot=args[5], nonce=args[6],
                        hello_every=args[7], vector=args[8], debug=args[9],
                        write_timeout_ms=args[10])
        args = None
        forget("wire_setup")
        from .src_tuple import Source

        k = spec.get("kind")
        d = fields[0]
        cats = None
        if kind == 1:  # a categorical field is read as digits only
            cats = [a[0] if len(a) == 2 else 0 for a in fields[3]]
        if k == "callable":
            mod, fn = spec.get("module"), spec.get("function")
            if not isinstance(mod, str) or not isinstance(fn, str):
                raise ValueError("callable sensor needs module and function names")
            module = __import__(mod, None, None, [fn])
            source = Source(d, getattr(module, fn), None, None, cats)
        elif k == "replay":
            path = spec.get("file")
            if path is not None and not isinstance(path, str):
                raise ValueError("replay file must be a string")
            if path is None and inp is None:
                raise ValueError("replay needs an input stream")
            try:
                source = Source(d, None, inp, path, cats)
            except OSError:
                raise ValueError("replay file %s cannot be opened" % path)
        else:
            raise ValueError("a profile of several readings needs a callable or replay "
                             "sensor, not %r" % (k,))
    except (ValueError, KeyError, TypeError, ImportError, AttributeError, OSError) as exc:
        from .wire import Sender
        from .wire_setup import stop_with_status

        stop_with_status(Sender, out, dev, debug, _STATUS_CONFIG, str(exc))
        return None
    replay_in = not source.from_file
    control = None
    if hasattr(out, "poll"):  # an MQTT board (zealfw.mqtt_out): its control topic, and
        control = out       # its ring delivered when the loop closes the source (names
        out.stream = getattr(source, "close", None)  # interned anyway: none costs heap)
        source.close = out.close
    elif not replay_in and inp is not None:
        from .control import Control

        control = Control(inp)
    return cfg, prof, key, sender, source, control, on_repl, replay_in, (False, None, None)
