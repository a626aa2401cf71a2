"""A throw-away PostgreSQL cluster for the tests (and tools/ benchmarks): initdb + pg_ctl in a
temp dir, a free loopback port, its unix socket in the same temp dir, trust authentication,
fsync off; stopped and deleted at the end.

pytest fixtures (loaded from tests/conftest.py as a plugin):
    postgres_server   session-wide: the running cluster (PgCluster)
    postgres_url      per test: the URL of a new, empty database on it
Without the server binaries (initdb, pg_ctl, postgres) or psycopg the tests that use them are
skipped with one line saying how to install them; under CI=true a skip fails the run
(tests/conftest.py), so CI always runs them (.ci/run installs PostgreSQL when initdb is absent).

The binaries are looked for on PATH, then in `pg_config --bindir`, then in Debian's
/usr/lib/postgresql/<version>/bin (newest first). PostgreSQL refuses to run as root: as root
the cluster runs as the user `postgres` (or `nobody`), owning the temp dir.

    with PgCluster() as pg:
        url = pg.create_database("zeal")
"""
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

import pytest

INSTALL_HINT = ("install PostgreSQL's server (Debian/Ubuntu: apt-get install postgresql; "
                "macOS: brew install postgresql) and psycopg (pip install 'psycopg[binary]')")


def find_bindir():
    """The folder holding initdb, pg_ctl and postgres, or None."""
    names = ("initdb", "pg_ctl", "postgres")
    found = shutil.which("initdb")
    if found:
        d = os.path.dirname(os.path.realpath(found))
        if all(os.access(os.path.join(d, n), os.X_OK) for n in names):
            return d
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            candidates.append(subprocess.run([pg_config, "--bindir"], capture_output=True,
                                             text=True, timeout=10).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass

    def version(path):
        part = path.rstrip("/").split("/")[-2]
        return tuple(int(x) if x.isdigit() else 0 for x in part.split("."))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    for d in candidates:
        if d and all(os.access(os.path.join(d, n), os.X_OK) for n in names):
            return d
    return None


def missing() -> str:
    """'' when a cluster can be started here, else why not (one line, with how to install)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 is not installed: " + INSTALL_HINT
    if find_bindir() is None:
        return "PostgreSQL server not found (no initdb): " + INSTALL_HINT
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    """initdb + pg_ctl start in a new temp dir; stop() stops and deletes it."""

    def __init__(self, user: str = "zeal"):
        self.bindir = find_bindir()
        if self.bindir is None:
            raise RuntimeError("PostgreSQL server not found: " + INSTALL_HINT)
        self.user = user
        self.dir = tempfile.mkdtemp(prefix="zeal-pg-")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = None
        self._names = itertools.count(1)
        self._run_as = {}
        if os.geteuid() == 0:  # postgres refuses root: run it as an unprivileged user
            for name in ("postgres", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self._run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
                break
        try:
            self._start()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _tool(self, name, *args, check=True):
        done = subprocess.run([os.path.join(self.bindir, name)] + list(args), cwd=self.dir,
                              capture_output=True, text=True, timeout=60, **self._run_as)
        if check and done.returncode != 0:
            raise RuntimeError("%s failed (exit %d): %s%s" % (name, done.returncode,
                                                            done.stderr.strip()[-800:],
                                                            self._log_tail()))
        return done

    def _log_tail(self):
        try:
            with open(self.log) as fh:
                return "\nserver log:\n" + fh.read()[-800:]
        except OSError:
            return ""

    def _start(self):
        self._tool("initdb", "-D", self.data, "-A", "trust", "-U", self.user, "-E", "UTF8",
                   "--locale=C", "--no-sync")
        for attempt in range(3):
            self.port = free_port()
            opts = ("-p %d -k %s -c listen_addresses=127.0.0.1 -F -c full_page_writes=off "
                    "-c synchronous_commit=off -c max_connections=60 -c shared_buffers=16MB"
                    % (self.port, self.dir))
            done = self._tool("pg_ctl", "start", "-w", "-t", "30", "-D", self.data, "-l",
                              self.log, "-o", opts, check=False)
            if done.returncode == 0:
                return
        raise RuntimeError("pg_ctl start failed: %s%s" % (done.stderr.strip()[-800:],
                                                          self._log_tail()))

    def url(self, dbname: str = "postgres") -> str:
        return "postgresql://%s@127.0.0.1:%d/%s" % (self.user, self.port, dbname)

    def create_database(self, name: str = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = name or "t%d" % next(self._names)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "%s"' % name)
        return self.url(name)

    def stop(self):
        if self.port is not None and os.path.isdir(self.data):
            self._tool("pg_ctl", "stop", "-D", self.data, "-m", "immediate", "-w", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


@pytest.fixture(scope="session")
def postgres_server():
    why = missing()
    if why:
        pytest.skip(why)
    cluster = PgCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a new, empty database on the session's throw-away cluster."""
    return postgres_server.create_database()
