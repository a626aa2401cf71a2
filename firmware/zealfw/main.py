# The sampling loop: sensor -> mechanism -> packer/framer -> serial line.
#
# Configuration lives in zeal_config.json on the device (all keys optional; a key of the wrong
# type, or an unknown key, stops the board with STATUS CONFIG):
#   period_ms     1000   time between sampling ticks (0: as fast as the source gives readings)
#   batch         64     reports per DATA frame (1..255; for a shuffle profile rounded down
#                        to a multiple of t, at least t: a tick's t messages share a frame)
#   hello_every   16     DATA frames between HELLOs (0..65535; 0: only at boot and on request)
#   status_every  64     DATA frames between STATUS heartbeats (0: none)
#   max_reports   0      stop after this many sampling ticks (0: never)
#   sensor        {"kind": "adc", "pin": 26} | {"kind": "adc", "channel": 4} |
#                 {"kind": "rp2040_temp"} | {"kind": "callable", "module": M, "function": F} |
#                 {"kind": "replay"} | {"kind": "replay", "file": "zeal_replay.txt"}
#                                                            (default: replay on the input)
#   output        {"kind": "repl"} | {"kind": "uart", "id": 1, "baudrate": 115200,
#                 "tx": 4, "rx": 5} | {"kind": "mqtt", "url": "mqtt://HOST:PORT", ...}
#                 (default: repl; the mqtt keys and what they do: zealfw/mqtt_cfg.py,
#                 zealfw/mqtt_out.py)
#   watchdog_ms   0      machine.WDT timeout, 0..8388 (RP2040's maximum; 0: no watchdog)
#                        (a board without machine.WDT stops with STATUS CONFIG, as it does
#                        for an adc sensor without machine.ADC or a uart output without
#                        machine.UART; `zeal flash` refuses such a config before copying)
#   write_timeout_ms 250 a frame the output has not taken after this long is dropped and
#                        counted (STATUS frames_dropped); the watchdog is fed meanwhile
#   start_delay_ms 2000  grace period at boot, before Ctrl-C is disabled (repl output)
#   crash_reset_ms 10000 after an unexpected error: STATUS CRASH, then machine.reset()
#                        this long after (0: stay in the REPL). The wait takes "!stop"
#                        (STATUS STOPPED, the REPL; with watchdog_ms also HELD and a reset
#                        into the held REPL) and Ctrl-C; each crash that resets counts
#                        itself in the hold file zeal_hold (the number of crashes in a row),
#                        removed at the first report; after 3 crashes in a row with no report
#                        the next boot stays in the REPL (and removes the file): no crash
#                        loop the host's tools cannot break
#   profile       "zeal_profile.json"
#   seed          "zeal_seed.bin"  the seed file, rewritten at every boot (needs a writable FS)
#   vector_mode   false  allow a given generator key (tests only: frames are marked VECTOR)
#   vector_key    null   64 hex digits, used only when vector_mode is true
#   debug         false  NOT PRIVATE: send the replaced/clamped counters and SENSOR statuses
#                        (every frame is flagged DEBUG; a warning line is printed at boot)
#
# What leaves the board (shared_spec/mechanism.md, "The whole transcript"): every sampling
# tick makes exactly one report. A reading that cannot be privatised (NaN, infinity, a sensor
# error, a raw count without calibration, a bad type, a blank, bad or overlong replay line;
# the full list per profile kind is in mechanism.md section 8) is replaced by the public
# value, the midpoint (lo + hi)/2 of the profile, before the mechanism. Frames are
# written only at the start of a tick (a full batch goes out at the start of the next tick,
# HELLO and STATUS when due or asked for), so when a frame leaves depends on the tick
# schedule, not on a reading. Nothing counted about readings leaves the default build.
#
# When frames share the REPL's stream, Ctrl-C is disabled while streaming (a 0x03 byte in a
# frame must not stop the board). The way back to the REPL: send the line "!stop" (the host's
# `zeal stop`), or reset the board and press Ctrl-C within start_delay_ms. With a watchdog
# running (it cannot be stopped) "!stop" writes the hold file zeal_hold and resets the board;
# boot() finds the file, removes it and stays in the REPL. After a crash the same ways work
# during the crash_reset_ms wait (zealfw.start.crash), and a board that keeps crashing before
# its first report stops trying after 3 boots.
#
# A shuffle profile's tick makes t reports, its t messages (shared_spec/shuffle.md, "Wire"),
# all in the one DATA frame: one reading, t reports, whatever the reading.
#
# Per report the loop allocates nothing of its own (no tuples, no bytes, no closures): the
# sources hand over an int and set .kind (a float64 as two 32-bit halves), the perturbation
# methods are bound once, and the Sender packs into buffers it made at start.
#
# Heap: this module holds the loop only. Everything done once at boot (config, the sniff,
# profile, boot key, building the source, Sender and sampler; the hold, the CRASH report)
# lives in zealfw.start (with the sniff), the kind's loader, zealfw.seed, zealfw.build (or
# zealfw.mstart), zealfw.wire_setup and zealfw.mech_setup, each freed (and the heap
# collected, see forget) before the next stage: the peak is what stays plus one stage, not
# their sum. The stages hand over one named object, Board; the loop copies what the tick
# reads into locals (faster than attributes) and drops it. The sampler (the mechanism, the
# largest module of the sampling path, with the kind's own) is loaded last, when nothing of
# the start is left. Optional parts (each sensor kind,
# the control-line watch) are imported only when configured. Every name in a module loaded
# from .mpy (globals, attributes, parameters, short strings) is interned for good, even
# after the module is freed: names are few and shared. Figures: tools/bench_heap.py (the
# whole loop from .mpy on the unix port, smallest heap, B/report).

