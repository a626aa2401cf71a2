# Shuffle conformance on the device: handle(request) -> (ok, result | reason).
#
# A request is a case of shared_spec/vectors/shuffle.json as zeal.board.conformance_shuffle
# builds it: kind "profile" with the exact file text, or kind "randomise" with the profile's
# file text, reading tuples (float64 patterns as 16 hex digits) and a generator key or an
# explicit word list. The file is read by the device's sniff rule (zealfw.start.prepare's sniff:
# "zeal-shuffle/" within the first 503 bytes -> zealfw.sprofile, its every check including
# the privacy rule zealfw.sgamma; else the grid/table loader); the randomiser is
# zealfw.srand.Zeal fed through a tuple source's fields, as zealfw.main's loop feeds it, and
# its one int is split into the t messages (P bits each, message 0 lowest) as the loop
# splits it into t wire reports. The tuples arrive and the outputs leave one at a time
# (runner.py's streaming).
from binascii import unhexlify

from zealfw import profile
from zealfw import sprofile
from zealfw import srand
from zealfw.words import CounterWords
from runner import ListWords as _ListWords  # loaded before any suite module


class _Fields:
    pass


class _Tuple:
    pass


def _load(text):
    buf = text.encode()
    if buf.find(b"zeal-shuffle/", 0, 503) >= 0:
        return sprofile.loads(buf)
    profile.loads(buf)
    return None


def handle(request):
    try:
        fields = _load(request["file"])
    except profile.ProfileError as exc:
        return False, exc.reason
    if fields is None:
        return False, "not a shuffle profile"
    if request["kind"] == "profile":
        return True, {"fingerprint": fields[7], "bits": fields[6]}
    f = _Fields()
    f.fields = fields
    if "key" in request:
        source = CounterWords(unhexlify(request["key"]))
    else:
        source = _ListWords([int(w, 16) for w in request.get("words", ())])
    z = srand.Zeal(f, source)
    d = fields[0]
    bits = fields[6]
    mask = (1 << bits) - 1
    src = _Tuple()
    src.kinds = [-1] * d
    src.vals = [0] * d
    src.los = [0] * d

    def outputs():  # streamed by the runner, an input tuple pulled per output
        for item in request["inputs"]:
            for c in range(d):
                src.kinds[c] = -1
                src.vals[c] = src.los[c] = 0
            if len(item) == d:
                for c in range(d):
                    v = item[c]
                    if len(v) == 16:
                        src.kinds[c] = 2
                        src.vals[c] = int(v[:8], 16)
                        src.los[c] = int(v[8:], 16)
            item = None
            before = source.used()
            m = z.low(z.perturb_raw(src))
            msgs = []
            for i in range(z.reports):
                msgs.append(m & mask)
                m >>= bits
            yield {"messages": msgs, "words_used": source.used() - before}
    return True, {"outputs": outputs()}
