"""`zeal locate publish`: publish a point set with differential privacy (seed 003)."""
import json
import os

from .common import ZealError, add_json

SAMPLES = {
    # name: (file in zeal.data, its public box: lon x0 x1, lat y0 y1)
    "earthquakes": ("earthquakes.csv", (-180.0, 180.0, -90.0, 90.0)),
    "uber-nyc": ("uber-nyc-apr14.csv.gz", (-74.5, -73.5, 40.4, 41.2)),
}


def add(sub):
    p = sub.add_parser(
        "locate", help="publish a point set with differential privacy (seed 003)",
        description="Location publishing (Fang & Chang, seed 003): a trusted publisher's "
                    "eps-DP release of a point set. The points are mapped along a Hilbert "
                    "curve, sorted, summed in groups of k and the sums published with exact "
                    "discrete Laplace noise; anyone reconstructs a point set by isotonic "
                    "regression. Central DP: the publisher sees the raw points.")
    lsub = p.add_subparsers(dest="locate_command", metavar="COMMAND",
                            help="publish: a point set's release and reconstructed points")
    lsub.required = True
    q = lsub.add_parser("publish", help="publish points: the release and the reconstructed "
                                        "points",
                        description="Publish a point set at budget --epsilon: writes the "
                                    "release (--release, JSON: n, k, the noisy group sums) and "
                                    "the reconstructed points (-o: .csv, .geojson or "
                                    ".parquet). The privacy unit is one point (or one "
                                    "device's --points-per-device points); n is public "
                                    "unless --private-n.")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", metavar="FILE",
                     help="CSV with a header line: lat/lon columns (--lat, --lon) or x/y "
                          "columns (--x, --y, with --box)")
    src.add_argument("--sample", choices=sorted(SAMPLES),
                     help="a shipped point set: earthquakes (23,412 epicentres, worldwide) or "
                          "uber-nyc (99,997 Uber pickups, New York, April 2014)")
    q.add_argument("--lat", default=None, metavar="COL", help="latitude column (default: lat "
                   "or latitude)")
    q.add_argument("--lon", default=None, metavar="COL", help="longitude column (default: lon "
                   "or longitude)")
    q.add_argument("--x", default=None, metavar="COL", help="x column (planar points)")
    q.add_argument("--y", default=None, metavar="COL", help="y column (planar points)")
    q.add_argument("--box", nargs=4, type=float, metavar=("X0", "X1", "Y0", "Y1"),
                   help="the publishing box, public (default for lat/lon: the whole Earth, "
                        "lon -180..180, lat -90..90; needed for x/y); points outside are "
                        "moved to its edge")
    q.add_argument("--epsilon", required=True, metavar="EPS",
                   help="the privacy budget (an exact decimal)")
    q.add_argument("--k", default="auto", metavar="K|auto",
                   help="the group size: an integer, or auto (the default: chosen from n and "
                        "epsilon alone by simulation on public synthetic data)")
    q.add_argument("--order", type=int, default=16, metavar="L",
                   help="the Hilbert curve's order: a 2^L x 2^L grid (default 16)")
    q.add_argument("--points-per-device", type=int, default=1, metavar="M",
                   help="protect a device's M points together (noise scale times M)")
    q.add_argument("--private-n", metavar="EPS_N",
                   help="also keep n private: EPS_N of budget publishes a noisy n first (the "
                        "seed's Remark 2); the total is EPS_N + EPS")
    q.add_argument("--seed", metavar="HEX", help="noise generator key, up to 64 hex digits "
                   "(reproducible runs only; default: the OS's secure source)")
    q.add_argument("-o", "--output", metavar="FILE",
                   help="the reconstructed points: .csv (default), .geojson or .parquet")
    q.add_argument("--release", metavar="FILE", help="write the release (JSON) here")
    q.add_argument("--evaluate", action="store_true",
                   help="also print the reconstruction's error against the input (for the "
                        "publisher only: it is computed from the raw points, not private)")
    add_json(q, "print the summary as JSON")
    q.set_defaults(func=run)


def _columns(names, args):
    low = {n.lower(): n for n in names}
    if args.x or args.y:
        if not (args.x and args.y):
            raise ZealError("planar points need both --x and --y")
        if args.box is None:
            raise ZealError("planar points need --box X0 X1 Y0 Y1 (a public box: taking it "
                            "from the data would leak)")
        return args.x, args.y, False
    lat = args.lat or low.get("lat") or low.get("latitude")
    lon = args.lon or low.get("lon") or low.get("lng") or low.get("longitude")
    if not (lat and lon):
        raise ZealError("the input needs lat/lon columns (name them with --lat and --lon) or "
                        "x/y columns (--x, --y and --box)")
    return lon, lat, True


