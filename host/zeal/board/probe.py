"""Running mpremote on a board: the probe before a flash, and mpremote's failures as one line.

PROBE_CODE is a short `mpremote exec`: can the board write and remove a file, and does it
have os.urandom? `probe_code(needs)` adds a check of each feature a config needs of the
board's MicroPython (machine.WDT for a watchdog, machine.ADC for an adc sensor, ...; `zeal
flash` gives them). `probe_problems(output)` reads its marker line, `probe_message` names what
is missing in one line, `run_probe` runs it (`zeal flash`; the conformance runner's board
target runs PROBE_CODE through mpremote's transport). `mpremote_error(output, port)` turns
mpremote's output (its message, or a traceback from it or from the board) into one line.
"""
import json
import re
import subprocess
import sys

from ..errors import ZealError


# Board-side probe: can the board write and remove a file, and does it have os.urandom? One
# marker line, e.g. "ZEAL-PROBE ok" or "ZEAL-PROBE fs=19 urandom=AttributeError" (fs=errno of
# the failed write, as MicroPython's OSError carries it in args[0]). With needs (probe_code):
# "missing=machine.WDT" for each feature the board lacks, a module ("socket") or a module's
# attribute ("machine.WDT"), looked up only: nothing is started (a machine.WDT, once
# started, cannot be stopped). Valid MicroPython.
PROBE_FILE = "zeal_probe.tmp"
PROBE_MARK = "ZEAL-PROBE"
_PROBE_HEAD = ("import os\n"
               "r = []\n"
               "try:\n"
               " f = open(%(file)s, \"wb\")\n"
               " try:\n  f.write(b\"zeal\")\n finally:\n  f.close()\n"
               " os.remove(%(file)s)\n"
               "except OSError as e:\n"
               " r.append(\"fs=\" + str(e.args[0] if e.args else \"?\").replace(\" \", \"_\"))\n"
               "try:\n"
               " if len(os.urandom(8)) != 8:\n  r.append(\"urandom=short\")\n"
               "except Exception as e:\n"
               " r.append(\"urandom=\" + type(e).__name__)\n"
               % {"file": json.dumps(PROBE_FILE)})
_PROBE_NEEDS = ("for n in (%s,):\n"
                " m = n.split(\".\")\n"
                " try:\n"
                "  o = __import__(m[0])\n"
                "  if len(m) > 1 and not hasattr(o, m[1]):\n   r.append(\"missing=\" + n)\n"
                " except ImportError:\n"
                "  r.append(\"missing=\" + n)\n")
# then the board's native architecture (sys.implementation._mpy's bits 10-15, 0 for none:
# zeal.board.firmware.arch_name), for the modules of native code: "ZEAL-PROBE ok arch=5"
_PROBE_TAIL = ("import sys\n"
               "print(%s, \" \".join(r) or \"ok\", \"arch=%%d\" %% "
               "(getattr(sys.implementation, \"_mpy\", 0) >> 10 & 63))\n"
               % json.dumps(PROBE_MARK))
_FEATURE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?\Z")


def probe_code(needs=()):
    """The probe's code; `needs`: feature names ("machine.WDT", "socket") to look up too."""
    needs = list(needs)
    for name in needs:
        if not _FEATURE.match(name):
            raise ValueError("not a feature name: %r" % (name,))
    return (_PROBE_HEAD + (_PROBE_NEEDS % ", ".join(json.dumps(n) for n in needs)
                           if needs else "") + _PROBE_TAIL)


PROBE_CODE = probe_code()
# errno -> (what the probe says, what mpremote_error adds); MicroPython's OSError carries the
# errno number (OSError: 19, or [Errno 19] ENODEV)
ERRNO_TEXT = {
    "19": ("no filesystem is mounted (OSError 19, ENODEV)",
           "the board has no filesystem mounted, ENODEV"),
    "30": ("its filesystem is read-only (OSError 30, EROFS)",
           "the board's filesystem is read-only, EROFS"),
    "28": ("its filesystem is full (OSError 28, ENOSPC)", "the board's filesystem is full, ENOSPC"),
    "13": ("its filesystem refuses writes (OSError 13, EACCES)",
           "the board's filesystem refuses writes, EACCES"),
    "5": ("its filesystem gives I/O errors (OSError 5, EIO)",
          "the board's filesystem gives I/O errors, EIO"),
}


