"""docs/duckdb.md's recipe, run as written: the two SQL queries are read from the page
(between its `<!-- recipe: NAME -->` markers, so the page and this test cannot drift) and run
with the duckdb package over a folder of Parquet files -- a `zeal export` split into several
files -- and their n and means must be `zeal analyze --json`'s: n exactly, the means to a
relative 1e-12 (each estimate is exact rounded once; the sums differ by float rounding only,
docs/duckdb.md: Precision).

The stores: a `zeal demo` store (one profile, 3 devices), and one holding the frames of two
demos at different epsilons -- two profiles, on the same boards (the demo's device ids), as
boards reflashed with a new profile send them -- written through the store's own API.
"""
import json
import os
import re
import subprocess
import sys

import duckdb
import pyarrow.parquet as pq
import pytest

from test_export import merge_stores

from conftest import HOST, ROOT

DOC = os.path.join(ROOT, "docs", "duckdb.md")
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))
REL = 1e-12


def recipe(name: str) -> str:
    """The SQL text of docs/duckdb.md between <!-- recipe: NAME --> and <!-- /recipe -->."""
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    found = re.findall(r"<!-- recipe: %s -->\s*```sql\n(.*?)```\s*<!-- /recipe -->"
                       % re.escape(name), text, re.S)
    assert len(found) == 1, "docs/duckdb.md has %d recipes named %s" % (len(found), name)
    return found[0]


def zeal(*args) -> str:
    done = subprocess.run([sys.executable, "-m", "zeal", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (args, done.stderr[-2000:])
    return done.stdout


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    where = tmp_path_factory.mktemp("recipe")
    one = str(where / "one.db")
    zeal("demo", "--db", one, "--count", "3000", "--devices", "3", "--json")
    other = str(where / "other.db")
    zeal("demo", "--db", other, "--count", "2000", "--devices", "2", "--epsilon", "2",
         "--json")
    return {"one profile": one, "two profiles": merge_stores([one, other], str(where / "two.db"))}


def _lake(db, where):
    """`zeal export --format parquet` of `db`, split with pyarrow into 3 files of
    where/exports (unequal parts, cut inside frames). Returns the export as one table."""
    whole = where / "whole.parquet"
    zeal("export", "--db", db, "--format", "parquet", "-o", whole)
    table = pq.read_table(whole)
    rows = table.num_rows
    cuts = [0, rows // 3 + 5, 2 * rows // 3 + 11, rows]
    (where / "exports").mkdir()
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(table.slice(a, b - a), where / "exports" / ("part-%d.parquet" % i))
    return table


@pytest.mark.parametrize("which", ["one profile", "two profiles"])
def test_the_recipe_gives_zeal_analyze_figures(stores, which, tmp_path, monkeypatch):
    db = stores[which]
    doc = json.loads(zeal("analyze", "--db", db, "--json"))
    table = _lake(db, tmp_path)
    monkeypatch.chdir(tmp_path)   # the recipe reads 'exports/*.parquet'
    con = duckdb.connect()
    assert len(os.listdir("exports")) == 3
    assert con.sql("SELECT count(DISTINCT filename) FROM read_parquet('exports/*.parquet', "
                   "filename = true)").fetchall() == [(3,)]
    fingerprints = set(table.column("fingerprint").to_pylist())
    assert len(fingerprints) == len(doc["profiles"]) == (1 if which == "one profile" else 2)

    (n, mean), = con.sql(recipe("overall")).fetchall()
    assert n == doc["overall"]["n"] == table.num_rows > 2000
    assert mean == pytest.approx(doc["overall"]["mean_calibrated"], rel=REL, abs=0)
    # the tolerance is tight enough to tell a mean off by one part in 10^10
    assert mean != pytest.approx(doc["overall"]["mean_calibrated"] * (1 + 1e-10), rel=REL,
                                 abs=0)

    want = {d["device"]: (d["n"], d["mean_calibrated"]) for d in doc["devices"] if d["n"]}
    got = con.sql(recipe("devices")).fetchall()
    assert [g[0] for g in got] == sorted(want) and len(want) == 3
    for device, n_device, mean_device in got:
        assert n_device == want[device][0], device
        assert mean_device == pytest.approx(want[device][1], rel=REL, abs=0), device
    if which == "two profiles":   # boards with reports under both profiles
        both = [d for d in doc["devices"] if isinstance(d["fingerprint"], list)]
        assert len(both) == 2 and all(len(set(d["fingerprint"])) == 2 for d in both)
