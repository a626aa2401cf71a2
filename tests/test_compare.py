"""`zeal compare` (zeal.analysis.compare): every row's figures against the modules' own exact
or closed-form figures, recomputed here through those modules (no number of the command
under test is hard-coded), the exact window-grid worst variance against a brute force over
every segment, exact mean variances over a small data file, JSON keys, the PNG, and one-line
errors. All checks are exact or deterministic (no sampling)."""
import argparse
import json
import math
from fractions import Fraction

import pytest

from zeal.analysis import compare
from zeal.commands import compare as compare_command
from zeal.errors import ZealError
from zeal.mechanism import ExactGrid, from_bits
from zeal.mechanism.table import design
from zeal.mechanism.table import profile as table_profile
from zeal.mechanism.references import Scaled, all_references

DATA = ["-0.5", "0.25", "# a comment", "", "1", "0.9", "3", "-1"]   # 3 lies outside: clamped
REQUIRED = {"mechanism", "bits", "worst_variance", "mean_variance", "exact", "on_device",
            "entropy_bits"}
REFERENCES = ("laplace", "scdf", "staircase", "duchi", "pm", "hm", "pm-sub")
# row -> (zeal profile --mechanism KIND, its bits at --bits 4)
TABLES = {"duchi-table": ("duchi", 1), "three-outputs-table": ("three-outputs", 2),
          "three-outputs-lp": ("three-outputs-lp", 2),
          "pm-table": ("pm", 4), "pm-sub-table": ("pm-sub", 4), "hm-table": ("hm", 4),
          "n-output-lp": ("n-output-lp", 4), "optimal": ("optimal", 4)}


