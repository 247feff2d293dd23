"""mixprec's exceptions: one class per runtime status code, and CompileError.

Every class derives from mixprec.Error; those about the caller's arguments
(InvalidArgumentError and the shape, dtype and name mismatches) also derive
from ValueError. `notes` holds the notes the compiler attached to an error
(one line each, as the CLI prints them after "mixprec: note: ").
"""


class Error(Exception):
    """Base class of every mixprec error."""

    #: The runtime status code (mixprec_status_code_t), None for CompileError.
    code = None
    #: The compiler's notes on the error, one line each.
    notes = ()


class CompileError(Error):
    """The compiler refused the model: the one line `mixprec` prints after
    "mixprec: error: " (naming the file, node or tensor at fault)."""


class InvalidArgumentError(Error, ValueError):
    """INVALID_ARGUMENT: a bad argument (an input of the wrong dtype or shape,
    a missing or unknown input, bad options)."""

    code = 1


class InvalidModuleError(Error):
    """INVALID_MODULE: a truncated, corrupted or inconsistent .mpk."""

    code = 2


class UnsupportedVersionError(Error):
    """UNSUPPORTED_VERSION: a module or checkpoint of another format version."""

    code = 3


class SideFileError(Error):
    """SIDE_FILE_ERROR: a module's .weights file is missing or differs."""

    code = 4


class ShapeMismatchError(InvalidArgumentError):
    """SHAPE_MISMATCH: data of the wrong shape or byte size."""

    code = 5


class DtypeMismatchError(InvalidArgumentError):
    """DTYPE_MISMATCH: data of a dtype the input does not take."""

    code = 6


class NotFoundError(InvalidArgumentError, KeyError):
    """NOT_FOUND: no input, output or state of that name."""

    code = 7

    def __str__(self):  # KeyError would quote the message
        return Exception.__str__(self)


class NoDeviceError(Error):
    """NO_DEVICE: the backend asked for has no device (no GPU)."""

    code = 8


class UnimplementedError(Error, NotImplementedError):
    """UNIMPLEMENTED: a feature this runtime does not have yet."""

    code = 9


class IoError(Error, OSError):
    """IO_ERROR: a file cannot be opened, read or written."""

    code = 10


class OutOfMemoryError(Error, MemoryError):
    """OUT_OF_MEMORY: an allocation failed."""

    code = 11


class FailedPreconditionError(Error):
    """FAILED_PRECONDITION: a call the object's state does not allow (the IR
    of a module loaded from .mpk, a module without CUDA code on CUDA)."""

    code = 12


class ExecutionError(Error):
    """EXECUTION_ERROR: a run failed on its data (a gather index out of range)."""

    code = 13


class InternalError(Error):
    """INTERNAL: a bug in mixprec."""

    code = 14


class TrainingError(Error):
    """mixprec.train stopped: the loss scale could not recover (the CLI's exit
    status 5). `notes` holds the diagnosis (the first op whose value was not
    finite); `result` the TrainResult of the steps run."""

    result = None


_BY_CODE = {cls.code: cls for cls in (
    InvalidArgumentError, InvalidModuleError, UnsupportedVersionError, SideFileError,
    ShapeMismatchError, DtypeMismatchError, NotFoundError, NoDeviceError, UnimplementedError,
    IoError, OutOfMemoryError, FailedPreconditionError, ExecutionError, InternalError)}


def error_class(code):
    """The class of a status code (-1: CompileError; unknown codes: Error)."""
    if code == -1:
        return CompileError
    return _BY_CODE.get(code, Error)
