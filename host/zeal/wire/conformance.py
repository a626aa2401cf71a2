"""Judge answers to the wire vectors (shared_spec/vectors/wire.json); the zeal.board.conformance
checker of suite "wire".

The device side (firmware/conformance/conformance_wire.py) answers `handle(case)` with
(ok, frame_hex) or (False, reason). Only cases with target "both" (or "device") go to a
device: devices encode and never parse frames. `handle` here is the host implementation
(target "cpython"): it encodes with zeal.wire's reference encoders and answers the decode
cases (target "host") with what a zeal.wire.Decoder made of the stream.
"""
import json
import os
from typing import Iterable, List, Tuple

from ..contract import VECTORS
from .. import wire  # the package: codec, deframer and decoder together

# the repository root is four folders up: host/zeal/wire/conformance.py
PROFILES_JSON = os.path.join(VECTORS, "profiles.json")

DEVICE_TARGETS = ("both", "device")


def device_cases(doc: dict) -> List[dict]:
    """The cases of a wire.json document that a device answers."""
    return [c for c in doc["cases"] if c.get("target", "both") in DEVICE_TARGETS]


def request(case: dict) -> dict:
    """What an implementation is sent for a case: its inputs, no answers."""
    if case["op"] == "decode":
        return {"op": "decode", "stream": case["stream"], "vectors": case.get("vectors", False)}
    return {"op": case["op"], "fields": case.get("fields", {})}


def _batch(fields) -> int:
    batch = fields["batch"]
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= wire.MAX_COUNT:
        raise wire.FrameError("encode", "batch must be in [1, %d]" % wire.MAX_COUNT)
    return batch


def _session(fields) -> bytes:
    """The session that seeds DATA's CRC, from a case's fields; the defaults are a device
    Sender's (device id, fingerprint and nonce zero, boot 0)."""
    return wire.session_bytes(fields.get("device_id") or "00" * 8,
                              fields.get("fingerprint") or "00" * 8, fields.get("boot", 0),
                              fields.get("nonce") or "00" * 8)


def _data_frames(seq, bits, batch, lows, flags, session):
    """Full batches then a short one; `seq` is the u32 of the first frame, +1 per frame."""
    out = []
    for start in range(0, len(lows), batch):
        out.append(wire.encode_data(seq=seq, bits=bits, reports=lows[start:start + batch],
                                    flags=flags, session=session))
        seq = (seq + 1) & wire.MAX_SEQ32
    return out


def encode_case(op: str, fields: dict) -> bytes:
    """The host reference for what a device's Sender writes for an encode case (FrameError
    'encode' for fields a device must refuse)."""
    f = fields
    if op == "hello":
        return wire.encode_hello(**f)
    if op == "status":
        return wire.encode_status(**f)
    if op == "data":
        return b"".join(_data_frames(f["seq"], f["bits"], _batch(f), list(f["reports"]),
                                     f.get("flags", 0), _session(f)))
    if op == "session":
        batch = _batch(f)
        every = f.get("hello_every", 16)
        seq = f.get("seq", 0)

        def hello(next_seq):
            return wire.encode_hello(device_id=f["device_id"], fingerprint=f["fingerprint"],
                                     boot=f["boot"], nonce=f.get("nonce") or "00" * 8,
                                     next_seq=next_seq, bits=f["bits"], batch=batch,
                                     firmware=f.get("firmware", (0, 1, 0)),
                                     flags=f.get("flags", 0))

        out = [hello(seq)]
        for i, frame in enumerate(_data_frames(seq, f["bits"], batch, list(f["reports"]),
                                               f.get("flags", 0), _session(f))):
            out.append(frame)
            if every and (i + 1) % every == 0:
                out.append(hello((seq + i + 1) & wire.MAX_SEQ32))
        st = f.get("status")
        if st:  # frames_dropped is the Sender's own count: 0 here
            out.append(wire.encode_status(code=st["code"], ticks=st.get("ticks", 0),
                                          replaced=st.get("replaced", 0),
                                          clamped=st.get("clamped", 0),
                                          message=st.get("message", ""), flags=f.get("flags", 0)))
        return b"".join(out)
    raise wire.FrameError("encode", "unknown op %r" % (op,))


_PROFILES = []


