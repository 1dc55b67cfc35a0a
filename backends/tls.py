"""TLS settings of a pool, as one `ssl.SSLContext` shared by the relay's client and the monitor's (health checks,
scrapes, discovery), so that both judge an endpoint's certificate the same way."""

from __future__ import annotations

import ssl

from specgate.config import UpstreamTlsConfig

__all__ = ["ssl_context", "tls_error"]


def ssl_context(tls: UpstreamTlsConfig) -> ssl.SSLContext:
    """Verifying (against `ca_file`, else the system's CAs), with the client certificate when there is one."""
    context = ssl.create_default_context(cafile=str(tls.ca_file) if tls.ca_file else None)
    if tls.cert_file is not None and tls.key_file is not None:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def tls_error(exc: BaseException) -> str:
    """The reason of a TLS failure ("CERTIFICATE_VERIFY_FAILED: Hostname mismatch"), not only its type."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"{exc.reason}: {exc.verify_message}" if exc.verify_message else str(exc.reason)
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc)
    return type(exc).__name__
