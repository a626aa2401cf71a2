"""`zeal compress`: a compact archive of a store (or of `zeal perturb` output), the sizes of
the codecs it tried, and with --table the size table of every codec."""


def add(sub):
    p = sub.add_parser(
        "compress", help="a compact archive of a collection (or of `zeal perturb` output); "
        "--table: the size table of every codec",
        description="Compress the reports of a collector database (--db) or of a file of "
        "`zeal perturb` output (--reports with --profile) into a versioned archive that "
        "`zeal analyze --archive` reads, and print, for each codec tried, bits per report, "
        "CR against 64-bit doubles, the ratio to the entropy bound and MB/s. By default the "
        "archive tries adaptive (the smallest) and packed (the devices' own bits: its size "
        "is computed, and it is made only where it is the smaller), reading the store a page "
        "at a time and coding it a block at a time, so memory does not grow with the store. "
        "A store of more than 2,097,152 window-grid or table reports (or 65,536 frames) is "
        "written as volumes: --out, then NAME.v2.zeal.zip, NAME.v3.zeal.zip, ... beside it, "
        "each an archive of a run of the store's frames (the events in volume 1), so that "
        "`zeal analyze --archive` holds one volume at a time. "
        "--table measures every available codec.")
    p.add_argument("--db", metavar="FILE|URL", help="the collector's database, an SQLite file "
                   "or a postgresql:// URL (opened read-only)")
    p.add_argument("--reports", metavar="FILE", help="a file of `zeal perturb` output (any "
                   "--format), instead of --db")
    p.add_argument("--profile", metavar="FILE", help="the profile the --reports were made "
                   "under")
    p.add_argument("--out", metavar="ARCHIVE", help="the archive to write (default: the "
                   "source's name with .zeal.zip); for a store past one volume, volume 1, "
                   "the others beside it (NAME.v2.zeal.zip, ...: NAME is ARCHIVE without "
                   ".zeal.zip)")
    p.add_argument("--codec", nargs="+", action="extend", metavar="NAME",
                   help="the codecs the archive may use, each stream in the smallest "
                   "(default: packed and adaptive; with --table every available codec); "
                   "only these are run, unless --table")
    p.add_argument("--table", action="store_true", help="also measure every available "
                   "codec (zstd, lz4, bz2, lzma, pcodec, greedygd, rans too: their sizes and "
                   "compress and decompress MB/s, the best of repeated runs) and print the "
                   "full size table; the archive then takes the smallest of all of them "
                   "(unless --codec). Slow (lzma: 0.2-2 MB/s) and it holds every stream in "
                   "memory")
    p.add_argument("--readings", metavar="FILE", help="the true readings behind the reports, "
                   "one decimal a line: the entropy bound is then the exact one (default: "
                   "the plug-in entropy of the observed reports)")
    p.add_argument("--json", action="store_true", help='print {"n", '
                   '"entropy_bits_per_report", "entropy_basis", "codecs": [...], "archive", '
                   '"volumes"} as JSON ("codecs": the codecs tried, or with --table every '
                   'available one; "volumes": the archive\'s files, volume 1 -- "archive"\'s '
                   'path -- first)')
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.compress.command import cmd_compress

    return cmd_compress(args)
