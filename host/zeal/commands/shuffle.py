"""`zeal shuffle`: strip identities, batch and permute reports."""


def add(sub):
    p = sub.add_parser(
        "shuffle", help="shuffle mode: strip identities, batch and permute reports",
        description="Read Zeal frames from serial ports, keep only each report (never the "
                    "device id, boot, nonce, sequence number or port), hold them until a "
                    "batch of at least B is buffered, and write it in a CSPRNG-drawn order. "
                    "Held reports below a batch at the end are dropped, never written.")
    p.add_argument("--in", dest="inputs", nargs="+", required=True, metavar="PORT",
                   help="serial ports or pyserial URLs to read (a pty path, socket://...)")
    p.add_argument("--out", required=True, metavar="FILE|PORT",
                   help="a file (appended: one hex message a line, a '# batch' line before "
                        "each batch) or a port / URL (frames from the device 'shuffler')")
    p.add_argument("--batch", type=int, required=True, metavar="B",
                   help="release only batches of at least B reports (a shuffle profile's "
                        "configured guarantee needs B >= n t: its n readings of t messages; "
                        "zeal profile --shuffle prints n t as batch_messages)")
    p.add_argument("--duration", type=float, metavar="S",
                   help="stop after S seconds (default: until every input has closed)")
    p.add_argument("--messages", type=int, metavar="N",
                   help="stop once at least N reports are written (default: no limit)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..collect.shuffler import cmd_shuffle

    return cmd_shuffle(args)
