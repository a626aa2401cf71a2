"""The archive's format (compress.archive describes it): its names and versions, the caps on
what one holds, and `ArchiveError`. Every other archive module reads the caps through this
module's attributes (`F.MAX_REPORTS`), so that a test lowering one here lowers it for `read`
and `write` alike.

Limits. An archive may come from anyone, so `read` bounds every size and count before it
allocates for it, and refuses (ArchiveError, one line) anything past them; `write` refuses to
write past them (the same line from `zeal compress`), so every archive zeal writes is one it
reads. The stated maximum archive, in what the format counts (the reader holds all of it in
memory -- about 20 B a report and 300 B a frame: `zeal analyze --archive` on one archive of
10^7 reports peaks at 215 MB with 1 device, 246 MB with 1,000, against 51 and 57 MB for
`--db`; 651 MB, 60 B a report, before the reader made its offsets in place -- so these are
sized to a workstation; a larger store is written as volumes, below):
- MAX_REPORTS = 2^25 (33,554,432) reports: 256 MiB of float64 patterns; MAX_SYMBOLS = 2^25
  stream symbols (a multi report is 2k of them): 256 MiB of uint64 symbols;
- MAX_FRAMES = 2^20 (1,048,576) frames: MAX_REPORTS at a mean batch of 32 (the default is 64);
- MAX_DEVICES = 100,000 devices: the store's own cap (collect.store.MAX_DEVICES);
- MAX_STREAMS = 2^17 streams (one per device, profile and test mode): every device of the
  store's cap under one profile, with room for re-flashed or test-mode ones; MAX_PROFILES =
  MAX_STREAMS (every profile has a stream);
- MAX_STATUSES = 2^16 STATUS events (a heartbeat every 16 frames at MAX_FRAMES; the firmware
  sends one every 64 DATA frames by default), each detail at most MAX_STATUS_DETAIL = 300
  characters: the longest code name, four u32 counters, "debug" and a message of at most
  wire.MAX_MESSAGE = 200 characters, as the collector writes it; losses: 3 kinds a device.
Measured at MAX_REPORTS, MAX_FRAMES and MAX_STATUSES (1,000 devices, interleaved at random):
`zeal analyze --archive` peaks at 2.5 GB and takes 36 s; a hostile archive cannot cost more
(measured before the reader made its offsets in place, which only lowered it).
What an archive of that size holds, and so the caps on what is decompressed:
- a stream of n reports (n from the manifest, and first checked to equal the reports the frame
  table gives that device, profile and mode; all n sum to at most MAX_REPORTS) and s symbols
  (s = n, or the manifest's "symbols", checked to be n x the shape's symbols a report) is an
  entry of at most stream_bytes_cap(s, M) = 8 s + 8 s / 64 + M (2^16 bitlength(s) / 8 + 64)
  + 1 KiB stored bytes, M the value models a rans blob of its shape holds (a multi profile's d,
  at most MAX_MODELS = 16; else 1): the raw doubles (packed, greedygd and rans store no more
  than the doubles' bits); the general-purpose compressors' worst-case growth on incompressible
  input, under 1 % (bz2: 1 % + 600 B); rans's model, at most 2^16 counts of at most
  bitlength(n) bits; headers. It decodes to n reports, 8 n bytes, at most: its codec gets n as
  its limit (see zeal.analysis.compress: zstd, lz4, bz2, lzma through streaming decompressors
  with a maximum output of 8 n bytes, zstd's declared content size and window and lzma's
  dictionary checked first; pcodec into an array of n + 1; packed, rans, greedygd by their
  header's n);
- a profile entry holds at most MAX_PROFILE_BYTES = 4,317 bytes, a table profile's longest
  file (a window grid's: pfile.MAX_FILE = 502), and all of them together at most
  MAX_PROFILE_TOTAL = MAX_PROFILES x 502 bytes (what they could take before tables);
- the manifest holds at most MAX_MANIFEST_BYTES = 202,601,988 bytes (`_manifest_budget`): the
  longest manifest `write` makes at the caps above, every item at its longest (a greedy run
  covers two frames or more, so a frame costs at most half of [max, -max, 2] per column, with
  boot and seq u32; STATUS messages with every character escaped, 6 bytes each). Its declared
  size is checked before it is read, it is read in chunks (never more than the cap + 1 bytes),
  its nesting is checked on the text before JSON parses it (at most MAX_DEPTH = 8 levels:
  version 1 nests 4 -- frames, a column, its runs, a run -- and a later version's manifest is
  still parsed far enough to be refused by its version line), it holds integers only, and
  then every field's type, range and count is checked: ids in hex, frame runs' lengths 1 or
  more summing to at most MAX_FRAMES and their values in their column's range (checked at a
  run's two ends, before any run is expanded);
- the zip directory lists at most MAX_ENTRIES = 1 + MAX_PROFILES + MAX_STREAMS entries in at
  most DIRECTORY_ENTRY_BYTES (128) each, checked from its end record before zipfile reads it;
  entries are stored or deflated and not encrypted, as `write` makes them.

Volumes (compress.archive_volumes; issue "Scale: a billion reports in constant memory"). A
store past one volume is written as a set of archives, each complete and within the caps
above, so that `zeal analyze --archive` holds one volume at a time, whatever the store:
- VOLUME_REPORTS = 2^21 (2,097,152) reports a volume: what the reader holds of one volume
  at the 60 B a report it took before its offsets were made in place (126 MB); now about
  20 B. Measured: `zeal analyze --archive` on a set of 10^8 reports (48 volumes) peaks at
  89 MB with 1 device and 91 MB with 1,000 (`--db`: 49 and 57 MB), flat in the store's size
  (10^7, 5 volumes: 89 and 91 MB);
- VOLUME_FRAMES = 2^16 (65,536) frames a volume: VOLUME_REPORTS at a mean batch of 32, as
  MAX_FRAMES is MAX_REPORTS's (about 300 B a frame held: 20 MB);
- MAX_VOLUMES = 2^16 volumes a set: 2^37 (1.4 x 10^11) reports at VOLUME_REPORTS, over a
  hundred times the issue's billion; a reader checks 1 <= volume <= volumes <= MAX_VOLUMES
  and, over the set, at most MAX_DEVICES devices and MAX_PROFILES profiles (what analyze
  keeps from one volume to the next);
- "set": SET_HEX (32) lower-case hex digits, 16 random bytes.
A volume's manifest is far below MAX_MANIFEST_BYTES (its frames are at most VOLUME_FRAMES), so
its three keys need no room in the budget.
"""
import json
import math