from . import forget  # (the package's: the start-up stages use it too)

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


HOLD_PATH = "zeal_hold"       # a global: the tests point it elsewhere
_CTL_STOP = const(1)           # = control.CTL_STOP / CTL_HELLO
_CTL_HELLO = const(2)
_SLEEP_SLICE = const(500)      # sleep in slices so the watchdog keeps being fed
_KIND_F32 = const(1)           # = sources.KIND_F32 / KIND_F64
_KIND_F64 = const(2)
_STATUS_OK = const(0)          # = wire.STATUS_* (named in zealfw.wire_setup, freed)
_STATUS_SENSOR = const(3)
_STATUS_STOPPED = const(4)


class Board:
    """The main loop's state, one object filled by the start's stages in turn and read by
    the loop (in run): zealfw.start.prepare sets cfg, out, inp, repl, dev; the start's
    last stage (zealfw.build or zealfw.mstart, as the sniff names it) sets key,
    sender, source, control, replay_in, midpoint (the public value, (lo + hi)/2). Attribute
    names the firmware interns anyway where it can: every name is kept for good."""


class Profile:
    """The loaded profile: the numbers its kind's loader named (every loader's numbers(path)
    returns the same record, zealfw.profile.numbers), among them bits (a report's width)
    and fingerprint (both in HELLO), made here once the loader is freed (an object made
    while the loader's module is in memory lies above it and splits the free heap)."""


