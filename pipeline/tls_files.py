"""The TLS files the settings name, loaded once at start-up as the Kafka client will load them,
so a bad file, a wrong key password or an expired client certificate is a one-line
:class:`~schemas.ConfigError` naming the setting, not a client traceback.

>>> check_tls_files(cafile=__file__)
Traceback (most recent call last):
...
streamxai.schemas.errors.ConfigError: setting ssl_cafile='...tls_files.py' holds no certificate (...); give the CA bundle (PEM) that signed the brokers' certificates
"""

from __future__ import annotations

import ssl
import time

from streamxai.schemas import ConfigError

__all__ = ["check_tls_files", "check_validity"]


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