from ... import wire
from ...collect.store import MAX_DEVICES as STORE_MAX_DEVICES
from ...errors import ZealError
from ...mechanism.core.pfile import MAX_FILE as PROFILE_MAX_FILE
from ...mechanism.table.profile import MAX_TABLE_FILE

FORMAT = "zeal-archive"
VERSION = 2            # the newest this zeal writes and reads
VERSIONS = (1, 2)      # every version it reads
MANIFEST = "manifest.json"
LOSS_KINDS = ("reject", "gap", "reboot")     # the event kinds analyze counts
ABSENT = ["arrival", "nonce", "event times and details (other than STATUS details)"]
COLUMNS = ("device", "profile", "vector", "count", "debug", "boot", "seq")


class ArchiveError(ZealError):
    """An archive that cannot be read: damaged, of another format or version, past a limit,
    or needing a codec whose library is missing."""


# ---- limits (the module docstring says why each is what it is) ---------------------------------
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
U32_MAX = (1 << 32) - 1
MAX_REPORTS = 1 << 25
MAX_SYMBOLS = MAX_REPORTS    # a stream's symbols (compress.streams), all streams together
MAX_MODELS = 16              # a rans blob's value models: a multi profile's d (at most 16)
MAX_FRAMES = 1 << 20
MAX_DEVICES = STORE_MAX_DEVICES
MAX_STREAMS = 1 << 17
MAX_PROFILES = MAX_STREAMS
MAX_STATUSES = 1 << 16
MAX_LOSSES = (MAX_DEVICES + 1) * len(LOSS_KINDS)
MAX_DEPTH = 8
VOLUME_REPORTS = 1 << 21     # a volume's reports (compress.archive_volumes)
VOLUME_FRAMES = 1 << 16      # a volume's frames
MAX_VOLUMES = 1 << 16        # the volumes of a set
SET_HEX = 32                 # hex digits of a set's id (16 random bytes)
# a profile entry: at most a table profile's longest file (a grid's is PROFILE_MAX_FILE, 502
# bytes); all of them together at most what MAX_PROFILES grid files take, as before tables
MAX_PROFILE_BYTES = max(PROFILE_MAX_FILE, MAX_TABLE_FILE)
MAX_PROFILE_TOTAL = MAX_PROFILES * PROFILE_MAX_FILE
MAX_ENTRIES = 1 + MAX_PROFILES + MAX_STREAMS
#: a central directory record: 46 fixed bytes, the name (at most 30: profiles/<16 hex>.json),
#: a ZIP64 extra field (at most 32), rounded up
DIRECTORY_ENTRY_BYTES = 128
_COUNTERS = " ticks=%d frames_dropped=%d replaced=%d clamped=%d debug" % ((U32_MAX,) * 4)
MAX_STATUS_DETAIL = (max(len("CODE_255"), *map(len, wire.STATUS_CODES.values()))
                     + len(_COUNTERS) + 1 + wire.MAX_MESSAGE)


