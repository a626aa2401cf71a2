"""`zeal export`: every stored report to CSV or Parquet, with its profile."""

# zeal.analysis.export.EXPORT_FORMATS, kept here so that building the parser imports no
# analysis (tests/test_cli_fast.py checks the two agree)
EXPORT_FORMATS = ("csv", "parquet")


def add(sub):
    p = sub.add_parser(
        "export", help="write every stored report to CSV or Parquet, with its profile",
        description="One row per report: device (id:HEX), boot, seq, report (position in its "
                    "frame), arrival (UTC), estimate (the report's unbiased estimate on the "
                    "reading's scale: its mean is zeal analyze's calibrated mean), low (the "
                    "bits sent), fingerprint. The profiles (range, epsilon, bits, unit, ...) "
                    "go into the Parquet schema metadata, or a JSON file beside the CSV.")
    p.add_argument("--db", required=True, metavar="FILE|URL", help="the collector's database, "
                   "an SQLite file or a postgresql:// URL (opened read-only)")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="csv",
                   help="csv or parquet (Parquet needs pyarrow: pip install "
                        "'zeal-mcu[parquet]'); default: csv")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="output file; '-' for stdout (Parquet only into a pipe or a file); "
                        "default: the database's name with .csv or .parquet")
    p.add_argument("--unit", default="", metavar="TEXT",
                   help="unit of the readings (and of the estimate column), e.g. '%%RH' or "
                        "'degC'; stored in the metadata; default: empty (not stated)")
    p.add_argument("--meta", metavar="FILE",
                   help="write the metadata JSON here; default: FILE.csv.json beside a CSV "
                        "file, none for CSV on stdout; Parquet keeps it in its schema")
    p.add_argument("--include-vector", action="store_true",
                   help="export test-mode (vector) frames too (never real data); default: off")
    p.add_argument("--json", action="store_true",
                   help="print what was written (reports, output, metadata file) as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.export import cmd_export

    return cmd_export(args)
