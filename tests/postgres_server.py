"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, a server on a free loopback port,
a login role for dbt, stopped and removed at the end. Debian's PostgreSQL 15 binaries
(/usr/lib/postgresql/15/bin, package postgresql-15); initdb refuses root, so as root the cluster runs as the OS
user postgres (which that package creates)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PG_BIN = Path(os.environ.get("SDC_PG_BIN", "/usr/lib/postgresql/15/bin"))
DBT_ROLE, DBT_PASSWORD, DATABASE = "sdc_dbt", "sdc", "sdc"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    dbname: str
    log: Path | None = None  # the server's log file (stderr), for tests of what it logs

    def connect(self, user: str | None = None, password: str | None = None):
        import psycopg2

        return psycopg2.connect(host=self.host, port=self.port, user=user or self.user,
                                password=password if user else self.password, dbname=self.dbname)

    def profile(self, schema: str = "main") -> str:
        """A dbt output (YAML) for this server."""
        return (f"      type: postgres\n      host: {self.host}\n      port: {self.port}\n      user: {self.user}\n"
                f"      password: {self.password}\n      dbname: {self.dbname}\n      schema: {schema}\n      threads: 2\n")


def missing_reason() -> str | None:
    """Why no cluster can start here (None when one can)."""
    if not (PG_BIN / "initdb").is_file():
        return f"PostgreSQL 15 server binaries are missing ({PG_BIN}); install the Debian package postgresql-15"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no OS user postgres to run the cluster as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextlib.contextmanager
def throwaway_postgres():
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    folder = Path(tempfile.mkdtemp(prefix="sdc-pg-"))
    folder.chmod(0o711)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    try:
        subprocess.run(_as_owner([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
                                  "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]), **run)
        subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w",
                                  "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off",
                                  "start"]), **run)
        try:
            import psycopg2

            admin = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
            admin.autocommit = True
            with admin.cursor() as cur:
                cur.execute(f"create role {DBT_ROLE} login createrole password '{DBT_PASSWORD}'")
                cur.execute(f"create database {DATABASE} owner {DBT_ROLE}")
            admin.close()
            yield PostgresServer("127.0.0.1", port, DBT_ROLE, DBT_PASSWORD, DATABASE, folder / "server.log")
        finally:
            subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=120)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