def _known_profiles():
    if not _PROFILES:
        from ..mechanism.grid import profile as P

        with open(PROFILES_JSON) as fh:
            doc = json.load(fh)
        _PROFILES.extend(P.from_dict(c["profile"]) for c in doc["cases"]
                         if c["result"] == "valid")
    return _PROFILES


def decode_stream(stream: bytes, *, vectors: bool = False, profiles=None) -> dict:
    """What a Decoder knowing `profiles` (default: every valid one of profiles.json) makes of
    a stream, in the shape of a decode case's "expect": the stream is fed whole, then every
    Unresolved it returned is passed to one `resolve` call (as a collector that kept them
    does at the next HELLO); `lost` is read after that."""
    dec = wire.Decoder(_known_profiles() if profiles is None else profiles, vectors=vectors)
    events = dec.feed(stream)
    pool = [e for e in events if isinstance(e, wire.Unresolved)]
    answers = dec.resolve(pool)
    return {"rejected": dict(sorted(dec.rejected.items())),
            "unresolved": dict(sorted(dec.unresolved.items())),
            "batches": [e.seq for e in events if isinstance(e, wire.Batch)],
            "resolved": [a.seq if isinstance(a, wire.Batch) else a for a in answers],
            "lost": dec.lost, "reboots": dec.reboots, "hellos": dec.hellos,
            "statuses": dec.statuses}


def handle(req: dict):
    """The host implementation (target "cpython" of zeal.board.conformance): (ok, hex | reason) for
    encode cases, (True, expect-dict) for decode cases. Takes the request alone or inside
    the harness's envelope ({"suite", "id", "case": request})."""
    if "op" not in req and isinstance(req.get("case"), dict):
        req = req["case"]
    if req.get("op") == "decode":
        try:
            stream = bytes.fromhex(req["stream"])
        except (KeyError, TypeError, ValueError):
            return False, "refused: decode needs a hex stream"
        try:
            return True, decode_stream(stream, vectors=bool(req.get("vectors")))
        except OSError as exc:
            return False, "no profiles: %s" % exc
    try:
        return True, encode_case(req.get("op"), req.get("fields") or {}).hex()
    except wire.FrameError as exc:
        return False, "refused: %s" % exc
    except (KeyError, TypeError) as exc:
        return False, "refused: bad fields (%s)" % exc


def _unpack(response) -> Tuple[bool, object]:
    if isinstance(response, dict):
        return bool(response.get("ok")), response.get("result", response.get("reason"))
    if isinstance(response, (list, tuple)) and len(response) == 2:
        return bool(response[0]), response[1]
    raise ValueError("a response is (ok, result) or {'ok':..., 'result':...}, got %r"
                     % (response,))


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check(case: dict, response) -> Tuple[bool, str]:
    """(passed, detail) for one response to one vector."""
    try:
        ok, result = _unpack(response)
    except ValueError as exc:
        return False, str(exc)
    if case["op"] == "decode":  # host-only: a Decoder's account of the stream
        if not ok:
            return False, "decode case not answered: %s" % (result,)
        if result == case["expect"]:
            return True, "decoder account matches"
        return False, "decoder account %r, want %r" % (result, case["expect"])
    if case["result"] == "invalid":
        if ok:
            return False, "device encoded fields it must refuse (%s): %s" % (
                case.get("reason"), str(result)[:80])
        return True, "refused as expected: %s" % (result,)
    if not ok:
        return False, "device refused a valid case: %s" % (result,)
    if not isinstance(result, str):
        return False, "result is not a hex string: %r" % (result,)
    try:
        got = bytes.fromhex(result)
    except ValueError:
        return False, "result is not hex: %r" % result[:80]
    want = bytes.fromhex(case["frame"])
    if got == want:
        return True, "%d bytes identical" % len(want)
    at = _first_difference(got, want)
    return False, ("frame differs at byte %d of %d (got %d bytes): device %s, vector %s"
                   % (at, len(want), len(got), got[at:at + 8].hex(), want[at:at + 8].hex()))


def check_all(cases: Iterable[dict], responses) -> List[Tuple[str, bool, str]]:
    """[(id, passed, detail)] for responses given in the order of the cases."""
    return [(c["id"],) + check(c, r) for c, r in zip(cases, responses, strict=True)]
