"""Start, stop and inspect the local Apache Kafka broker used for local runs and tests.

>>> b = LocalBroker(port=19092, controller_port=19093, data_dir="/tmp/streamxai-doc")
>>> b.bootstrap
'127.0.0.1:19092'
>>> print(b.server_properties().splitlines()[2])
process.roles=broker,controller
>>> b.status().running
False
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import exit_codes
from ..arg_types import at_least, port, positive
from ..kafka.config import BrokerError
from ..settings import Secret, utf8_file_text
from .broker_tls import BrokerTls
from .cluster import nodes_in, random_cluster_id
from .ports import claim_port

__all__ = ["BrokerError", "BrokerStatus", "BrokerTls", "LocalBroker", "SaslUsers", "default_libs_dir", "main", "add_arguments",
           "run", "DESCRIPTION"]

_REPO = Path(__file__).resolve().parents[2]
#: the pom and the log4j2 configuration, shipped in the package (a wheel install has no deploy/)
_FILES = Path(__file__).resolve().parent / "broker_files"
#: Jars that must be present for the broker to start; checked by ``ensure_jars``.
_REQUIRED_JARS = ("kafka_2.13-", "kafka-clients-", "log4j-core-", "log4j-slf4j")
_HOST = "127.0.0.1"
#: JVM flags besides -Xmx. Only the quick compiler (C1): in a broker that lives for a demo or a
#: test run, the optimising compiler costs the workers' cores more CPU than it saves.
_JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]
_PROBE_LOGGER = logging.getLogger("streamxai.broker.probe")
_PROBE_LOGGER.addHandler(logging.NullHandler())
_PROBE_LOGGER.propagate = False


@dataclass(frozen=True)
class BrokerStatus:
    """What ``LocalBroker.status()`` found: ``running``, a JVM started from this ``data_dir`` is
    alive; ``ready``, it answers a metadata request on ``bootstrap``.
    """

    running: bool
    ready: bool
    pid: int | None
    bootstrap: str
    data_dir: Path
    log_file: Path

    def __str__(self) -> str:
        if not self.running:
            return f"broker not running (data dir {self.data_dir})"
        state = "ready" if self.ready else "not answering"
        return f"broker running, {state}: pid {self.pid}, bootstrap {self.bootstrap}, log {self.log_file}"


_USER_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: The SASL mechanism clients use on a secured local broker.
SASL_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class SaslUsers:
    """The users of a secured local broker: ``admin`` (the super user, whose credentials the
    broker itself uses) and any others, each ``name -> password``. Passwords are
    :class:`~streamxai.settings.Secret` and never shown.

    >>> u = SaslUsers(Secret("adm1n-pw"), {"worker": Secret("w-pw")})
    >>> u
    SaslUsers(admin, worker)
    >>> "pw" in repr(u) or "pw" in str(u)
    False
    """

    admin_password: Secret
    users: Mapping[str, Secret] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, pw in {"admin": self.admin_password, **self.users}.items():
            if not _USER_RE.fullmatch(name):
                raise ValueError(f"user name {name!r} must be 1-64 characters from A-Z a-z 0-9 _ . -")
            if not isinstance(pw, Secret) or not pw.reveal():
                raise ValueError(f"user {name!r} needs a non-empty password given as a Secret")
            if any(c in pw.reveal() for c in '"\\\n,[]='):
                raise ValueError(f"the password of user {name!r} must not contain quotes, backslashes, "
                                 "newlines, commas, brackets or '='")
        if "admin" in self.users:
            raise ValueError("'admin' is the broker's own super user; pass its password as admin_password")

    def __repr__(self) -> str:
        return f"SaslUsers({', '.join(['admin', *self.users])})"

    __str__ = __repr__

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> SaslUsers:
        """Read ``name = "password"`` lines (TOML) with at least ``admin``."""
        import tomllib

        p = Path(path)
        try:
            data = tomllib.loads(utf8_file_text(p, "SASL users file"))
        except FileNotFoundError:
            raise BrokerError(f"SASL users file {p} does not exist; give --sasl-users a TOML file of "
                              'name = "password" lines, one of them admin') from None
        except tomllib.TOMLDecodeError as e:
            raise BrokerError(f"SASL users file {p} is not valid TOML ({e.args[0].split('(')[0].strip()})") from None
        if not all(isinstance(v, str) for v in data.values()) or "admin" not in data:
            raise BrokerError(f"SASL users file {p} must hold name = \"password\" lines, one of them admin")
        admin = Secret(data.pop("admin"))
        return cls(admin, {k: Secret(v) for k, v in data.items()})

    def client_config(self, user: str = "admin") -> dict[str, str]:
        """librdkafka settings to connect as ``user``."""
        pw = self.admin_password if user == "admin" else self.users[user]
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": SASL_MECHANISM,
                "sasl.username": user, "sasl.password": pw.reveal()}


def _checkout() -> bool:
    """Whether this module runs from a source checkout (``pip install -e .``), not an installed wheel."""
    return (_REPO / "pyproject.toml").is_file() and (_REPO / "deploy").is_dir()


def _default_data_dir() -> Path:
    base = _REPO if _checkout() else Path.cwd()
    return base / ".streamxai" / "kafka"


def default_libs_dir() -> Path:
    """Where the Kafka jars go: ``deploy/target/kafka-libs`` in a source checkout, else the user's
    cache (``$XDG_CACHE_HOME/streamxai/kafka-libs``, by default ``~/.cache/...``)."""
    if _checkout():
        return _REPO / "deploy" / "target" / "kafka-libs"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "streamxai" / "kafka-libs"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited but still answers kill(0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _tail(path: Path, lines: int = 30, start: int = 0) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LocalBroker:
    """A Kafka node (broker + KRaft controller) on 127.0.0.1, run as a background JVM, or a local
    cluster of several (``nodes``). ``start()`` needs Java 17+ and, the first time, Maven (the
    jars come from Maven Central); the files it keeps in ``data_dir`` are listed in
    docs/pages/how-to/deployment.md.

    Parameters
    ----------
    port
        Client listener; the bootstrap address is ``127.0.0.1:<port>``.
    controller_port
        KRaft controller listener.
    data_dir
        The broker's directory. Default: ``.streamxai/kafka`` under the repository (or the
        working directory when the package is installed elsewhere).
    log_file
        Where log4j2 and the JVM's stdout/stderr write; default ``<data_dir>/broker.log``.
    heap
        JVM ``-Xmx``.
    num_partitions
        Partitions of auto-created topics.
    die_with_parent
        Linux only: the JVM gets SIGTERM when the process that started it dies (a killed test
        run leaves no broker behind).
    libs_dir
        Directory with the Kafka jars; default :func:`default_libs_dir`.
    sasl
        :class:`SaslUsers`: require SASL (SCRAM-SHA-512) and ACLs, ``admin`` being the only super
        user (:meth:`grant`); None: PLAINTEXT. A data directory formatted without the users'
        credentials must be deleted first.
    tls
        :class:`~streamxai.local.broker_tls.BrokerTls`: the client listener speaks TLS and
        requires a client certificate signed by its CA; the controller listener stays plain.
    auto_create_topics
        Kafka's ``auto.create.topics.enable``.
    extra_properties
        ``server.properties`` entries that replace or add to the defaults.
    nodes
        1, or a cluster of that many nodes, each a broker and a controller voter: node ``i``
        (Kafka's broker id) is ``self.nodes[i - 1]`` in ``data_dir/node-<i>``; ``start``,
        ``stop`` and ``status`` act on all, :meth:`stop_node` and :meth:`start_node` on one.
    node_ports
        With ``nodes``: each node's (port, controller_port); default ``port`` and
        ``controller_port`` plus 2 for each next node.
    """

    def __init__(
        self,
        port: int = 9092,
        controller_port: int = 9093,
        data_dir: str | os.PathLike[str] | None = None,
        log_file: str | os.PathLike[str] | None = None,
        *,
        heap: str = "512m",
        num_partitions: int = 4,
        die_with_parent: bool = False,
        libs_dir: str | os.PathLike[str] | None = None,
        sasl: SaslUsers | None = None,
        tls: BrokerTls | None = None,
        auto_create_topics: bool = True,
        extra_properties: dict[str, str] | None = None,
        nodes: int = 1,
        node_ports: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        if not isinstance(nodes, int) or not 1 <= nodes <= 9:
            raise ValueError(f"nodes must be an int in 1..9, got {nodes!r}")
        for name, value in (("port", port), ("controller_port", controller_port)):
            if not isinstance(value, int) or not 0 < value < 65536:
                raise ValueError(f"{name} must be an int in 1..65535, got {value!r}")
        if port == controller_port:
            raise ValueError(f"port and controller_port must differ, both are {port}; give another --controller-port")
        if not re.fullmatch(r"[1-9][0-9]*[kKmMgG]?", str(heap)):
            raise ValueError(f"heap must be a JVM size such as '512m' or '1g', got {heap!r}")
        if not isinstance(num_partitions, int) or num_partitions < 1:
            raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
        self.port = port
        self.controller_port = controller_port
        # absolute: the JVM runs in data_dir, where a path relative to this process's directory is wrong
        self.data_dir = Path(data_dir).absolute() if data_dir is not None else _default_data_dir()
        self.log_file = Path(log_file).absolute() if log_file is not None else self.data_dir / "broker.log"
        self.heap = heap
        self.num_partitions = num_partitions
        self.auto_create_topics = auto_create_topics
        self.die_with_parent = die_with_parent
        self.libs_dir = Path(libs_dir).absolute() if libs_dir is not None else default_libs_dir()
        self.sasl = sasl
        self.tls = tls
        #: ``server.properties`` entries that replace or add to the defaults (a test's retention check, ...)
        self.extra_properties = dict(extra_properties or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_mark = 0  # size of the log file when the JVM was last launched
        #: this JVM's place in a cluster: its node id, the controller quorum, how many nodes
        self._node_id, self._voters, self._size = 1, f"1@{_HOST}:{controller_port}", 1
        #: the nodes of a cluster (``nodes > 1``), each a LocalBroker of one JVM; empty for one node
        self.nodes: list[LocalBroker] = []
        if node_ports is not None and nodes == 1:
            raise ValueError("node_ports is for a cluster: give nodes > 1 too")
        if nodes > 1:
            from .cluster import cluster_nodes

            self.nodes = cluster_nodes(self, nodes, node_ports)

    def __repr__(self) -> str:
        more = f", nodes={len(self.nodes)}" if self.nodes else ""
        return (f"LocalBroker(port={self.port}, controller_port={self.controller_port}, data_dir={str(self.data_dir)!r}"
                f"{more})")

    # -- paths -------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Client bootstrap address, ``"127.0.0.1:<port>"`` (of every node of a cluster, comma-separated)."""
        if self.nodes:
            return ",".join(n.bootstrap for n in self.nodes)
        return f"{_HOST}:{self.port}"

    @property
    def node_id(self) -> int:
        """This JVM's ``node.id`` (1 for a single node; a cluster's nodes are 1..nodes)."""
        return self._node_id

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "broker.pid"

    @property
    def properties_file(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def security_protocol(self) -> str:
        """The client listener's protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        return ("SASL_" if self.sasl is not None else "") + ("SSL" if self.tls is not None else "PLAINTEXT")

    @property
    def keystore_file(self) -> Path:
        """The broker's PEM keystore (key and certificate), written at start when ``tls`` is set."""
        return self.data_dir / "keystore.pem"

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs``: partitions and the KRaft metadata log."""
        return self.data_dir / "data"

    # -- jars --------------------------------------------------------------------------------

    def _jars_present(self) -> bool:
        if not self.libs_dir.is_dir():
            return False
        names = [p.name for p in self.libs_dir.glob("*.jar")]
        return all(any(n.startswith(prefix) for n in names) for prefix in _REQUIRED_JARS)

    def ensure_jars(self) -> Path:
        """Resolve the Kafka jars with Maven unless they are already in ``libs_dir``; returns
        ``libs_dir``. Raises ``BrokerError`` when Maven is missing or fails."""
        if self._jars_present():
            return self.libs_dir
        pom = _FILES / "pom.xml"
        if not pom.is_file():
            raise BrokerError(f"Kafka jars missing in {self.libs_dir} and no {pom} to resolve them; "
                              "reinstall streamxai, or pass --libs-dir pointing at the Kafka jars")
        mvn = shutil.which("mvn")
        if mvn is None:
            raise BrokerError(
                f"Kafka jars missing in {self.libs_dir} and Maven (mvn) is not on PATH; "
                "install Maven 3.8+ (e.g. apt-get install maven) or copy the jars there"
            )
        self.libs_dir.mkdir(parents=True, exist_ok=True)
        cmd = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies"]
        # Maven's own output (target/) goes beside the jars, not into the installed package
        cmd += [f"-Dkafka.libs.dir={self.libs_dir}", f"-Dstreamxai.build.dir={self.libs_dir.parent / 'maven-build'}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not self._jars_present():
            out = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise BrokerError(
                f"resolving the Kafka jars failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                f"{out}\nMaven needs access to Maven Central (or a mirror in ~/.m2/settings.xml)"
            )
        return self.libs_dir

    # -- configuration -----------------------------------------------------------------------

    def server_properties(self) -> str:
        """The ``server.properties`` text for this broker (with ``sasl``, it holds the admin
        password: the file is written readable by its owner only)."""
        replicas = min(3, self._size)
        in_sync = max(1, replicas - 1)
        lines = [
            "# Written by pipeline/local/broker.py (LocalBroker); rewritten at every start.",
            f"# Combined broker + KRaft controller {self._node_id} of {self._size} for local runs and tests.",
            "process.roles=broker,controller",
            f"node.id={self._node_id}",
            f"controller.quorum.voters={self._voters}",
            *self._listener_properties(),
            f"log.dirs={self.log_dir}",
            f"num.partitions={self.num_partitions}",
            f"default.replication.factor={replicas}",
            f"min.insync.replicas={in_sync}",
            f"auto.create.topics.enable={'true' if self.auto_create_topics else 'false'}",
            "delete.topic.enable=true",
            f"offsets.topic.replication.factor={replicas}",
            "offsets.topic.num.partitions=8",
            f"transaction.state.log.replication.factor={replicas}",
            f"transaction.state.log.min.isr={in_sync}",
            "transaction.state.log.num.partitions=4",
            f"share.coordinator.state.topic.replication.factor={replicas}",
            f"share.coordinator.state.topic.min.isr={in_sync}",
            # a node that stops answering is fenced (and leaves every ISR) after 6 s, a follower that
            # stops fetching leaves its ISR after 10 s: writes with acks=all wait no longer than that
            "broker.heartbeat.interval.ms=1000",
            "broker.session.timeout.ms=6000",
            "replica.lag.time.max.ms=10000",
            "unclean.leader.election.enable=false",
            "group.initial.rebalance.delay.ms=0",
            "num.network.threads=2",
            "num.io.threads=4",
            "background.threads=4",
            "num.recovery.threads.per.data.dir=1",
            "log.segment.bytes=16777216",
            "log.retention.hours=24",
            "log.retention.check.interval.ms=60000",
            # the cleaner's dedupe buffer comes from the heap (Kafka's default 128 MiB is most of a
            # small heap); 16 MiB maps about 700,000 keys a cleaning
            "log.cleaner.dedupe.buffer.size=16777216",
            *(f"{k}={v}" for k, v in self.extra_properties.items()),  # the later of two equal keys wins
        ]
        return "\n".join(lines) + "\n"

    def _listener_properties(self) -> list[str]:
        name = self.security_protocol  # the client listener is named for its protocol
        tls = self.tls.server_properties(self.keystore_file) if self.tls is not None else []
        lines = [
            f"listeners={name}://{_HOST}:{self.port},CONTROLLER://{_HOST}:{self.controller_port}",
            f"advertised.listeners={name}://{_HOST}:{self.port}",
            f"listener.security.protocol.map={name}:{name},CONTROLLER:{'PLAINTEXT' if self.sasl is None else 'SASL_PLAINTEXT'}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={name}",
            *tls,
        ]
        if self.sasl is None:
            return lines
        pw = self.sasl.admin_password.reveal()
        # clients: SCRAM-SHA-512 (credentials in the metadata log, added when formatting);
        # broker -> controller: SASL/PLAIN with the admin user (SCRAM cannot authenticate the
        # controller listener: its credentials live in the log the controller serves)
        return lines + [
            f"sasl.enabled.mechanisms={SASL_MECHANISM}",
            f"sasl.mechanism.inter.broker.protocol={SASL_MECHANISM}",
            "sasl.mechanism.controller.protocol=PLAIN",
            f"listener.name.{name.lower()}.sasl.enabled.mechanisms={SASL_MECHANISM}",
            f"listener.name.{name.lower()}.{SASL_MECHANISM.lower()}.sasl.jaas.config="
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="{pw}";',
            "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
            "listener.name.controller.plain.sasl.jaas.config="
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="{pw}" '
            f'user_admin="{pw}";',
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin",
            "allow.everyone.if.no.acl.found=false",
        ]

    def client_config(self, user: str = "admin") -> dict[str, str]:
        """librdkafka settings to reach this broker (as ``user`` when it requires SASL)."""
        cfg = {"bootstrap.servers": self.bootstrap}
        if self.sasl is not None:
            cfg.update(self.sasl.client_config(user))
        if self.tls is not None:
            cfg.update(self.tls.client_config())
        cfg["security.protocol"] = self.security_protocol
        return cfg

    def grant(
        self,
        user: str,
        *,
        topic_prefixes: Sequence[str] = (),
        group_prefixes: Sequence[str] = (),
        operations: Sequence[str] = ("ALL",),
    ) -> None:
        """Allow ``user`` the ACL ``operations`` (e.g. ``READ``, ``WRITE``, ``DESCRIBE``,
        ``CREATE``, ``ALL``) on every topic and consumer group whose name starts with one of the
        prefixes; done as ``admin`` through the broker (it must be running with ``sasl``)."""
        from confluent_kafka.admin import (
            AclBinding,
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

        if self.sasl is None:
            raise BrokerError("grant() needs a broker started with sasl=SaslUsers(...): without SASL there are no ACLs")
        if user not in self.sasl.users:
            raise ValueError(f"unknown user {user!r}; the broker's users are {sorted(self.sasl.users)}")
        bindings = [
            AclBinding(rtype, prefix, ResourcePatternType.PREFIXED, f"User:{user}", "*",
                       AclOperation[op.upper()], AclPermissionType.ALLOW)
            for rtype, prefixes in ((ResourceType.TOPIC, topic_prefixes), (ResourceType.GROUP, group_prefixes))
            for prefix in prefixes
            for op in operations
        ]
        admin = AdminClient({**self.client_config(), "logger": _PROBE_LOGGER})
        for binding, fut in admin.create_acls(bindings, request_timeout=30).items():
            try:
                fut.result()
            except Exception as e:
                raise BrokerError(f"creating the ACL {binding} failed: {e}") from None
        # the broker applies new ACLs when it applies the metadata record: return only once it
        # describes them, so a client started next is already allowed
        deadline = time.monotonic() + 30
        for b in bindings:
            filt = AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host,
                                    b.operation, b.permission_type)
            while not admin.describe_acls(filt, request_timeout=10).result():
                if time.monotonic() > deadline:
                    raise BrokerError(f"the ACL {b} was created but the broker does not show it after 30 s")
                time.sleep(0.1)

    # -- process state -----------------------------------------------------------------------

    def _read_pid(self) -> int | None:
        """Pid from the pid file if that process is alive and is this broker; else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if not _pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return pid  # no /proc: trust the pid file
        if b"kafka.Kafka" in cmdline and str(self.properties_file).encode() in cmdline:
            return pid
        return None  # pid reused by another process

    def _running_ports(self) -> tuple[int, int] | None:
        """(port, controller_port) in the data dir's ``server.properties`` (those of the broker
        that runs from it), or None when the file does not say."""
        try:
            text = self.properties_file.read_text()
        except OSError:
            return None
        found = re.search(r"^listeners=\w+://[^:,]+:(\d+),CONTROLLER://[^:,]+:(\d+)\s*$", text, re.MULTILINE)
        return (int(found.group(1)), int(found.group(2))) if found else None

    def _refuse_other_ports(self, pid: int) -> None:
        """A broker runs from this data dir: refuse to start it on other ports than its own (the
        wait for an answer there would end by stopping it)."""
        ports = self._running_ports()
        if ports is None or ports == (self.port, self.controller_port):
            return
        raise BrokerError(
            f"a broker (pid {pid}) already runs on {_HOST}:{ports[0]} (controller port {ports[1]}) from "
            f"{self.data_dir}, not on the ports asked for ({self.port}, {self.controller_port}); use it "
            f"(--port {ports[0]} --controller-port {ports[1]}), stop it first (streamxai broker stop), or give "
            "another --data-dir"
        )

    def _answers(self, timeout: float = 2.0, port: int | None = None) -> bool:
        """True when a metadata request to ``bootstrap`` (or ``port``) returns at least one broker."""
        port = self.port if port is None else port
        try:
            with socket.create_connection((_HOST, port), timeout=min(timeout, 1.0)):
                pass
        except OSError:
            return False
        from confluent_kafka.admin import AdminClient

        config = {**self.client_config(), "bootstrap.servers": f"{_HOST}:{port}"}
        admin = AdminClient({**config, "logger": _PROBE_LOGGER, "socket.timeout.ms": 2000})
        try:
            md = admin.list_topics(timeout=timeout)
        except Exception:  # KafkaException: not (yet) answering
            return False
        if self._size > 1:  # a node of a cluster serves once the controllers have let it in
            return self._node_id in md.brokers
        return bool(md.brokers)

    def status(self) -> BrokerStatus:
        """Whether the broker runs and answers; never starts or stops anything. A broker running
        from this data dir on other ports is reported where it runs; a cluster's status
        (:class:`~streamxai.local.cluster.ClusterStatus`) holds each node's."""
        if self.nodes:
            from .cluster import ClusterStatus

            return ClusterStatus(tuple(n.status() for n in self.nodes))  # type: ignore[return-value]
        pid = self._read_pid()
        port = self.port
        if pid is not None:
            port = (self._running_ports() or (port,))[0]
        ready = pid is not None and self._answers(port=port)
        return BrokerStatus(pid is not None, ready, pid, f"{_HOST}:{port}", self.data_dir, self.log_file)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise start/stop of the same data_dir across processes."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # -- start -------------------------------------------------------------------------------

    def _java(self) -> str:
        java = shutil.which("java")
        if java is None:
            raise BrokerError(
                "java is not on PATH; the Kafka broker needs a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)"
            )
        return java

    def _jvm_cmd(self, java: str, main: str, *args: str) -> list[str]:
        props = [
            f"-Dlog4j2.configurationFile={_FILES / 'log4j2.properties'}",
            f"-Dstreamxai.broker.log={self.log_file}",
        ]
        cp = str(self.libs_dir / "*")
        return [java, f"-Xmx{self.heap}", *_JVM_FLAGS, *props, "-cp", cp, main, *args]

    def _format_storage(self, java: str, cluster_id: str | None = None) -> None:
        """Format ``log_dir`` with ``cluster_id`` (default a fresh one) unless it is already formatted."""
        if (self.log_dir / "meta.properties").is_file():
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        cid = cluster_id or random_cluster_id()
        cmd = self._jvm_cmd(java, "kafka.tools.StorageTool", "format", "-t", cid)
        cmd += ["-c", str(self.properties_file)]
        if self.sasl is not None:  # SCRAM credentials live in the metadata log from the start
            for name, pw in {"admin": self.sasl.admin_password, **self.sasl.users}.items():
                cmd += ["--add-scram", f"{SASL_MECHANISM}=[name={name},password={pw.reveal()}]"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            out = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise BrokerError(
                f"formatting Kafka storage in {self.log_dir} failed (exit {proc.returncode}):\n"
                f"{out}\nIf the directory holds data from another Kafka, delete {self.data_dir}"
            )

    def start(self, timeout: float = 90.0) -> BrokerStatus:
        """Start the broker and wait until it answers; return at once if it already does.

        Resolves the jars first if needed (not counted in ``timeout``). Raises ``BrokerError``
        when Java is missing, a port is taken, or the broker does not answer in time.
        """
        self.ensure_jars()
        java = self._java()
        if self.nodes:
            from .cluster import start_cluster

            return start_cluster(self, java, timeout)  # type: ignore[return-value]
        with self._locked():
            pid = self._launch_unless_running(java)
            return self._await_answer(pid, time.monotonic() + timeout)

    def _launch_unless_running(self, java: str, cluster_id: str | None = None) -> int:
        """The pid of the JVM running from ``data_dir``, launched now unless one runs (call it under
        :meth:`_locked`)."""
        pid = self._read_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            for name, port in (("port", self.port), ("controller_port", self.controller_port)):
                claim_port(port, name, _HOST)  # waits out a TIME-WAIT left by a self-connected client
            self._write_properties()
            self._format_storage(java, cluster_id)
            pid = self._launch(java)
        else:
            self._refuse_other_ports(pid)
        return pid

    def _await_answer(self, pid: int, deadline: float) -> BrokerStatus:
        """Wait until the JVM ``pid`` answers (in a cluster: lists itself among the brokers); stop
        it and raise ``BrokerError`` when it exits or ``deadline`` passes first."""
        t0 = time.monotonic()
        while True:
            if self._answers(timeout=2.0):
                return BrokerStatus(True, True, pid, f"{_HOST}:{self.port}", self.data_dir, self.log_file)
            exited = self._proc is not None and self._proc.poll() is not None
            if exited or not _pid_alive(pid):
                self._forget(pid)
                raise BrokerError(
                    f"the Kafka broker (pid {pid}) exited during start-up; "
                    f"log {self.log_file} ends with:\n"
                    f"{_tail(self.log_file, start=self._log_mark)}{self._hint()}"
                )
            if time.monotonic() > deadline:
                tail = _tail(self.log_file, start=self._log_mark)
                self._signal(pid, signal.SIGTERM)
                self._reap(pid, 15.0)
                raise BrokerError(
                    f"the Kafka broker (pid {pid}) did not answer on {_HOST}:{self.port} within "
                    f"{time.monotonic() - t0:.0f} s and was stopped; log {self.log_file} ends with:\n{tail}"
                    f"{self._hint()}"
                )
            time.sleep(0.25)

    def _write_properties(self) -> None:
        """Write server.properties readable by its owner only (it may hold the admin password), and
        with ``tls`` the keystore beside it (it holds the broker's key)."""
        if self.tls is not None:
            self._write_private(self.keystore_file, self.tls.keystore_text())
        self._write_private(self.properties_file, self.server_properties())

    @staticmethod
    def _write_private(path: Path, text: str) -> None:
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        tmp.replace(path)

    def _launch(self, java: str) -> int:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        cmd = self._jvm_cmd(java, "kafka.Kafka", str(self.properties_file))
        with open(self.log_file, "ab") as log:
            self._log_mark = log.tell()
            log.write(f"--- streamxai: starting Kafka: {' '.join(cmd)}\n".encode())
            log.flush()
            linux = sys.platform.startswith("linux")
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=True,
                preexec_fn=_die_with_parent if (self.die_with_parent and linux) else None,
            )
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(f"{self._proc.pid}\n")
        tmp.replace(self.pid_file)
        return self._proc.pid

    def _hint(self) -> str:
        text = _tail(self.log_file, lines=200, start=self._log_mark)
        if "UnsupportedClassVersionError" in text:
            return "\nhint: Kafka 4.x needs Java 17 or newer (java -version)"
        if "Address already in use" in text:
            return "\nhint: a port is taken; choose other ports (--port, --controller-port)"
        if "meta.properties" in text or "cluster.id" in text.lower():
            return f"\nhint: the storage in {self.log_dir} may belong to another cluster; delete it"
        return ""

    # -- stop --------------------------------------------------------------------------------

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            try:
                self._proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while _pid_alive(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _forget(self, pid: int) -> None:
        if self._proc is not None and self._proc.pid == pid:
            self._proc.wait()
            self._proc = None
        self.pid_file.unlink(missing_ok=True)

    @staticmethod
    def _signal(pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    def _reap(self, pid: int, timeout: float) -> None:
        """Wait ``timeout`` seconds for ``pid`` to exit, SIGKILL it if it has not, and forget it."""
        if not self._wait_exit(pid, timeout):
            self._signal(pid, signal.SIGKILL)
            self._wait_exit(pid, 10.0)
        self._forget(pid)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds. True if one was
        running. A cluster's nodes are stopped at once (one by one, the last would wait for a
        quorum that is gone).
        """
        if self.nodes:
            from .cluster import stop_cluster

            return stop_cluster(self.nodes, timeout)
        return self._stop(signal.SIGTERM, timeout)

    def _stop(self, sig: int, timeout: float) -> bool:
        """Send ``sig`` to the JVM running from ``data_dir`` and reap it; True if one was running."""
        with self._locked():
            pid = self._read_pid()
            if pid is None:
                self.pid_file.unlink(missing_ok=True)
                if self._proc is not None:  # reap a child that died on its own
                    self._proc.wait()
                    self._proc = None
                return False
            self._signal(pid, sig)
            self._reap(pid, timeout)
            return True

    def stop_node(self, node_id: int, *, kill: bool = False, timeout: float = 30.0) -> bool:
        """Stop node ``node_id`` (1..nodes, Kafka's broker id) of a cluster: SIGTERM, or with
        ``kill`` SIGKILL as in a crash; the others go on serving. True if it was running."""
        from .cluster import stop_node

        return stop_node(self, node_id, kill, timeout)

    def start_node(self, node_id: int, timeout: float = 90.0) -> BrokerStatus:
        """Start node ``node_id`` of a cluster again, alone, and wait until it serves."""
        from .cluster import start_node

        self.ensure_jars()
        return start_node(self, node_id, self._java(), timeout)


    def wait_in_sync(self, timeout: float = 60.0) -> None:
        """Wait until every replica of every partition of a cluster is in sync (a node started
        again has caught up)."""
        from .cluster import wait_in_sync

        wait_in_sync(self, timeout)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The broker tool's arguments, on ``parser`` (this module's command line and ``streamxai broker``)."""
    parser.add_argument("action", choices=["start", "stop", "status"], help="what to do with the broker")
    parser.add_argument("--port", type=port(), default=9092, help="client listener (default 9092)")
    parser.add_argument("--controller-port", type=port(), default=9093, help="KRaft controller listener (default 9093)")
    parser.add_argument("--data-dir", default=None, help="broker directory (default .streamxai/kafka in the repo)")
    parser.add_argument("--log-file", default=None, help="default <data-dir>/broker.log")
    parser.add_argument("--heap", default="512m", help="JVM -Xmx (default 512m)")
    parser.add_argument("--libs-dir", default=None,
                        help="the Kafka jars, resolved there with Maven when missing (default: deploy/target/kafka-libs "
                             "in a source checkout, else ~/.cache/streamxai/kafka-libs) [env: STREAMXAI_KAFKA_LIBS]")
    parser.add_argument("--timeout", type=positive(), default=None, help="seconds to wait (default: 90 for start, 30 for stop)")
    parser.add_argument("--sasl-users", metavar="FILE", default=None,
                        help='require SASL (SCRAM-SHA-512) and ACLs; FILE holds name = "password" lines (TOML), '
                             "one of them admin, the super user; keep it private")
    parser.add_argument("--tls-dir", metavar="DIR", default=None,
                        help="serve clients over TLS and require a client certificate: DIR holds ca.pem (the CA that "
                             "signs the broker's and the clients' certificates), broker.pem (for 127.0.0.1) and "
                             "broker.key (unencrypted PKCS#8)")
    parser.add_argument("--nodes", type=at_least(1), default=None,
                        help="a cluster of N nodes (each a broker and a KRaft controller) on ports --port, "
                             "--controller-port, then +2 for each next node (default 1; stop and status find the "
                             "nodes in --data-dir)")
    parser.add_argument("--node", type=at_least(1), default=None, metavar="ID",
                        help="start, stop or show node ID (1..N) of a cluster alone")
    parser.add_argument("--kill", action="store_true", help="with stop --node: SIGKILL the node, as a crash")
    return parser


DESCRIPTION = "Control the local Kafka broker (KRaft), or a local cluster of several, for local runs and tests."


def run(args: argparse.Namespace, prog: str = "streamxai") -> int:
    """Carry out parsed :func:`add_arguments` ``args``; returns the exit code. An error is one line
    on stderr, ``<prog>: error: ...``, as argparse's and the other subcommands' are."""
    try:
        sasl = SaslUsers.from_file(args.sasl_users) if args.sasl_users else None
        tls = BrokerTls.from_dir(args.tls_dir) if args.tls_dir else None
        nodes = args.nodes or max(1, nodes_in(data_dir_of(args.data_dir)))  # a cluster's data dir tells its nodes
        broker = LocalBroker(args.port, args.controller_port, args.data_dir, args.log_file, heap=args.heap, sasl=sasl,
                             tls=tls,
                             libs_dir=args.libs_dir or os.environ.get("STREAMXAI_KAFKA_LIBS") or None, nodes=nodes)
        if args.node is not None or args.kill:
            return _run_node(broker, args)
        if args.action == "start":
            t0 = time.monotonic()
            st = broker.start(timeout=args.timeout or 90.0)
            print(f"{st} ({time.monotonic() - t0:.1f} s)")
        elif args.action == "stop":
            stopped = broker.stop(timeout=args.timeout or 30.0)
            print(f"broker stopped (data dir {broker.data_dir})" if stopped else "broker was not running")
        else:
            st = broker.status()
            print(st)
            return exit_codes.OK if st.ready else exit_codes.NOT_READY
    except (BrokerError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exit_codes.ERROR
    return exit_codes.OK


def _run_node(broker: LocalBroker, args: argparse.Namespace) -> int:
    """``--node ID``: the action on one node of a cluster."""
    if args.node is None:
        raise ValueError("--kill needs --node ID: it stops one node of a cluster")
    if args.kill and args.action != "stop":
        raise ValueError("--kill is for stop")
    if args.action == "start":
        print(broker.start_node(args.node, timeout=args.timeout or 90.0))
    elif args.action == "stop":
        stopped = broker.stop_node(args.node, kill=args.kill, timeout=args.timeout or 30.0)
        print(f"node {args.node} {'killed' if args.kill else 'stopped'}" if stopped else f"node {args.node} was not running")
    else:
        from .cluster import node_of

        st = node_of(broker, args.node).status()
        print(st)
        return exit_codes.OK if st.ready else exit_codes.NOT_READY
    return exit_codes.OK


def data_dir_of(given: str | None) -> Path:
    """The broker directory ``--data-dir`` names (default :func:`_default_data_dir`)."""
    return Path(given).absolute() if given is not None else _default_data_dir()


def main(argv: Sequence[str] | None = None, prog: str = "python -m streamxai.local.broker") -> int:
    """``python -m streamxai.local.broker start|stop|status``; returns the exit code
    (:mod:`streamxai.exit_codes`).
    """
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=exit_codes.HELP)
    return run(add_arguments(parser).parse_args(argv), prog)


if __name__ == "__main__":
    sys.exit(main())
