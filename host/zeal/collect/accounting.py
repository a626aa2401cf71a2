"""Lost DATA frames per device session: a function of what the store holds (issue 18).

A session (one boot: device id, profile fingerprint, boot counter, nonce) numbers its DATA
frames 0, 1, 2, ... (wire_format.md, DATA). Every number below the highest one known sent
(a frame received, or a HELLO's next_seq) is a frame the board made, so each is exactly one
of: stored (a row in `frames`), refused (received intact but not stored: a reject of a
reason that used the number, counted by its event), or lost. The lost ones are split by why:

- `before_attach`: below the first number any collector heard of the session (it
  attached, or was started, after the board had sent them);
- `unattended`: between two spans that collectors listened to (no collector was reading the
  line or the topic: a collector stopped and started again while the board streamed);
- `gap`: inside a span a collector listened to: sent while it listened, never came in
  intact (a line error, a frame the board dropped, a message the broker lost).

A collector passes, with each write, the span of each session it has news of (`Span`: from
the number it began answering for, Decoder `lo`, to one past the highest known sent, `top`);
the store applies them in the same transaction as the frames (`apply`), so the counts always
match the frames committed with them, whatever happens between commits. Per session the
store keeps one state row, the event with key "lost:<session>" (kind `gap`): its count is
the `gap` figure and its detail the state it is computed from:

    missing: sent N; heard A-B,C-D; stored S; refused R

(N = one past the highest number known sent; the spans heard as inclusive ranges, merged;
S = frames stored; R = frames refused), and, when not zero, "lost:<session>:before_attach"
and "lost:<session>:unattended" (kind `gap` too, the reason first in their detail). Each is
SET to its value, never added to: frames that arrive late (a group member's messages held
by the broker, a frame resolved at the next HELLO) lower the count again, no count is ever
negative, two collectors or a re-ingest of the same stream compute the same rows, and the
sum of `gap` events (what `zeal analyze` reports as gaps) is the frames lost, by any
reason. S is kept up to date with the frames each write newly stores (counted once by
COUNT(*) when the row is made), so a long session costs nothing per commit.

On PostgreSQL the state row is locked (SELECT ... FOR UPDATE, in session order) before it is
read, so collectors that store frames of one session at once follow each other: the last to
commit sees every frame the others committed. SQLite writers are serialised anyway.
"""
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

# Reject reasons of a DATA frame that came in intact under its session and used its number
# (wire_format.md, host rule 2): such a frame is refused, not lost. (duplicate and sequence
# use no new number; crc/cobs/short/... damaged frames are not known to be DATA of a session.)
USES_NUMBER = ("reserved_flags", "malformed", "length", "padding", "grid", "unknown_profile",
               "vector")
REASONS = ("gap", "before_attach", "unattended")
MAX_SPANS = 32  # heard spans kept per session (beyond: the shortest hole is merged)


@dataclass(frozen=True)
class Span:
    """What one line knows of one session: numbers lo .. top - 1 are those it answers for
    (it listened from lo on), top is one past the highest number known sent."""

    device_id: bytes      # 8 bytes
    fingerprint: bytes    # 8 bytes: the HELLO's (first 8 bytes of the profile's SHA-256)
    boot: int
    nonce: bytes          # 8 bytes
    lo: int
    top: int
    port: Optional[str] = None

    @classmethod
    def of(cls, session: bytes, lo: int, top: int, port: Optional[str] = None) -> "Span":
        """From the 28 session bytes (HELLO bytes 5..32)."""
        s = bytes(session)
        return cls(s[:8], s[8:16], int.from_bytes(s[16:20], "little"), s[20:28], int(lo),
                   int(top), port)

    @property
    def session(self) -> str:
        return (bytes(self.device_id) + bytes(self.fingerprint)
                + int(self.boot).to_bytes(4, "little") + bytes(self.nonce)).hex()

    def merged(self, other: "Span") -> "Span":
        """The two spans of one session taken together (a line's span only grows)."""
        return Span(self.device_id, self.fingerprint, self.boot, self.nonce,
                    min(self.lo, other.lo), max(self.top, other.top), other.port or self.port)


def session_of_frame(f) -> str:
    """The session hex of a FrameRecord (its fingerprint is the full hex digest)."""
    return (bytes(f.device_id) + bytes.fromhex(f.fingerprint)[:8]
            + int(f.boot).to_bytes(4, "little") + bytes(f.nonce)).hex()


