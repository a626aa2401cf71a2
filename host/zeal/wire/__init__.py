"""The wire: frames from a device, and the serial lines that carry them (protocol 2,
shared_spec/wire_format.md: COBS(body || CRC-32) || 0x00).

Modules, in the order the bytes meet them on the host:
- `transport`: ports by pyserial URL (`open_port`, `read_chunk`, PortNotFound, PortBusy; the
  one missing-port message `missing_port`, `never_a_port`);
- `deframer`: `Deframer`, fed arbitrary chunks, returns the frames they complete;
- `decoder`: `Decoder`, one serial line: sessions, u32 sequence numbers, gaps; `Batch`,
  `Unresolved`;
- `codec`: constants, `Hello`/`Data`/`Status`/`SealedData`, `FrameError`, COBS/CRC,
  `decode_run`, the reference encoders `encode_hello`/`encode_data`/`encode_status`,
  `pack_reports`/`unpack_reports`, size bounds (`max_encoded_length`), `device_name` (an id as
  people read it);
- `conformance`: the checker of the conformance suite "wire" (shared_spec/vectors/wire.json).

Everything public in codec, deframer and decoder is re-exported here, so `from zeal import
wire; wire.Decoder(...)`, `wire.encode_hello(...)` and `wire.FrameError` work.
"""
from .codec import (BAD_PROFILE, CONFIG, CRASH, CRC_LEN, DATA_HEADER, DECODER_REASONS,
                    DEFRAMER_REASONS, ERROR_CODES, FLAG_DEBUG, FLAG_VECTOR, HELD, HELLO_LEN,
                    HELLO_REQUEST, MAX_BITS, MAX_BODY, MAX_COUNT, MAX_ENCODED, MAX_MESSAGE,
                    MAX_SEQ, MAX_SEQ32, MIN_RUN_BODY, NO_PROFILE, NONCE_LEN, OK, PROTOCOL, REASONS,
                    RESERVED_MASK, SENSOR, SESSION_LEN, STATUS_CODES, STATUS_HEADER, STOP_REQUEST,
                    STOPPED, TYPE_DATA, TYPE_HELLO, TYPE_MASK, TYPE_NAMES, TYPE_STATUS,
                    UNRESOLVED_REASONS, cobs_decode, cobs_encode, crc32, Data, data_body_length,
                    decode_run, device_name, encode_data, encode_hello, encode_status, Frame, frame_body,
                    frame_length, Framed, FrameError, Hello, max_encoded_length, pack_reports,
                    parse_body, SealedData, session_bytes, Status, truncate_utf8, unframe,
                    unpack_reports)  # noqa: F401
from .decoder import Batch, Decoder, Unresolved, fingerprint_key  # noqa: F401
from .deframer import Deframer  # noqa: F401
