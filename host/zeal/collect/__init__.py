"""Collection: serial lines in, committed frames out; and virtual boards to collect from.

Modules, in import order (each imports only those above it, and the layers below this
package):
- `store`: the SQLite store (WAL, schema 2): `Store`, `open_existing`, `StoreError`,
  `FrameRecord`, `EventRecord`, `UnresolvedRecord`;
- `collector`: `Collector`, one reader thread per port and one committing writer, with
  progress and retries; `zeal collect` (`register`);
- `shuffler`: shuffle mode's middle box (seed 004): `Shuffler` (full batches only, CSPRNG
  order, no identities kept), `LineReader`; `zeal shuffle` (`register`);
- `virtual`: `VirtualDevice`, the real firmware under the MicroPython unix port behind a raw
  pty (`Pty`); it finds MicroPython with zeal.board.firmware.locate_micropython.

Nothing is re-exported.
"""