# ---- the state ----------------------------------------------------------------------------------
@dataclass
class State:
    sent: int = 0                   # one past the highest number known sent
    first: Optional[int] = None     # the lowest number any collector answered for
    heard: List[List[int]] = None   # merged half-open spans [a, b), a < b, sorted
    stored: int = 0
    refused: int = 0

    def add(self, lo: int, top: int) -> None:
        lo = min(lo, top)
        self.sent = max(self.sent, top)
        self.first = lo if self.first is None else min(self.first, lo)
        if top > lo:
            self.heard = _union((self.heard or []) + [[lo, top]])

    def lost(self) -> Tuple[int, int, int]:
        """(gap, before_attach, unattended)."""
        first = min(self.first if self.first is not None else self.sent, self.sent)
        heard = sum(b - a for a, b in self.heard or [])
        gap = max(0, heard - self.stored - self.refused)
        return gap, first, max(0, self.sent - first - heard)

    def detail(self) -> str:
        spans = ",".join("%d-%d" % (a, b - 1) for a, b in self.heard or []) or "none"
        first = "" if self.heard and self.first == self.heard[0][0] else \
            " from %d" % (self.first if self.first is not None else self.sent)
        return ("missing: sent %d; heard%s %s; stored %d; refused %d"
                % (self.sent, first, spans, self.stored, self.refused))


_DETAIL = re.compile(r"^missing: sent (\d+); heard(?: from (\d+))? (none|\d+-\d+(?:,\d+-\d+)*); "
                     r"stored (\d+); refused (\d+)$")


def parse(detail) -> Optional[State]:
    """The State a "lost:<session>" row's detail holds, or None if it is not one."""
    m = _DETAIL.match(detail) if isinstance(detail, str) else None
    if m is None:
        return None
    heard = [] if m.group(3) == "none" else [
        [int(a), int(b) + 1] for a, b in (p.split("-") for p in m.group(3).split(","))]
    if any(a >= b for a, b in heard) or heard != _union(heard):
        return None
    first = int(m.group(2)) if m.group(2) is not None else (heard[0][0] if heard else None)
    st = State(sent=int(m.group(1)), first=first, heard=heard, stored=int(m.group(4)),
               refused=int(m.group(5)))
    if first is None and st.sent:
        st.first = st.sent
    return st


def _union(spans: list) -> list:
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    while len(out) > MAX_SPANS:  # fold the shortest hole: its frames count as a gap
        i = min(range(len(out) - 1), key=lambda k: out[k + 1][0] - out[k][1])
        out[i:i + 2] = [[out[i][0], out[i + 1][1]]]
    return out


# ---- in the store's transaction -----------------------------------------------------------------
class Transaction:
    """What the accounting may do inside the store's write transaction, as the store hands it
    over (it touches nothing else of the store): run(sql, args) a statement (`?`
    placeholders, both backends) and return its cursor; device(device_id, now) its row id;
    count(kind, detail, n, now) a counted event; max_events the events table's cap;
    lock_suffix the clause that locks a selected state row (" FOR UPDATE OF e" on
    PostgreSQL, "" on SQLite, whose write transaction holds the whole file)."""

    def __init__(self, *, run, device, count, max_events: int, lock_suffix: str = ""):
        self.run, self.device, self.count = run, device, count
        self.max_events, self.lock_suffix = max_events, lock_suffix


