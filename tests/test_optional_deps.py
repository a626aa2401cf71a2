"""A missing optional dependency is said before any work (issue 22): `zeal reproduce` without
matplotlib used to compute for 51 s and only then say it needed matplotlib, leaving an empty
folder. matplotlib is made unimportable here (sys.modules entry None)."""
import os
import sys

import pytest

from zeal import cli


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.mark.parametrize("argv", [
    ["reproduce", "--out", "figures"],
    ["demo", "--plots", "figures", "--count", "100"],
])
def test_missing_matplotlib_is_said_at_once(tmp_path, monkeypatch, capsys, no_matplotlib,
                                            argv):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "need matplotlib" in err[0] and "zeal-mcu[plots]" in err[0], err
    assert not os.path.exists(tmp_path / "figures")  # nothing made, nothing computed


def test_plots_of_a_demo_without_figures_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo", "--attributes", "--plots", "figures"]) == 1
    assert "--plots" in capsys.readouterr().err