def run(argv, capsys):
    """What cli.main does with the sub-command registered: (exit code, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="zeal")
    sub = parser.add_subparsers()
    compare_command.add(sub)
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except ZealError as exc:
        print("zeal: %s" % exc, file=__import__("sys").stderr)
        code = 1
    out, err = capsys.readouterr()
    return code, out, err


def readings():
    return [Fraction(t) for t in DATA if t and not t.startswith("#")]


def clamped(lo, hi):
    return [min(max(x, Fraction(lo)), Fraction(hi)) for x in readings()]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("compare") / "readings.txt"
    path.write_text("\n".join(DATA) + "\n")
    return str(path)


@pytest.fixture(scope="module", params=["1", "2"])
def result(request, data_file):
    """(epsilon, rows by name) of `zeal compare --range -1 1 --epsilon EPS --bits 4 --data`."""
    eps = request.param
    rows = compare.compare("-1", "1", eps, bits=4, data=readings(), floor_inputs=9)
    return Fraction(eps), {r["mechanism"]: r for r in rows}


def brute_grid_worst(g: ExactGrid) -> Fraction:
    """max of g.variance over every segment between window starts: on a segment the variance
    is a quadratic in the mixing weight f (fitted exactly from f = 0, 1/2, 1), so its maximum
    is at an end or at the vertex."""
    span = g.n - g.nc
    width = (g.hi - g.lo) / span
    best = None
    for b in range(span):
        def at(f):
            return g.variance(g.lo + (b + f) * width)
        v0, vh, v1 = at(Fraction(0)), at(Fraction(1, 2)), at(Fraction(1))
        a2 = 2 * v0 - 4 * vh + 2 * v1          # v(f) = a2 f^2 + a1 f + v0
        a1 = v1 - v0 - a2
        cands = [v0, v1]
        if a2 != 0 and 0 < -a1 / (2 * a2) < 1:
            cands.append(at(-a1 / (2 * a2)))
        m = max(cands)
        best = m if best is None else max(best, m)
    return best


def test_rows_and_json_keys(result):
    _, rows = result
    assert set(rows) == set(REFERENCES) | set(PUBLISHED_ROWS) | {"window-grid", "floor"} | \
        set(TABLES)
    for name, r in rows.items():
        assert REQUIRED <= set(r) and "above_floor" in r, name
        exact = name not in REFERENCES + PUBLISHED_ROWS + ("floor",)
        assert r["exact"] is exact
        assert r["on_device"] is exact       # the grid and every table profile run on a board
        if exact:
            assert Fraction(r["worst_variance_exact"]) > 0
            if name != "window-grid":     # the grid sends the profile's m (checked below)
                assert r["bits"] == max(1, (r["cells"] - 1).bit_length()), name
            assert r["bits"] <= 4
        elif r["cells"] is not None:      # a published finite output set: Three-Outputs, N-output
            assert r["bits"] == (r["cells"] - 1).bit_length() and r["entropy_bits"] is None
        else:
            assert r["bits"] is None and r["entropy_bits"] is None


def test_references_match_their_closed_forms(result):
    eps, rows = result
    xs = [float(x) for x in clamped(-1, 1)]
    for mech in all_references(float(eps)):
        s = Scaled(mech, lo=-1, hi=1)
        r = rows[mech.name]
        assert r["worst_variance"] == pytest.approx(s.worst_variance(), rel=1e-12)
        mean = math.fsum(float(s.variance(x)) for x in xs) / len(xs)
        assert r["mean_variance"] == pytest.approx(mean, rel=1e-12)


def test_window_grid_is_exactgrid_exact_worst(result):
    eps, rows = result
    prof = from_bits(-1.0, 1.0, float(eps), 4)
    g = ExactGrid(prof)
    r = rows["window-grid"]
    assert r["bits"] == prof.bits and r["cells"] == prof.n_cells
    assert Fraction(r["worst_variance_exact"]) == brute_grid_worst(g)
    xs = clamped(-1, 1)
    assert Fraction(r["mean_variance_exact"]) == sum(g.variance(x) for x in xs) / len(xs)


@pytest.mark.parametrize("eps, bits, between", [(0.7, 6, False), (0.7, 8, False),
                                                (8, 6, True), (3, 2, True)])
def test_grid_worst_variance_against_brute_force(eps, bits, between):
    # larger grids, an off-centre range: the first/last-segment argument against every
    # segment; at large eps (Nc = 1) the worst reading lies between two window starts, so the
    # vertex branch is exercised, not only the anchors
    g = ExactGrid(from_bits(-3.0, 17.5, eps, bits))
    worst, x = g.worst_variance()
    assert worst == brute_grid_worst(g)
    assert g.variance(x) == worst
    assert (g.position(x).denominator != 1) is between


def test_tables_are_the_device_profiles(result):
    """Each table row is the profile `zeal profile --mechanism KIND` writes, read back from its
    file as a device would take it; its figures are that table's exact ones."""
    eps, rows = result
    xs = clamped(-1, 1)
    for name, (mech, bits) in TABLES.items():
        if mech == "optimal":
            continue          # below, against the designer called directly
        prof = table_profile.loads(table_profile.build(-1.0, 1.0, eps, mech, bits).to_json())
        t = prof.table
        r = rows[name]
        assert Fraction(r["worst_variance_exact"]) == t.worst_variance(), name
        assert r["cells"] == t.cells and r["bits"] == bits, name
        assert Fraction(r["mean_variance_exact"]) == sum(t.variance(x) for x in xs) / len(xs)
    # Duchi's entropy in closed form: two outputs, P(high | x) affine in x, so the data's
    # report law is P(high | mean of the clamped readings)
    duchi = table_profile.build(-1.0, 1.0, eps, "duchi", 1).table
    p = duchi.distribution(sum(xs) / len(xs))[1]
    h = -(float(p) * math.log2(float(p)) + float(1 - p) * math.log2(float(1 - p)))
    assert rows["duchi-table"]["entropy_bits"] == pytest.approx(h, rel=1e-12)


def test_optimal_is_the_designer_and_the_smallest(result):
    eps, rows = result
    t = design.design(-1, 1, eps, 4)
    r = rows["optimal"]
    assert Fraction(r["worst_variance_exact"]) == t.worst_variance()
    assert r["cells"] == t.cells == 16 and r["bits"] == 4
    xs = clamped(-1, 1)
    assert Fraction(r["mean_variance_exact"]) == sum(t.variance(x) for x in xs) / len(xs)
    # below every row not solved by the LP (n-output is the same program on another anchor
    # grid: one anchor per cell; it can land a hair either side, e.g. 0.87088 vs 0.87094 at
    # eps = 2, so it is held to 0.1%)
    others = [v["worst_variance"] for k, v in rows.items()
              if k not in ("optimal", "n-output-lp", "three-outputs-lp", "floor")]
    assert r["worst_variance"] < min(others)
    assert r["worst_variance"] <= 1.001 * rows["n-output-lp"]["worst_variance"]


