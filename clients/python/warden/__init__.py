"""warden: a stdlib-only client of `warden serve` (docs/server.md)."""
from .client import (  # noqa: F401
    APPLY_REFUSED, BUSY, CANCELLED, FAILED, FILE_REFUSED, FORBIDDEN, INVALID_PARAMS, NO_SANDBOX,
    NOT_AVAILABLE, ApplyRefused, Cancelled, Client, CommandError, CommandFailed,
    ConnectionClosed, Denied, FileRefused, Forbidden, NoSuchSandbox, NotAvailable, Paused,
    Result, RPCError, Sandbox, Timeout, WardenError,
)

__version__ = "0.1.0"
