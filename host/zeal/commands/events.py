"""`zeal events`: the events the collector stored."""


def add(sub):
    p = sub.add_parser("events", help="list the events the collector stored (status, "
                              "gaps, rejects, reboots, connects, ...)",
                              description="Every stored event in time order: device STATUS "
                              "messages, sessions and reboots, gaps, rejected frames, "
                              "connects and disconnects, reader errors, duplicate ids. Opens "
                              "the database read-only.")
    p.add_argument("--db", required=True, metavar="FILE|URL", help="the collector's database "
                   "(an SQLite file or a postgresql:// URL)")
    p.add_argument("--json", action="store_true", help="print a JSON list (time, device, "
                   "port, kind, detail, count)")
    p.add_argument("--device", metavar="ID", help="only this device's events: its id in hex "
                   "or its name as the tables show it (e.g. demo-000)")
    p.add_argument("--kind", metavar="K", help="only events of this kind (status, gap, "
                   "reject, reboot, session, connect, disconnect, reader_error, "
                   "duplicate_id, conflict, ...)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.analyze import cmd_events

    return cmd_events(args)