def test_entropy_at_most_bits_sent(result):
    _, rows = result
    for name in ("window-grid",) + tuple(TABLES):
        r = rows[name]
        assert 0 < r["entropy_bits"] <= r["bits"] + 1e-12, name


def test_cli_json_text_and_plot(tmp_path, data_file, capsys):
    png = tmp_path / "cmp.png"
    code, out, err = run(["compare", "--range", "-1", "1", "--epsilon", "1", "--bits", "3",
                          "--data", data_file, "--json", "--plot", str(png),
                          "--floor-inputs", "7"], capsys)
    assert code == 0
    rows = json.loads(out)
    assert isinstance(rows, list) and all(REQUIRED <= set(r) for r in rows)
    assert "designing optimal" in err and "clamped" in err      # progress on stderr
    blob = png.read_bytes()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n" and len(blob) > 10000
    code, out, err = run(["compare", "--range", "-1", "1", "--epsilon", "1", "--bits", "3",
                          "--floor-inputs", "7"], capsys)
    assert code == 0
    assert "runs on device" in out and "(reading unit)^2" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    assert lines["window-grid"].rstrip().endswith("yes")
    assert lines["optimal"].rstrip().endswith("yes")
    assert "n/a (continuous)" in lines["laplace"] and "n/a (needs --data)" in lines["optimal"]


def test_without_data_mean_is_null_and_table_profile_limit():
    rows = {r["mechanism"]: r for r in compare.compare("0", "50", "1", bits=9,
                                                        floor_inputs=None)}
    assert all(r["mean_variance"] is None for r in rows.values())
    for name in ("optimal", "pm-table", "hm-table", "pm-sub-table"):
        assert rows[name]["worst_variance"] is None and not rows[name]["on_device"], name
        assert "at most 6 bits" in rows[name]["note"], name
    # the natural sizes stand: Duchi (1 bit) and Three-Outputs (2 bits) at any --bits
    assert rows["duchi-table"]["bits"] == 1 and rows["duchi-table"]["on_device"]
    assert rows["three-outputs-lp"]["bits"] == 2
    assert rows["n-output-lp"]["bits"] == 4      # one anchor per cell: at most 16 cells
    assert all(r["above_floor"] is None for r in rows.values())   # no floor asked for
    assert rows["window-grid"]["bits"] == 9


@pytest.mark.parametrize("argv, words", [
    (["--range", "1", "1", "--epsilon", "1"], "range is empty"),
    (["--range", "a", "1", "--epsilon", "1"], "LO must be"),
    (["--range", "-1", "1", "--epsilon", "0"], "epsilon must be"),
    (["--range", "-1", "1", "--epsilon", "x"], "--epsilon must be"),
    (["--range", "-1", "1", "--epsilon", "1", "--bits", "0"], "--bits must be"),
    (["--range", "-1", "1", "--epsilon", "1", "--bits", "four"], "--bits must be"),
    (["--range", "-1", "1", "--epsilon", "1", "--data", "/nonexistent/r.txt"], "cannot read"),
    (["--range", "-1", "1", "--epsilon", "1", "--column", "t"], "--column needs --data"),
])
def test_one_line_errors(argv, words, capsys):
    code, out, err = run(["compare"] + argv, capsys)
    assert code == 1 and out == ""
    assert err.startswith("zeal: ") and err.count("\n") == 1 and words in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content, words", [("1\nabc\n", "line 2"), ("# only\n\n", "no readings"),
                                            ("nan\n", "line 1")])
def test_bad_data_files(tmp_path, content, words, capsys):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    code, out, err = run(["compare", "--range", "-1", "1", "--epsilon", "1", "--bits", "2",
                          "--data", str(path)], capsys)
    assert code == 1 and err.startswith("zeal: ") and err.count("\n") == 1 and words in err


