"""Test certificates made with ``openssl``: a CA, a broker certificate for 127.0.0.1 (not localhost), a
client certificate with a password-protected key, the same expired since 2020, and an untrusted second
CA with a client certificate of its own."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TlsCerts", "make_certs"]

_CA_CONF = """\
[ca]
default_ca = test_ca
[test_ca]
dir = {dir}
database = {dir}/index.txt
new_certs_dir = {dir}/issued
serial = {dir}/serial
certificate = {dir}/ca.pem
private_key = {dir}/ca.key
default_md = sha256
policy = anything
copy_extensions = copy
unique_subject = no
[anything]
commonName = supplied
"""


@dataclass(frozen=True)
class TlsCerts:
    """Paths of the files :func:`make_certs` wrote; ``client_key`` and ``expired_key`` open with
    ``key_password``."""

    dir: Path
    ca: Path
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path
    expired_cert: Path
    expired_key: Path
    other_ca: Path
    stranger_cert: Path
    stranger_key: Path
    key_password: str


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30",
             "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=d)


def _leaf(d: Path, name: str, *, san: str | None = None, password: str = "",
          dates: tuple[str, str] | None = None) -> None:
    """``name.pem`` signed by the ``ca.pem`` beside it, its PKCS#8 key ``name.key`` (encrypted with ``password``)."""
    ext = ["-addext", "extendedKeyUsage=serverAuth,clientAuth"]
    if san:
        ext += ["-addext", f"subjectAltName={san}"]
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
             "-keyout", f"{name}.plain.key", "-out", f"{name}.csr", *ext, cwd=d)
    valid = ["-startdate", dates[0], "-enddate", dates[1]] if dates else ["-days", "30"]
    _openssl("ca", "-batch", "-notext", "-config", "ca.conf", "-in", f"{name}.csr", "-out", f"{name}.pem", *valid,
             cwd=d)
    crypt = ["-v2", "aes-256-cbc", "-passout", f"pass:{password}"] if password else ["-nocrypt"]
    _openssl("pkcs8", "-topk8", "-in", f"{name}.plain.key", "-out", f"{name}.key", *crypt, cwd=d)
    (d / f"{name}.plain.key").unlink()


def make_certs(d: Path) -> TlsCerts:
    """Write the CA, broker, client, expired-client, other-CA and stranger files into ``d`` (a new directory)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "issued").mkdir()
    (d / "index.txt").write_text("")
    (d / "serial").write_text("1000\n")
    (d / "ca.conf").write_text(_CA_CONF.format(dir=d))
    _ca(d, "ca")
    password = secrets.token_urlsafe(12)
    _leaf(d, "broker", san="IP:127.0.0.1")
    _leaf(d, "client", password=password)
    _leaf(d, "expired", password=password, dates=("20200101000000Z", "20200102000000Z"))
    other = d / "other"
    other.mkdir()
    (other / "issued").mkdir()
    (other / "index.txt").write_text("")
    (other / "serial").write_text("1000\n")
    (other / "ca.conf").write_text(_CA_CONF.format(dir=other))
    _ca(other, "ca")
    _leaf(other, "stranger", password=password)
    return TlsCerts(d, d / "ca.pem", d / "broker.pem", d / "broker.key", d / "client.pem", d / "client.key",
                    d / "expired.pem", d / "expired.key", other / "ca.pem", other / "stranger.pem",
                    other / "stranger.key", password)
