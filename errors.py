"""The exceptions cdnajit raises. Every stage may import this module; it imports nothing."""


class CdnajitError(Exception):
    """Base class of every error cdnajit raises on bad input."""


class TypeCheckError(CdnajitError, TypeError):
    """An op's operands or attributes do not fit its shape/dtype rule (raised by ir/ops)."""


class ParseError(CdnajitError, ValueError):
    """IR text that does not parse: carries line, column and the offending token."""

    def __init__(self, message, line=None, column=None, token=None):
        self.line, self.column, self.token = line, column, token
        where = f"{line}:{column}: " if line is not None else ""
        super().__init__(f"{where}{message}")


class VerifyError(CdnajitError, ValueError):
    """A module that breaks a structural or typing rule of the graph IR."""


class TracingError(CdnajitError):
    """Bad input found while tracing a user's function; names the user's file:line."""


class TracingTypeError(TracingError, TypeError):
    """A dtype or argument-kind problem while tracing."""


class TracingValueError(TracingError, ValueError):
    """A shape or value problem while tracing."""


class ConcretizationError(TracingTypeError):
    """Python control flow or a concrete value was asked of a traced (abstract) value."""


class ArraySizeError(CdnajitError, ValueError):
    """An array whose size in bytes overflows int64, the type kernels index memory with: no machine
    holds it. Names the op, the shape and the bytes (and, for traced code, the user's line)."""


class ArraySizeVerifyError(VerifyError, ArraySizeError):
    """A module with a value whose bytes overflow int64 (what the verifier raises for ArraySizeError)."""


class AllocationError(CdnajitError, MemoryError):
    """An array this machine cannot allocate when a program runs. Names the op, the shape, the bytes
    and, for traced code, the user's line that made the op."""


class LibraryStoreError(CdnajitError, OSError):
    """The folder of the libraries' prebuilt kernels cannot be written: names it and the variable
    that moves it."""
