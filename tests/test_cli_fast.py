"""A fast command line: building `zeal`'s parser (what `zeal --version` and `zeal --help` do)
imports no heavy module, and the option defaults the command modules keep inline agree with
the modules that own them. The speed itself is measured by tools/bench_scale.py (a ratio to
`python -c "import numpy"` in the same run), not here."""
import json
import subprocess
import sys

HEAVY = ("numpy", "scipy", "serial", "pyarrow", "matplotlib", "zstandard", "psycopg",
         "paho", "zeal.wire", "zeal.mechanism", "zeal.collect", "zeal.analysis", "zeal.demo",
         "zeal.paper", "zeal.board.flash")


def _loaded_after(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _heavy(mods) -> list:
    return [m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_building_the_parser_imports_nothing_heavy():
    mods = _loaded_after("from zeal.commands import build_parser\nbuild_parser()")
    assert _heavy(mods) == []


def test_version_and_help_import_nothing_heavy():
    for argv in (["--version"], ["--help"]):
        code = ("import sys\nfrom zeal.cli import main\nsys.argv = ['zeal'] + %r\n"
                "try:\n    main(%r)\nexcept SystemExit:\n    pass\n" % (argv, argv))
        mods = _loaded_after(code)
        assert _heavy(mods) == [], argv


def test_the_check_can_fail():
    # the same check sees a heavy import when there is one
    mods = _loaded_after("import zeal.wire")
    assert "zeal.wire" in _heavy(mods)


def test_inline_defaults_agree_with_their_owners():
    from zeal.analysis import reproduce as analysis_reproduce
    from zeal.analysis import shuffle_cli
    from zeal.analysis import export as analysis_export
    from zeal.commands import collect, export, profile, reproduce, run
    from zeal.wire import transport

    assert collect.DEFAULT_BAUD == run.DEFAULT_BAUD == transport.DEFAULT_BAUD
    assert reproduce.SEED == analysis_reproduce.SEED
    assert export.EXPORT_FORMATS == analysis_export.EXPORT_FORMATS
    assert (profile.DEFAULT_LEVELS, profile.DEFAULT_T) == (shuffle_cli.DEFAULT_LEVELS,
                                                           shuffle_cli.DEFAULT_T)
