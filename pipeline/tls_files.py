"""The TLS files the settings name, loaded once at start-up as the Kafka client will load them,
so a file that holds no certificate, or a key its password does not open, is a one-line
:class:`~schemas.ConfigError` naming the settings (exit code 2), not the Kafka client's
``KafkaException`` traceback from the constructor of every command's first client; and a TLS
handshake the broker or the client refuses, put in one line that names the file to change
(:func:`handshake_failure`).

>>> check_tls_files(cafile=__file__)
Traceback (most recent call last):
...
streamxai.schemas.errors.ConfigError: setting ssl_cafile='...tls_files.py' holds no certificate (...); give the CA bundle (PEM) that signed the brokers' certificates
"""

from __future__ import annotations

import re
import ssl
import time
from typing import TYPE_CHECKING

from streamxai.schemas import ConfigError

if TYPE_CHECKING:
    from .settings import Settings

__all__ = ["check_tls_files", "check_validity", "handshake_failure"]


def check_tls_files(cafile: str = "", certfile: str = "", keyfile: str = "", key_password: str = "") -> None:
    """Load the CA bundle and the client certificate with its key; ConfigError if one does not
    load. The key's password is never part of the message."""
    if cafile:
        try:
            ssl.create_default_context(cafile=cafile)
        except (ssl.SSLError, ValueError) as e:
            raise ConfigError(f"setting ssl_cafile={cafile!r} holds no certificate ({_reason(e)}); give the CA bundle "
                              "(PEM) that signed the brokers' certificates") from None
    if certfile and keyfile:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            # a callable: without one OpenSSL would ask for the password on the terminal
            ctx.load_cert_chain(certfile, keyfile, password=lambda: key_password)
        except (ssl.SSLError, ValueError) as e:
            raise ConfigError(f"setting ssl_certfile={certfile!r} with ssl_keyfile={keyfile!r} does not load "
                              f"({_reason(e)}): check that the key belongs to the certificate and that "
                              "ssl_key_password opens it") from None
    if certfile:
        check_validity(certfile)


def check_validity(certfile: str, now: float | None = None) -> None:
    """ConfigError if the client certificate in ``certfile`` has expired or is not valid yet: a
    broker refuses it with a TLS alert that does not say why (a Java broker sends "certificate
    unknown"), so the dates are checked here, where the file can be named."""
    # CPython's own reader of a PEM certificate's fields (its test suite's); without it, the
    # broker's refusal is all there is
    decode = getattr(getattr(ssl, "_ssl", None), "_test_decode_cert", None)
    if decode is None:
        return
    try:
        info = decode(certfile)
        not_before, not_after = (ssl.cert_time_to_seconds(info[k]) for k in ("notBefore", "notAfter"))
    except (ssl.SSLError, OSError, ValueError, KeyError):
        return  # not a certificate: loading it reports that
    now = time.time() if now is None else now
    if now > not_after:
        raise ConfigError(f"setting ssl_certfile={certfile!r} holds a certificate that expired on {info['notAfter']}; "
                          "brokers refuse it: give a current one, signed by a CA the brokers trust")
    if now < not_before:
        raise ConfigError(f"setting ssl_certfile={certfile!r} holds a certificate valid only from {info['notBefore']}; "
                          "check this host's clock, or give a certificate valid now")


def _reason(e: Exception) -> str:
    return str(getattr(e, "reason", None) or e)


def handshake_failure(s: Settings, reason: str) -> str:
    """One line on a TLS handshake that failed with the Kafka client's ``reason``: which side
    refused, the setting (and file) to change, and how.

    >>> from streamxai.settings import Settings
    >>> s = Settings(security_protocol="SSL", ssl_cafile="ca.pem", ssl_certfile="me.pem")
    >>> print(handshake_failure(s, "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: "
    ...       "error:0A000415:SSL routines::sslv3 alert certificate expired: SSL alert number 45"))
    the broker at 127.0.0.1:9092 refused the client certificate ssl_certfile='me.pem': certificate expired (TLS alert 45); give a current certificate signed by a CA the broker trusts (the broker's log says which check failed)
    """
    # librdkafka's reason: "<broker>: SSL handshake failed: error:<code>:SSL routines::<what>[: <more>]"
    found = re.search(r"SSL routines::([^:(]+)", reason)
    what = (found.group(1) if found else reason).strip()
    alert = re.search(r"alert (?:number )?(\d+)", reason)
    where = f"the broker at {s.bootstrap_servers}"
    if "alert" in what:  # the broker sent the alert: it refused what the client presented
        what = re.sub(r"^(sslv3|tlsv1[0-9]*|ssl/tls) alert ", "", what)
        code = f" (TLS alert {alert.group(1)})" if alert else ""
        if not s.ssl_certfile:
            return (f"{where} refused the TLS handshake: {what}{code}; it asks for a client certificate: set "
                    "ssl_certfile and ssl_keyfile (and ssl_key_password if the key has one)")
        return (f"{where} refused the client certificate ssl_certfile={s.ssl_certfile!r}: {what}{code}; give a "
                "current certificate signed by a CA the broker trusts (the broker's log says which check failed)")
    if "verify failed" in what:
        ca = f"ssl_cafile={s.ssl_cafile!r}" if s.ssl_cafile else "the system's CA bundle (ssl_cafile is not set)"
        return (f"the certificate of {where} does not verify against {ca} ({what}: signed by another CA, "
                "expired, or not issued for the host in bootstrap_servers); set ssl_cafile to the CA bundle that "
                "signed the brokers' certificates")
    return (f"the TLS handshake with {where} failed ({what}); check security_protocol, ssl_cafile, ssl_certfile "
            "and ssl_keyfile")
