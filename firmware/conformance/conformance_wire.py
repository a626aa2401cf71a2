# Wire conformance on the device: handle(request) -> (ok, frame_hex | reason).
#
# A request is a case of shared_spec/vectors/wire.json with target "both" (the runner may
# pass the whole case; only "op" and "fields" are read). Devices only encode: decode cases
# (target "host") are answered (False, "host only"). Bytes come from zealfw.wire.Sender
# writing into an io.BytesIO, exactly as it writes to a UART. Bad fields make the Sender
# raise ValueError; that is the expected "refused" answer of the encode-invalid cases.
# DATA's CRC is seeded by the session (device id, fingerprint, boot, nonce: protocol 2): every
# op builds its Sender from those fields, so "data" cases get the session the vector names.
# Fields read (all optional but the ones an op needs): flags (VECTOR 0x10, DEBUG 0x20),
# firmware, device_id, fingerprint, boot, nonce (16 hex digits), bits, batch, hello_every,
# seq (u32; the wire carries its low 16 bits, HELLO next_seq all 32), reports, and for STATUS
# code, ticks, frames_dropped, replaced, clamped, message.
import binascii
import io

from zealfw import reference, wire


def _hex(data):
    return binascii.hexlify(data).decode()


def _flags(f):
    flags = f.get("flags", 0)
    if not isinstance(flags, int) or flags & ~(reference.FLAG_VECTOR | reference.FLAG_DEBUG):
        raise ValueError("flags: only VECTOR (0x10) and DEBUG (0x20) may be set")
    return flags


def _sender(out, f, bits, batch, hello_every=0):
    dev = f.get("device_id")
    nonce = f.get("nonce")
    flags = _flags(f)
    return wire.Sender(out, bits, batch=batch,
                         device_id=binascii.unhexlify(dev) if dev else None,
                         fingerprint=f.get("fingerprint"), boot=f.get("boot", 0),
                         nonce=binascii.unhexlify(nonce) if nonce else None,
                         firmware=tuple(f.get("firmware", reference.FIRMWARE)),
                         hello_every=hello_every, vector=bool(flags & reference.FLAG_VECTOR),
                         debug=bool(flags & reference.FLAG_DEBUG))


def _seq(f):
    seq = f.get("seq", 0)
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or seq > 0xFFFFFFFF:
        raise ValueError("seq must be in [0, 2^32)")
    return seq


def _reports(s, values):
    for v in values:
        s.add(v)   # a full batch is sent by the next add or the final flush
    s.flush()


def _status(s, st):
    dropped = st.get("frames_dropped", 0)
    if not isinstance(dropped, int) or isinstance(dropped, bool) or dropped < 0:
        raise ValueError("counters are non-negative integers")
    s.frames_dropped = dropped
    s.status(st["code"], st.get("message", ""), ticks=st.get("ticks", 0),
             replaced=st.get("replaced", 0), clamped=st.get("clamped", 0))


def handle(request):
    op = request.get("op")
    f = request.get("fields") or {}
    out = io.BytesIO()
    try:
        if op == "hello":
            s = _sender(out, f, f["bits"], f["batch"])
            s.seq = _seq({"seq": f.get("next_seq", 0)})
            s.hello()
        elif op == "data":
            s = _sender(out, f, f["bits"], f["batch"])
            s.seq = _seq(f)
            _reports(s, f["reports"])
        elif op == "status":
            _status(_sender(out, f, 0, 1), f)
        elif op == "session":
            s = _sender(out, f, f["bits"], f["batch"], f.get("hello_every", 16))
            s.seq = _seq(f)
            s.hello()
            _reports(s, f["reports"])
            st = f.get("status")
            if st:
                _status(s, st)
        elif op == "decode":
            return False, "host only: devices do not parse frames"
        else:
            return False, "unknown op %r" % (op,)
    except (ValueError, KeyError, TypeError) as exc:
        return False, "refused: %s" % (exc,)
    return True, _hex(out.getvalue())
