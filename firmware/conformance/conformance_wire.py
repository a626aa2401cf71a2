# Wire conformance on the device: handle(request) -> (ok, frame_hex | reason).
#
# A request is a case of shared_spec/vectors/wire.json with target "both" (the runner may
# pass the whole case; only "op" and "fields" are read). Devices only encode: decode cases
# (target "host") are answered (False, "host only"). Bytes come from zealfw.frames.Sender
# writing into an io.BytesIO, exactly as it writes to a UART. Bad fields make the Sender
# raise ValueError; that is the expected "refused" answer of the encode-invalid cases.
# DATA's CRC is seeded by the session (device id, fingerprint, boot): every op builds its
# Sender from those fields, so "data" cases get the session the vector names.
import binascii
import io

from zealfw import frames


def _hex(data):
    return binascii.hexlify(data).decode()


def _flags(f):
    flags = f.get("flags", 0)
    if not isinstance(flags, int) or flags & ~frames.FLAG_VECTOR:
        raise ValueError("flags: only VECTOR (0x10) may be set")
    return bool(flags & frames.FLAG_VECTOR)


def _sender(out, f, bits, batch, hello_every=0):
    dev = f.get("device_id")
    return frames.Sender(out, bits, batch=batch,
                         device_id=binascii.unhexlify(dev) if dev else None,
                         fingerprint=f.get("fingerprint"), boot=f.get("boot", 0),
                         firmware=tuple(f.get("firmware", frames.FIRMWARE)),
                         hello_every=hello_every, vector=_flags(f))


def _seq(f):
    seq = f.get("seq", 0)
    if not isinstance(seq, int) or seq < 0 or seq > 0xFFFF:
        raise ValueError("seq must be in [0, 65535]")
    return seq


def _reports(s, values):
    for v in values:
        s.add(v)
    s.flush()


def handle(request):
    op = request.get("op")
    f = request.get("fields") or {}
    out = io.BytesIO()
    try:
        if op == "hello":
            _sender(out, f, f["bits"], f["batch"]).hello()
        elif op == "data":
            s = _sender(out, f, f["bits"], f["batch"])
            s.seq = _seq(f)
            _reports(s, f["reports"])
        elif op == "status":
            s = _sender(out, f, 0, 1)
            sent = f.get("sent", 0)
            if not isinstance(sent, int) or sent < 0:
                raise ValueError("sent must be a non-negative integer")
            s.sent = sent
            dropped, clamped = f.get("dropped", 0), f.get("clamped", 0)
            if not isinstance(dropped, int) or not isinstance(clamped, int) \
                    or dropped < 0 or clamped < 0:
                raise ValueError("counters are non-negative integers")
            s.status(f["code"], dropped, clamped, f.get("message", ""))
        elif op == "session":
            s = _sender(out, f, f["bits"], f["batch"], f.get("hello_every", 16))
            s.seq = _seq(f)
            s.hello()
            _reports(s, f["reports"])
            st = f.get("status")
            if st:
                s.status(st["code"], st.get("dropped", 0), st.get("clamped", 0),
                         st.get("message", ""))
        elif op == "decode":
            return False, "host only: devices do not parse frames"
        else:
            return False, "unknown op %r" % (op,)
    except (ValueError, KeyError, TypeError) as exc:
        return False, "refused: %s" % (exc,)
    return True, _hex(out.getvalue())
