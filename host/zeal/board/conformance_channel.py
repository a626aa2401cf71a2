"""How the conformance runner is talked to: lockstep JSON lines, its replies marked "@@", a
case's long lists streamed one item at a time (_LineChannel); and the runner in a child
process, the MicroPython unix port or CPython (ProcessImpl)."""
import collections
import json
import queue
import subprocess
import threading
import time

from .firmware import ConformanceError

MARK = "@@"  # starts a runner's result line; any other line is noise
# Case fields sent as streamed items to a runner that announces "stream" (runner.py's module
# doc): the long lists a suite reads once, in order. The runner pulls them one at a time;
# outputs come back one at a time too, so no request or reply line holds a whole case (the
# largest case, multi m-d16-k16-edges, is a 30 KB request line otherwise).
STREAMED = ("inputs", "lines", "reports", "words", "parts")
LAST_WORDS = 300  # characters of a dead runner's output quoted in its case's detail


def split_request(req):
    """(the request line's object, {field: [items]}): the STREAMED lists of req["case"]
    replaced by "items": {field: count}."""
    case = req.get("case")
    if not isinstance(case, dict):
        return req, {}
    streams = {k: case[k] for k in STREAMED if isinstance(case.get(k), list)}
    if not streams:
        return req, {}
    sent = dict(req, case={k: v for k, v in case.items() if k not in streams})
    sent["items"] = {k: len(v) for k, v in streams.items()}
    return sent, streams


def one_line(text, limit=LAST_WORDS):
    """Output as one line: its non-blank lines joined by " | " (control characters and raw
    REPL markers dropped), the last `limit` characters."""
    clean = "".join(c if c in "\n\t" or " " <= c < "\x7f" or c > "\x9f" else "\n" for c in text)
    lines = [ln.strip() for ln in clean.splitlines()]
    out = " | ".join(ln for ln in lines if ln and ln != ">")
    return out if len(out) <= limit else "..." + out[-limit:]


class _LineChannel:
    """Lockstep JSON-lines over some byte stream: send one request, read its "@@" reply;
    a streamed case (split_request) exchanges one item per runner's "more" and collects the
    runner's "item" lines (a list) or "part" lines (a string) into the result."""

    strict_reasons = True
    noise_limit = 200

    def __init__(self):
        self.noise = collections.deque(maxlen=self.noise_limit)
        self.banner = {}
        self.dead = False  # set when the runner died or was given up on: close() says no bye

    def _note(self, line):
        if line:
            self.noise.append(line)

    def noise_tail(self, n=8):
        return one_line("\n".join(list(self.noise)[-n:]))

    def _wait_marked(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConformanceError("no answer for %.0f s; last words: %s"
                                       % (timeout, self.noise_tail() or "(none)"))
            line = self._readline(left)
            if line is None:
                raise ConformanceError("runner ended; last words: %s"
                                       % (self.noise_tail() or "(none)"))
            line = line.rstrip("\r\n")
            if line.startswith(MARK):
                try:
                    return json.loads(line[len(MARK):])
                except ValueError:
                    self._note(line)
                    continue
            self._note(line)

    def wait_ready(self, timeout):
        while True:
            msg = self._wait_marked(timeout)
            if msg.get("ready"):
                self.banner = msg
                return msg

    def _send(self, obj):
        self._write((json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii"))

    def request(self, req, timeout=60.0):
        """The runner's reply to req. `timeout`: seconds the runner may stay silent (a
        streamed case takes as long as its items need, each exchange within the timeout).
        ConformanceError when the runner dies, stays silent or answers out of turn."""
        streams = {}
        if self.banner.get("stream"):
            sent, streams = split_request(req)
        else:
            sent = req
        self._send(sent)
        taken = dict.fromkeys(streams, 0)
        items = []
        while True:
            msg = self._wait_marked(timeout)
            rid = msg.get("id")
            if rid is None and msg.get("ok") is False:
                # the runner could not read the request line (e.g. MemoryError): its answer
                return dict(msg, id=req["id"])
            if rid != req["id"]:
                raise ConformanceError("reply for %r while waiting for %r" % (rid, req["id"]))
            if "more" in msg:
                field = msg["more"]
                if field not in streams or taken[field] >= len(streams[field]):
                    raise ConformanceError("runner asked for item %d of %r, which the case "
                                           "does not have" % (taken.get(field, 0), field))
                self._send(streams[field][taken[field]])
                taken[field] += 1
                continue
            if "item" in msg or "part" in msg:
                items.append(msg["item"] if "item" in msg else msg["part"])
                continue
            key = msg.pop("items", None)
            text = msg.pop("text", None)
            if msg.get("ok") and isinstance(msg.get("result"), dict):
                if key is not None:
                    msg["result"][key] = items
                elif text is not None:
                    msg["result"][text] = "".join(items)
            return msg


class ProcessImpl(_LineChannel):
    """The runner in a child process (MicroPython unix port, or CPython)."""

    def __init__(self, name, argv, env, cwd=None, ready_timeout=30.0):
        super().__init__()
        self.name = name
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=cwd, bufsize=0)
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()
        try:
            self.wait_ready(ready_timeout)
        except ConformanceError:
            self.close()
            raise

    def _pump(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode("utf-8", "replace"))
        self.lines.put(None)

    def _readline(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return ""

    def _write(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ConformanceError("runner is gone; last words: %s"
                                   % (self.noise_tail() or "(none)"))

    def close(self):
        if self.proc.poll() is None and self.dead:
            self.proc.kill()  # silent or out of turn: no goodbye
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"suite":"quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.proc.stdout.close()