def test_unwritable_plot(tmp_path, capsys):
    code, out, err = run(["compare", "--range", "-1", "1", "--epsilon", "1", "--bits", "2",
                          "--plot", str(tmp_path / "no" / "dir" / "x.png")], capsys)
    assert code == 1 and err.splitlines()[-1].startswith("zeal: cannot write")


def test_without_scipy_the_optimal_row_says_why_and_the_rest_stands(monkeypatch):
    import sys

    from zeal.mechanism import published

    from zeal.mechanism import floor

    published._alone.cache_clear()  # N-outputs searched by earlier tests (with scipy)
    floor._solve.cache_clear()       # and floors solved
    monkeypatch.setitem(sys.modules, "scipy", None)   # `import scipy...` -> ImportError
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    rows = {r["mechanism"]: r for r in compare.compare(-1, 1, 1, bits=3)}
    # the LP-designed kinds, the published searches and the floor (a conic program)
    for name in ("optimal", "n-output-lp", "three-outputs-lp", "n-output", "hm-np", "floor"):
        assert rows[name]["worst_variance"] is None, name
        assert "zeal-mcu[design]" in rows[name]["note"], name
    for name in ("window-grid", "duchi-table", "pm-table", "pm-sub-table", "hm-table"):
        assert rows[name]["worst_variance"] is not None, name


# ---- the published mechanisms and the floor (issue 23) ------------------------------------------
PUBLISHED_ROWS = ("ptt", "pm-opt", "three-outputs", "hm-tp", "n-output", "hm-np")


def test_every_row_has_its_distance_to_the_floor(result):
    """The floor row is below every mechanism's worst case, and above_floor is the ratio."""
    _, rows = result
    bound = rows["floor"]["worst_variance"]
    assert rows["floor"]["above_floor"] == 1.0 and rows["floor"]["kind"] == "floor"
    for name in PUBLISHED_ROWS + REFERENCES + tuple(TABLES) + ("window-grid",):
        r = rows[name]
        assert r["floor"] == bound and r["above_floor"] == r["worst_variance"] / bound, name
        assert r["above_floor"] >= 1 - 1e-9, name


def test_the_published_rows_on_a_range(capsys):
    """On [0, 50] the published mechanisms' rows are their [-1, 1] worst cases times 25^2;
    Three-Outputs and N-output send ceil(log2 N) bits; the floor scales the same way."""
    from zeal.mechanism import published as P
    from zeal.mechanism.floor import floor

    code, out, err = run(["compare", "--range", "0", "50", "--epsilon", "2", "--bits", "2",
                          "--floor-inputs", "9", "--json"], capsys)
    assert code == 0
    rows = {r["mechanism"]: r for r in json.loads(out)}
    assert rows["hm-np"]["worst_variance"] == pytest.approx(625 * P.hm_np(2).worst_variance())
    assert rows["three-outputs"]["cells"] == 3 and rows["three-outputs"]["bits"] == 2
    n = P.noutput_best_n(2)
    assert rows["n-output"]["cells"] == n.cells == 3
    assert rows["floor"]["worst_variance"] == pytest.approx(625 * floor(2, 9).value)
    for name in PUBLISHED_ROWS:
        assert rows[name]["kind"] == "reference" and not rows[name]["exact"], name


def test_the_published_three_outputs_as_an_exact_table():
    """three-outputs-table: Zhao et al.'s construction with a rational ratio L <= e^eps and a
    rational P0 (shared_spec/published.md): exactly private and unbiased (the table's own
    checks), 3 cells, and its worst case within 0.02 % of the published float figure."""
    from zeal.mechanism import published as P

    for eps in ("1", "2", "4"):
        rows = {r["mechanism"]: r for r in compare.compare("-1", "1", eps, floor_inputs=None)}
        r = rows["three-outputs-table"]
        assert r["exact"] and r["on_device"] and r["cells"] == 3 and r["bits"] == 2
        want = P.ThreeOutputs(epsilon=float(eps)).worst_variance()
        assert want <= r["worst_variance"] <= want * 1.0002, (eps, r["worst_variance"], want)
