"""Collection: serial lines and MQTT in, committed frames out; and virtual boards to collect from.

Modules, in import order (each imports only those above it, and the layers below this
package):
- `accounting`: the frames each device session lost, a function of what the store holds
  (`Span`: what a line knows of a session; `apply`, run by the store inside each write: the
  loss rows set, by reason: gap, before_attach, unattended);
- `store` (a package): the store behind one interface, `open_store(path or postgresql://
  URL)` -> `Store`, whose SQL runs on an SQLite engine (WAL, schema 2, the default) or a
  PostgreSQL one (psycopg 3, several collectors at once); `open_existing`, `StoreError`,
  `FrameRecord`, `EventRecord`, `UnresolvedRecord`;
- `progress`: `Progress`, the progress line, the summary and exit status; `loop`: the end
  conditions and signals every source's run loop shares;
- `stream`: one stream's session (deframe, DATA kept until its HELLO, keyed events, spans)
  and what the writer holds for it;
- `writer`: `Writer`, the one thread at the store: takes the streams' records, commits
  them, retries while the store is away;
- `collector`: the serial source, `Collector` (one reader thread per port, back-pressure,
  the run loop); `zeal collect` (`cmd_collect`);
- `topic`, `mqtt`: the MQTT source, `zeal collect --mqtt`: a broker's `zeal/<device>/frames`
  topics read as streams (`TopicStream`; paho-mqtt v2, MQTT v5), shared subscriptions
  (`--group`), PUBACK after commit, HELLOs republished retained for the group, losses
  accounted from the store, a topic standing for one device id (`--topic-map`);
- `shuffler`: shuffle mode's middle box (seed 004): `Shuffler` (full batches only, CSPRNG
  order, no identities kept), `LineReader`; `zeal shuffle` (`cmd_shuffle`);
- `virtual`: `VirtualDevice`, the real firmware under the MicroPython unix port behind a raw
  pty (`Pty`); it finds MicroPython with zeal.board.firmware.locate_micropython.

Nothing is re-exported.
"""