def _load(args):
    """(x, y, box, name): the points and the publishing box."""
    import numpy as np

    from ..analysis.datasets import InputError, csv_columns, shipped_points
    from ..mechanism.locate.hilbert import LATLON, Box
    if args.sample:
        fname, box = SAMPLES[args.sample]
        name, geo = args.sample, True
        rows = [(lon, lat) for lat, lon in shipped_points(fname)]
    else:
        name, box = args.input, None
        try:
            names, _ = csv_columns(args.input, count=1, name=name)
            xcol, ycol, geo = _columns(names, args)
            _, rows = csv_columns(args.input, [xcol, ycol], name=name)
        except InputError as exc:
            raise ZealError(str(exc)) from None
    x = np.array([float(r[0]) for r in rows])
    y = np.array([float(r[1]) for r in rows])
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ZealError("%s holds a coordinate that is not a finite number" % name)
    if args.box is not None:
        box = tuple(args.box)
    if box is None:
        box = (LATLON["x0"], LATLON["x1"], LATLON["y0"], LATLON["y1"])
    return x, y, Box(*box, order=args.order), name, geo


def _words(seed):
    from ..mechanism.core.words import CounterWords, key_from_hex, system_words
    if seed is None:
        return system_words()
    try:
        return CounterWords(key_from_hex(seed))
    except ValueError as exc:
        raise ZealError(str(exc)) from None


def _write_points(path, x, y, geo):
    """The reconstructed points: CSV (lat,lon or x,y), GeoJSON (lat/lon only) or Parquet."""
    ext = os.path.splitext(path)[1].lower()
    names = ("lat", "lon") if geo else ("x", "y")
    cols = (y, x) if geo else (x, y)
    if ext == ".geojson":
        if not geo:
            raise ZealError("GeoJSON needs lat/lon points")
        doc = {"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {},
             "geometry": {"type": "Point", "coordinates": [round(float(a), 7),
                                                           round(float(b), 7)]}}
            for a, b in zip(x, y)]}
        with open(path, "w") as fh:
            json.dump(doc, fh)
    elif ext == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ZealError("Parquet needs pyarrow: pip install 'zeal-mcu[parquet]'") from None
        pq.write_table(pa.table({names[0]: cols[0], names[1]: cols[1]}), path)
    else:
        with open(path, "w") as fh:
            fh.write("%s,%s\n" % names)
            for a, b in zip(*cols):
                fh.write("%.7f,%.7f\n" % (a, b))


def run(args) -> int:
    from ..analysis.locate import choose, reconstruct
    from ..mechanism.locate import hilbert
    from ..mechanism.locate.publish import exact_epsilon, publish, publish_private_n

    hilbert.need()
    eps = exact_epsilon(args.epsilon)
    x, y, box, name, geo = _load(args)
    h = box.index(x, y)
    n = len(h)
    if args.k == "auto":
        rule = "auto (simulated on public synthetic data from n and epsilon)"

        def k_of(m):
            return choose.choose(m, float(eps))
    else:
        try:
            k_fixed = int(args.k)
        except ValueError:
            raise ZealError("--k must be an integer or auto, got %r" % args.k) from None
        rule = "given"

        def k_of(m):
            return min(max(1, k_fixed), m)
    words = _words(args.seed)
    if args.private_n is not None:
        rel = publish_private_n(h, args.private_n, eps, k_of, box, words,
                                points_per_device=args.points_per_device)
    else:
        rel = publish(h, eps, k_of(n), box, words, points_per_device=args.points_per_device)
    doc = rel.to_doc()
    if args.release:
        with open(args.release, "w") as fh:
            json.dump(doc, fh, indent=1)
    rx, ry = reconstruct.points(rel)
    out = args.output or os.path.splitext(os.path.basename(name))[0] + ".published.csv"
    _write_points(out, rx, ry, geo)
    summary = {"input": name, "n": n, "k": rel.k, "k_rule": rule, "groups": len(rel.sums),
               "epsilon": doc["epsilon"], "epsilon_n": doc["epsilon_n"],
               "privacy_unit": doc["privacy_unit"], "neighbours": doc["neighbours"],
               "trust": doc["trust"], "hilbert_order": box.order,
               "box": [box.x0, box.x1, box.y0, box.y1], "noise_scale_index_units": doc["scale"],
               "points_output": out, "release_output": args.release}
    if args.evaluate:
        got = reconstruct.indices(rel)
        if got.size == n:
            summary["normalised_error"] = reconstruct.normalised_error(h, got, box.cells)
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print("published %d points of %s at epsilon = %s (%s; neighbours: %s)"
          % (n, name, summary["epsilon"], summary["privacy_unit"], summary["neighbours"]))
    if rel.epsilon_n:
        print("n kept private: epsilon_n = %s for the noisy n = %d (total %s)"
              % (rel.epsilon_n, rel.n, exact_epsilon(rel.epsilon_n) + eps))
    print("trust: %s" % summary["trust"])
    print("groups: k = %d (%s), %d noisy group sums; Hilbert order %d; noise scale %s "
          "(index units)" % (rel.k, rule, len(rel.sums), box.order, rel.scale))
    print("reconstructed points: %s%s" % (out, "; release: %s" % args.release
                                          if args.release else ""))
    if "normalised_error" in summary:
        print("normalised error (publisher only, not private): %.5f of the curve"
              % summary["normalised_error"])
    return 0
