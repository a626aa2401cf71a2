"""Collection: serial lines and MQTT in, committed frames out; and virtual boards to collect from.

Modules, in import order (each imports only those above it, and the layers below this
package):
- `accounting`: the frames each device session lost, a function of what the store holds
  (`Span`: what a line knows of a session; `apply`, run by the store inside each write: the
  loss rows set, by reason: gap, before_attach, unattended);
- `store`: the store behind one interface, `open_store(path or postgresql:// URL)`: SQLite
  (`Store`, WAL, schema 2, the default) or PostgreSQL (`PgStore`, psycopg 3, several
  collectors at once); `open_existing`, `StoreError`, `FrameRecord`, `EventRecord`,
  `UnresolvedRecord`;
- `collector`: `Collector`, one reader thread per port and one committing writer, with
  progress and retries; `zeal collect` (`cmd_collect`);
- `mqtt`: `zeal collect --mqtt`: a broker's `zeal/<device>/frames` topics read as serial
  streams (paho-mqtt v2, MQTT v5), shared subscriptions (`--group`), PUBACK after commit,
  HELLOs republished retained for the group, losses accounted from the store, a topic
  standing for one device id (`--topic-map`);
- `shuffler`: shuffle mode's middle box (seed 004): `Shuffler` (full batches only, CSPRNG
  order, no identities kept), `LineReader`; `zeal shuffle` (`cmd_shuffle`);
- `virtual`: `VirtualDevice`, the real firmware under the MicroPython unix port behind a raw
  pty (`Pty`); it finds MicroPython with zeal.board.firmware.locate_micropython.

Nothing is re-exported.
"""
