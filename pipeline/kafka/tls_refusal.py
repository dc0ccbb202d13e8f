"""A TLS handshake that the broker or the client refused, put in one line that names the setting
(and file) to change, from the reason the Kafka client gives (librdkafka's
``SSL handshake failed: error:...:SSL routines::<what>``)."""

from __future__ import annotations

import re

from ..settings import Settings

__all__ = ["handshake_failure"]


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