def stream_bytes_cap(n: int, models: int = 1) -> int:
    """The most bytes a stream entry of n symbols may store (module docstring), its rans blob
    holding at most `models` value models (a multi profile's: d)."""
    return 8 * n + 8 * n // 64 + models * ((1 << 16) * n.bit_length() // 8 + 64) + 1024


def _json_len(obj) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


def _manifest_budget() -> int:
    """The longest manifest `write` makes within the count caps, each item at its longest."""
    hex16, fp = "f" * 16, "f" * 64
    tops = {"device": MAX_DEVICES - 1, "profile": MAX_PROFILES - 1, "vector": 1,
            "count": wire.MAX_COUNT, "debug": 1, "boot": U32_MAX, "seq": U32_MAX}
    # a greedy run covers two frames or more except a column's last: half of [top, -top, 2]
    # (and its comma) a frame per column, and one longest last run per column
    per_frame = sum(_json_len([t, -t, 2]) + 1 for t in tops.values()) / 2
    last_runs = sum(_json_len([t, -t, MAX_FRAMES]) + 1 for t in tops.values())
    stream = _json_len({"entry": "streams/%d" % (MAX_STREAMS - 1), "device": MAX_DEVICES - 1,
                        "profile": fp, "vector": False, "codec": "greedygd", "n": MAX_REPORTS,
                        "symbols": MAX_SYMBOLS,
                        "bytes": stream_bytes_cap(MAX_REPORTS, MAX_MODELS)}) + 1
    detail = "CODE_255" + _COUNTERS + " " + "\x00" * wire.MAX_MESSAGE   # each \u0000: 6 bytes
    status = _json_len([hex16, detail]) + 1
    loss = _json_len([hex16, "reject", INT64_MIN]) + 1
    skeleton = _json_len({"format": FORMAT, "version": VERSION, "source": "database",
                          "profiles": [], "devices": [], "streams": [],
                          "frames": {c: [] for c in COLUMNS}, "losses": [], "statuses": [],
                          "link_bytes": INT64_MAX, "absent": ABSENT})
    return (skeleton + math.ceil(per_frame * MAX_FRAMES) + last_runs + MAX_STREAMS * stream
            + MAX_PROFILES * (_json_len(fp) + 1) + MAX_DEVICES * (_json_len(hex16) + 1)
            + MAX_LOSSES * loss + MAX_STATUSES * status)


MAX_MANIFEST_BYTES = _manifest_budget()
READ_CHUNK = 1 << 20   # what a chunked read (an entry, the manifest's nesting) takes at a time


def profile_entry(fp: str) -> str:
    return "profiles/%s.json" % fp[:16]