def run(config_path="zeal_config.json", out=None, inp=None):
    """Stream until stopped. Returns the number of reports (sampling ticks) made."""
    # The start in stages, each module freed before the next is imported (so the peak heap
    # is what stays plus the largest stage, not their sum): zealfw.start (config, streams,
    # the one sniff: which loader reads the profile), the kind's loader (the largest), the
    # start's last stage the sniff names (zealfw.build or zealfw.mstart: boot key, Sender,
    # source), then the loop makes the sampler the loader names. No kind is asked here: the
    # sniff and the loader's record name the modules (tests/test_firmware_layout.py).
    b = Board()
    from . import start

    kind = start.prepare(b, config_path, out, inp)  # (loader, stage): the sniff's
    del start
    forget("start")
    if not kind:  # a STATUS CONFIG was sent
        return 0
    name, stage = kind
    loader = __import__("zealfw." + name, None, None, ("numbers",))
    kind, err = loader.numbers(b.cfg["profile"])
    loader = None
    for name in (name, "profile", "tprofile", "tcompact", "trows", "pfile"):  # the loader and
        # what it imported
        forget(name)
    sampler, names, values = kind
    kind = None
    prof = Profile()
    for i in range(len(names)):
        setattr(prof, names[i], values[i])
    names = values = None
    prof.sampler = sampler  # (zealfw.mstart takes the board's Sender from its module)
    name = stage
    stage = __import__("zealfw." + name, None, None, ("make",))
    ok = stage.make(b, prof, err)
    stage = None
    forget(name)
    forget("wire_setup")  # the Sender's set-up
    if not ok:
        return 0
    # ---- the loop -------------------------------------------------------------------------
    # In run itself, not a function of its own: the caller's frame would keep the Board
    # alive while the sampler is made (the start's peak). What the ticks read is copied into
    # locals (faster than attributes) and the Board dropped.
    cfg, sender, source, control = b.cfg, b.sender, b.source, b.control
    on_repl, replay_in, key = b.repl, b.replay_in, b.key
    pub_f64, pub_a, pub_b = b.midpoint
    b = None
    # The sampler last, once the start's stages are freed: its module (zealfw.mechanism, the
    # largest of the sampling path, or the kind's own on top of it) and its set-up
    # (zealfw.mech_setup, freed after) are the last ones loaded.
    from .mechanism import ReadingError
    from .words import CounterWords

    mech = __import__("zealfw." + sampler, None, None, ("Zeal",)).Zeal(
        prof, CounterWords(key))
    prof = key = None
    forget("mech_setup")
    from . import wire
    from .sources import SourceError

    wdt = None
    if cfg["watchdog_ms"]:
        import machine

        wdt = machine.WDT(timeout=cfg["watchdog_ms"])
        sender.idle = wdt.feed  # bound once: a stalled write keeps the watchdog fed
    if on_repl and cfg["start_delay_ms"]:
        wire.sleep_ms(cfg["start_delay_ms"])  # a window for Ctrl-C before it is disabled
    kbd = None
    if on_repl:
        import micropython

        kbd = micropython
        kbd.kbd_intr(-1)
    debug = cfg["debug"]
    p_raw, p_f32, p_f64 = mech.perturb_raw, mech.perturb_f32, mech.perturb_f64
    # reports a tick: 1, or a shuffle profile's t messages, which the sampler keeps in its
    # list .msgs (one int of t messages could pass 2^30: a heap int on a 32-bit board);
    # zealfw.mstart made the batch a multiple of t, so a tick's reports share one DATA
    # frame and frames still leave only at tick starts
    per = mech.reports
    ticks_ms, ticks_diff, sleep_ms = wire.ticks_ms, wire.ticks_diff, wire.sleep_ms
    period, status_every, limit = cfg["period_ms"], cfg["status_every"], cfg["max_reports"]
    cfg = None           # the config's dict is not needed while sampling: free it
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
                    sender.status(_STATUS_OK, b"", ticks=ticks, replaced=replaced,
                                  clamped=mech.clamped)
                else:
                    sender.status(_STATUS_OK, b"", ticks=ticks)
                since_status = 0
            if sensor_msg is not None:  # debug build only
                sender.status(_STATUS_SENSOR, sensor_msg, ticks=ticks,
                              replaced=replaced, clamped=mech.clamped)
                sensor_msg = None
            # ---- the reading and its one report ----------------------------------------
            kind = -1
            try:
                value = source.read()
                if value is None:  # the replay ended or was stopped
                    stopped = True
                    break
                kind = source.kind
            except SourceError as exc:
                if debug:
                    sensor_errors += 1
                    if sensor_errors == 1 or sensor_errors % 100 == 0:  # tell, never flood
                        sensor_msg = str(exc)
            if kind >= 0:
                try:
                    if kind == _KIND_F64:
                        k = p_f64(value, source.lo)
                    elif kind == _KIND_F32:
                        k = p_f32(value, source.lo)
                    else:
                        k = p_raw(value)
                except ReadingError:  # NaN, infinity, a raw count without calibration, type
                    kind = -1       # (raised before any word is drawn)
            if kind < 0:
                replaced += 1
                if pub_f64:   # the public value, (lo + hi)/2
                    k = p_f64(pub_a, pub_b)
                else:
                    k = mech.perturb(pub_a, pub_b)
            if per == 1:
                full = sender.add(mech.low(k))
            else:
                msgs = mech.msgs
                for i in range(per):  # the tick's messages, message 0 first
                    full = sender.add(msgs[i])
            ticks += 1
            if ticks == 1:  # a report made: crashes in a row (zealfw.start.crash) start again
                try:
                    import os

                    os.remove(HOLD_PATH)
                except (ImportError, OSError):
                    pass
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
        sender.flush(True)  # a full batch, or the short one at the end; a closing HELLO
        if debug:
            sender.status(_STATUS_STOPPED, b"stopped", ticks=ticks, replaced=replaced,
                          clamped=mech.clamped)
        else:
            sender.status(_STATUS_STOPPED, b"stopped", ticks=ticks)
        if kbd is not None:
            kbd.kbd_intr(3)
    close = getattr(source, "close", None)
    if close is not None:
        close()
    if wdt is not None and (stopped or limit):
        from . import start

        start.hold(sender, ticks, HOLD_PATH)  # does not return on a board
    return ticks


def boot(config_path="zeal_config.json"):
    """Entry point for the board's main.py. After a stop with a watchdog running, or after
    crashes in a row before a first report (hold file present, zealfw.start.take_hold) it
    removes the file and returns at once: the board stays in the REPL.

    A bug must not leave a deployed board silent: an unexpected error is reported as STATUS
    CRASH and the board resets after crash_reset_ms (a watchdog, if configured, would reset
    it anyway), unless "!stop" arrives meanwhile; zealfw.start.crash has the details."""
    from . import start

    held = start.take_hold(HOLD_PATH)
    del start
    if held:
        print(held)
        return 0
    try:
        return run(config_path)
    except Exception as exc:
        from . import start

        if start.crash(exc, config_path, HOLD_PATH):  # "!stop" during the wait: the REPL
            return 0
        raise exc  # where there is nothing to reset, or crash_reset_ms is 0
