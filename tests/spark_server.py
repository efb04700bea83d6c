"""One local Spark for many dbt and sdc runs: a Spark Connect server (the spark-connect jar ships with pyspark)
that a test module starts once. dbt-spark's session method and sdc's Spark steps build their session with
SparkSession.builder, which connects to the server named in $SPARK_REMOTE instead of starting a JVM of its own:
a run then costs seconds, not the ~15-30 s of a JVM start. Each run still gets a session of its own (its runtime
settings such as spark.sql.variable.substitute are its own); the catalog and tables are the server's, kept in
the folder it was started for, as a local session keeps them in the folder it starts in.

The settings a server fixes for every session (master, warehouse, metastore) are the server's, so a profile
used with it names only per-session settings (``session_parameters``).

Run as a script, this file is the server: ``python spark_server.py PORT`` in the folder of its catalog, with
further ``key=value`` Spark settings."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SERVER_SETTINGS = {
    "spark.master": "local[2]",
    "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    # The tests' tables have tens of rows: compiling generated Java for every query costs more than running it
    # interpreted (the engine tests' build 387-398 -> 336-344 CPU s). Both are Spark's own execution paths
    # with the same results; Spark falls back to the interpreted one wherever codegen fails.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Adaptive execution re-plans a query after each of its stages: with tens of rows there is nothing to adapt
    # and the re-planning of sdc's long CTE chains cost more than running them (ckm_sum's audit on the engine
    # tests' microdata: 8.3-9.8 s instead of 10.5-14.8 s once the server was warm; the engine tests' build alone,
    # three runs each: 198, 156, 160 s instead of 213, 187, 160 s). The results are the same.
    "spark.sql.adaptive.enabled": "false",
}
# settings a session may set for itself (runtime SQL settings); the others are fixed when Spark starts
SESSION_SETTINGS = ("spark.sql.shuffle.partitions", "spark.sql.variable.substitute")
READY = "sdc spark connect server ready"


def session_parameters(parameters: dict) -> dict:
    """The per-session part of a profile's server_side_parameters (what a session on the server may set)."""
    return {k: v for k, v in parameters.items() if k in SESSION_SETTINGS}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def spark_connect_server(folder: Path, settings: dict | None = None):
    """A server whose catalog (Derby metastore_db) and tables (spark-warehouse) lie in ``folder`` unless
    ``settings`` name others; yields its address for $SPARK_REMOTE, stops it at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    arguments = [f"{k}={v}" for k, v in {**SERVER_SETTINGS, "spark.connect.grpc.binding.port": port,
                                          **(settings or {})}.items()]
    log = (folder / "spark_connect_server.log").open("w")
    server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *arguments], cwd=folder, stdout=log,
                              stderr=subprocess.STDOUT, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while READY not in (folder / "spark_connect_server.log").read_text(errors="replace"):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the Spark Connect server did not start:\n"
                                   + (folder / "spark_connect_server.log").read_text(errors="replace")[-3000:])
            time.sleep(0.2)
        yield f"sc://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def _serve(arguments: list[str]) -> None:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for argument in arguments:
        key, value = argument.split("=", 1)
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    print(READY, flush=True)
    while not stopped:
        time.sleep(0.2)
    spark.stop()


if __name__ == "__main__":
    _serve(sys.argv[1:])