def probe_problems(output, needs=None):
    """The problems a probe run reports, as phrases ([] for a board that passes), or None when
    its output holds no marker line. `needs`: {feature: (who, fix)} from the flash plan
    (Need), so that a missing feature is named with what needs it and what to do instead;
    features that share (who, fix) make one phrase."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith(PROBE_MARK + " "):
            break
    else:
        return None
    needs = needs or {}
    problems = []
    missing = {}  # (who, fix) -> [feature], in the order seen
    for token in line[len(PROBE_MARK) + 1:].split():
        what, _, value = token.partition("=")
        if what == "fs":
            problems.append(ERRNO_TEXT[value][0] if value in ERRNO_TEXT else
                            "its filesystem is not writable (OSError %s)" % value)
        elif what == "urandom":
            problems.append("its MicroPython has no os.urandom" if value == "AttributeError"
                            else "os.urandom fails (%s)" % value)
        elif what in ("ok", "arch"):
            continue
        elif what == "missing" and value:
            why = needs.get(value)
            if why is None:
                problems.append("its MicroPython has no %s" % value)
            else:
                if tuple(why) not in missing:
                    missing[tuple(why)] = []
                    problems.append(tuple(why))  # a placeholder, filled in below
                missing[tuple(why)].append(value)
    return [p if isinstance(p, str) else
            "its MicroPython has no %s, which %s needs (%s)" % (
                " and no ".join(missing[p]), p[0], p[1]) for p in problems]


def probe_message(problems, what):
    """One line naming why the board cannot take `what`."""
    needs = []
    if any("filesystem" in p for p in problems):
        needs.append("a writable filesystem")
    if any("urandom" in p for p in problems):
        needs.append("os.urandom for its generator key")
    if not needs:  # only features a config asks for
        return "%s: %s" % (what, "; ".join(problems))
    return "%s: %s (Zeal needs %s; use a MicroPython build that has %s)" % (
        what, "; ".join(problems), " and ".join(needs), "them" if len(needs) > 1 else "it")


def probe_argv(port, needs=()):
    return [sys.executable, "-m", "mpremote", "connect", port, "+", "exec", probe_code(needs)]


def probe_arch(output):
    """The -march name of the board's native code from a probe's output; None when it runs
    none (or did not say)."""
    from .firmware import arch_name

    for line in reversed(output.splitlines()):
        if line.strip().startswith(PROBE_MARK + " "):
            for token in line.split():
                if token.startswith("arch=") and token[5:].isdigit():
                    return arch_name(int(token[5:]) << 10)
            return None
    return None


def run_probe(argv, port, timeout=60, needs=None):
    """Run the probe's mpremote command; ZealError (one line) if it fails, or the board lacks
    a writable filesystem, os.urandom or a feature of `needs` ({feature: (who, fix)}).
    Returns the board's native architecture (probe_arch)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, errors="replace",
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ZealError("mpremote did not finish on %s within %d s" % (port, timeout)) from None
    except OSError as exc:
        raise ZealError("cannot run mpremote: %s" % exc) from None
    if done.returncode != 0:
        raise ZealError(mpremote_error(done.stdout, port))
    problems = probe_problems(done.stdout, needs)
    if problems is None:
        raise ZealError("mpremote on %s: the board did not answer the probe (output: %s)"
                        % (port, " | ".join(done.stdout.split("\n")[-3:]).strip() or "none"))
    if problems:
        zeal = any("filesystem" in p or "urandom" in p for p in problems)
        raise ZealError(probe_message(problems, "the board on %s cannot run %s" % (
            port, "Zeal" if zeal else "this config")))
    return probe_arch(done.stdout)


_ERR_LINE = re.compile(r"^(?:[\w.]*(?:Error|Exception)): (.+)$")


def mpremote_error(output, port):
    """One line from mpremote's output (its "mpremote: ..." message, or the last line of a
    traceback, from mpremote or from the board)."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    msg = None
    for line in reversed(lines):
        if line.startswith("mpremote: "):
            msg = line[len("mpremote: "):]
            break
        m = _ERR_LINE.match(line)
        if m:
            # mpremote's own (qualified: mpremote.transport.TransportError) -> the message;
            # the board's (OSError: 28) -> the whole line
            msg = m.group(1) if "." in line.split(":", 1)[0] else line
            break
    if msg is None:
        msg = lines[-1] if lines else "no output"
    m = re.search(r"\[Errno (\d+)\]|OSError: (\d+)\b", msg)
    if m and (m.group(1) or m.group(2)) in ERRNO_TEXT:
        msg += " (%s)" % ERRNO_TEXT[m.group(1) or m.group(2)][1]
    if "could not enter raw repl" in msg:
        msg += (" (is it running MicroPython? A board streaming Zeal frames with a long "
                "period_ms: `zeal stop --port PORT`, wait one period, flash again)")
    return "mpremote failed on %s: %s" % (port, msg)
