"""The TLS files the settings name, loaded once at start-up as the Kafka client will load them,
so a file that holds no certificate, or a key its password does not open, is a one-line
:class:`~schemas.ConfigError` naming the settings (exit code 2), not the Kafka client's
``KafkaException`` traceback from the constructor of every command's first client.

>>> check_tls_files(cafile=__file__)
Traceback (most recent call last):
...
streamxai.schemas.errors.ConfigError: setting ssl_cafile='...tls_files.py' holds no certificate (...); give the CA bundle (PEM) that signed the brokers' certificates
"""

from __future__ import annotations

import ssl

from streamxai.schemas import ConfigError

__all__ = ["check_tls_files"]


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


def _reason(e: Exception) -> str:
    return str(getattr(e, "reason", None) or e)