def apply(store: Transaction, spans: Iterable[Span], fresh: Iterable,
          now: float) -> Dict[str, tuple]:
    """Bring the loss rows of every session in `spans`, or with frames in `fresh` (the
    FrameRecords this transaction newly stored) and a state row already, up to date. Runs
    inside the store's write transaction (`Transaction`). Returns {session hex: (gap,
    before_attach, unattended)} of the sessions brought up to date."""
    by_session: Dict[str, Span] = {}
    for s in spans:
        key = s.session
        by_session[key] = s if key not in by_session else by_session[key].merged(s)
    new_frames: Dict[str, int] = {}
    first_frame = {}
    for f in fresh:
        key = session_of_frame(f)
        new_frames[key] = new_frames.get(key, 0) + 1
        first_frame.setdefault(key, f)
    out = {}
    run = store.run
    # the state row (locked on PostgreSQL) and the frames refused in the session, in one go
    select = ("SELECT e.count, e.detail, (SELECT COALESCE(SUM(r.count), 0) FROM events r "
              "WHERE r.key >= ? AND r.key < ? AND r.kind = 'reject' AND r.detail IN (%s)) "
              "FROM events e WHERE e.key = ?%s"
              % (",".join("?" * len(USES_NUMBER)), store.lock_suffix))
    for key in sorted(set(by_session) | set(new_frames)):
        span = by_session.get(key)
        only_frames = span is None
        if only_frames:
            f = first_frame[key]
            span = Span(bytes(f.device_id), bytes.fromhex(f.fingerprint)[:8], int(f.boot),
                        bytes(f.nonce), 0, 0)
        row_key = "lost:" + key
        args = ("reject:%s:" % key, "reject:%s;" % key) + USES_NUMBER + (row_key,)
        row = run(select, args).fetchone()
        if row is None and only_frames:
            continue  # nobody asked for this session's accounting yet
        dev = store.device(span.device_id, now)
        if dev is None:
            continue  # beyond the devices cap: its frames are not stored either
        old = None
        if row is None:
            top_id = run("SELECT MAX(id) FROM events").fetchone()[0] or 0
            if top_id >= store.max_events:
                store.count("events_dropped", "events beyond the cap of %d rows"
                             % store.max_events, 1, now)
                continue
            made = run("INSERT INTO events (device, port, time, kind, detail, count, key) "
                       "VALUES (?, ?, ?, 'gap', '', 0, ?) ON CONFLICT (key) DO NOTHING",
                       (dev, span.port, now, row_key)).rowcount == 1
            if not made:  # another writer made it meanwhile (PostgreSQL): its state counts
                row = run(select, args).fetchone()
        state = None if row is None else parse(row[1])
        if state is None:  # a new row (or one that does not parse): from the frames table
            state = State()
            n, lo, hi = run("SELECT COUNT(*), MIN(seq), MAX(seq) FROM frames WHERE device = ? "
                            "AND boot = ? AND nonce = ?",
                            (dev, int(span.boot), bytes(span.nonce))).fetchone()
            state.stored = int(n or 0)
            if n:
                state.add(int(lo), int(hi) + 1)
        else:
            old = (int(row[0]), row[1], state.lost())
            state.stored += new_frames.get(key, 0)
        if not only_frames:
            state.add(span.lo, span.top)
        state.refused = int(row[2]) if row is not None else int(run(select, args).fetchone()[2])
        lost = state.lost()
        detail = state.detail()
        if old is None or old[:2] != (lost[0], detail):
            run("UPDATE events SET count = ?, detail = ?, time = ?, device = ?, "
                "port = COALESCE(?, port) WHERE key = ?",
                (lost[0], detail, now, dev, span.port, row_key))
        before, unattended = lost[1], lost[2]
        if old is None or old[2][1] != before:
            _set(store, dev, span.port, now, row_key + ":before_attach", before,
                 "before_attach: frames 0-%d were sent before any collector listened"
                 % (before - 1))
        if old is None or old[2][2] != unattended:
            _set(store, dev, span.port, now, row_key + ":unattended", unattended,
                 "unattended: %d frames were sent while no collector listened" % unattended)
        out[key] = lost
    return out


def _set(store, dev, port, now, key: str, value: int, detail: str) -> None:
    """Set a reason row to `value`: made only when not zero (and within the events cap:
    else counted in events_dropped), kept (at 0) once made."""
    run = store.run
    if value <= 0:
        run("UPDATE events SET count = 0, time = ? WHERE key = ? AND count <> 0", (now, key))
        return
    if run("UPDATE events SET count = ?, detail = ?, time = ? WHERE key = ?",
           (value, detail, now, key)).rowcount:
        return
    if (run("SELECT MAX(id) FROM events").fetchone()[0] or 0) >= store.max_events:
        store.count("events_dropped", "events beyond the cap of %d rows" % store.max_events,
                     1, now)
        return
    run("INSERT INTO events (device, port, time, kind, detail, count, key) "
        "VALUES (?, ?, ?, 'gap', ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
        "count = excluded.count, detail = excluded.detail, time = excluded.time",
        (dev, port, now, detail, value, key))
