"""TLS for the local broker: the PEM files of a directory (``streamxai broker start --tls-dir DIR``)
become an SSL client listener that requires a client certificate signed by the directory's CA,
so the local broker can stand in for a cluster with mutual TLS.

>>> tls = BrokerTls("/etc/kafka-tls/ca.pem", "/etc/kafka-tls/broker.pem", "/etc/kafka-tls/broker.key")
>>> tls.client_config()["ssl.ca.location"]
'/etc/kafka-tls/ca.pem'
>>> BrokerTls.from_dir("/nonexistent")
Traceback (most recent call last):
...
streamxai.kafka.config.BrokerError: --tls-dir /nonexistent lacks ca.pem, broker.pem, broker.key: ...
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..kafka.config import BrokerError

__all__ = ["BrokerTls", "TLS_FILES"]

#: the files of a TLS directory: the CA that signs the broker's and the clients' certificates, the
#: broker's certificate (its SAN names 127.0.0.1) and the broker's unencrypted PKCS#8 key
TLS_FILES = ("ca.pem", "broker.pem", "broker.key")


@dataclass(frozen=True)
class BrokerTls:
    """The broker's certificate and key, and the CA whose certificates it trusts (its clients' and
    its own: the broker connects to itself with its certificate)."""

    cafile: str
    certfile: str
    keyfile: str

    @classmethod
    def from_dir(cls, directory: str | os.PathLike[str]) -> BrokerTls:
        """The files :data:`TLS_FILES` in ``directory``; BrokerError naming what is missing or unusable."""
        d = Path(directory).absolute()  # the broker runs in its data directory
        missing = [n for n in TLS_FILES if not (d / n).is_file()]
        if missing:
            raise BrokerError(f"--tls-dir {d} lacks {', '.join(missing)}: it needs ca.pem (the CA), broker.pem (the "
                              "broker's certificate for 127.0.0.1, signed by the CA) and broker.key (its key)")
        key = (d / "broker.key").read_text(errors="replace")
        if "-----BEGIN PRIVATE KEY-----" not in key:
            raise BrokerError(f"{d / 'broker.key'} is not an unencrypted PKCS#8 key, the only kind the broker reads "
                              f"from PEM; convert it: openssl pkcs8 -topk8 -nocrypt -in KEY -out {d / 'broker.key'}")
        return cls(str(d / "ca.pem"), str(d / "broker.pem"), str(d / "broker.key"))

    def keystore_text(self) -> str:
        """The broker's PEM keystore: its key, then its certificate chain."""
        return Path(self.keyfile).read_text().rstrip("\n") + "\n" + Path(self.certfile).read_text()

    def server_properties(self, keystore: Path) -> list[str]:
        """``server.properties`` lines for every SSL listener, with ``keystore`` the file holding
        :meth:`keystore_text`."""
        return [
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={keystore}",
            "ssl.truststore.type=PEM",
            f"ssl.truststore.location={self.cafile}",
            "ssl.client.auth=required",
            "ssl.endpoint.identification.algorithm=https",
        ]

    def client_config(self) -> dict[str, str]:
        """librdkafka settings of a client that presents the broker's own certificate (the broker's
        readiness probe and its admin): the broker trusts it, and it verifies the broker's name."""
        return {"ssl.ca.location": self.cafile, "ssl.certificate.location": self.certfile,
                "ssl.key.location": self.keyfile, "ssl.endpoint.identification.algorithm": "https"}
