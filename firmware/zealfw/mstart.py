# The start's last stage for a board whose profile reads a tuple (zealfw.build's
# counterpart): a multi-attribute header "zeal-multi/1" (loaded by zealfw.mprofile, the
# sampler zealfw.msample) or a shuffle profile "zeal-shuffle/2" (zealfw.sprofile with its
# privacy rule zealfw.sgamma, the randomiser zealfw.srand), as the sniff (zealfw.start.prepare) found it;
# the sniff names this stage. zealfw.main.run calls make() once the loader is
# freed, frees this module after, and runs the one loop (zealfw.main.run), which builds
# the sampler the loader names and hands it the tuple source's readings. What differs
# between the two kinds here is asked of the profile (reports, cats, sampler), never of
# the kind.
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


def make(b, p, st):
    """zealfw.build.make for a board that reads a tuple: sets b's key, sender, source,
    control, replay_in and midpoint and returns True, or False after a STATUS (CONFIG /
    NO_PROFILE / BAD_PROFILE). p: zealfw.main.Profile with zealfw.mprofile's or
    zealfw.sprofile's numbers (fields, fingerprint, bits, reports a tick, cats: what the
    tuple source reads as digits only) and sampler, the sampler's module, which holds the
    board's Sender; or st (STATUS code, message) from its loader."""
    prof, err = p, st  # (short parameter names: each is interned for good)
    cfg, out, inp, dev = b.cfg, b.out, b.inp, b.dev
    from . import forget

    forget("sgamma")  # a shuffle profile's privacy rule (zealfw.sprofile's)
    debug = cfg["debug"]
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
        return False
    fields = prof.fields
    spec = cfg["sensor"]
    try:
        from .wire_setup import nonce_of

        # a tick's reports in one frame: a multiple of per (a shuffle profile's t), at least per
        per = prof.reports
        batch = cfg["batch"]
        batch = per if batch < per else batch - batch % per
        # the board's Sender, from the sampler's module (loaded now: the loop's import of
        # it then finds it)
        Sender = __import__("zealfw." + prof.sampler, None, None, ("Sender",)).Sender
        args = (out, prof.bits, batch, dev, prof.fingerprint, boot, nonce_of(key),
                cfg["hello_every"], vector, debug, cfg["write_timeout_ms"])
        sender = Sender(args[0], args[1], batch=args[2], device_id=args[3],
                        fingerprint=args[4], boot=args[5], nonce=args[6],
                        hello_every=args[7], vector=args[8], debug=args[9],
                        write_timeout_ms=args[10])
        args = Sender = None
        forget("wire_setup")
        from .src_tuple import Source

        k = spec.get("kind")
        d = fields[0]
        cats = prof.cats
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
    b.key = key
    b.sender = sender
    b.source = source
    b.control = control
    b.replay_in = replay_in
    b.midpoint = (False, None, None)
    return True
