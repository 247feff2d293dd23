"""Typed stubs of the mixprec package."""

import os
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy

from ._errors import (CompileError as CompileError, DtypeMismatchError as DtypeMismatchError,
                      Error as Error, ExecutionError as ExecutionError,
                      FailedPreconditionError as FailedPreconditionError,
                      InternalError as InternalError,
                      InvalidArgumentError as InvalidArgumentError,
                      InvalidModuleError as InvalidModuleError, IoError as IoError,
                      NoDeviceError as NoDeviceError, NotFoundError as NotFoundError,
                      OutOfMemoryError as OutOfMemoryError,
                      ShapeMismatchError as ShapeMismatchError, SideFileError as SideFileError,
                      UnimplementedError as UnimplementedError,
                      UnsupportedVersionError as UnsupportedVersionError,
                      TrainingError as TrainingError)
from typing import Callable

__version__: str

_Path = Union[str, os.PathLike[str]]
_Model = Union[_Path, Any]  # a path or an onnx.ModelProto
_Array = Any  # a numpy array or any object with __dlpack__

class DeviceArray:
    shape: tuple
    dtype: str
    @property
    def device(self) -> str: ...
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> tuple: ...

class TensorInfo(tuple):
    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...

class _StateView:
    def keys(self) -> list[str]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...
    def __getitem__(self, name: str) -> numpy.ndarray: ...
    def __setitem__(self, name: str, value: _Array) -> None: ...
    def items(self) -> list[tuple[str, numpy.ndarray]]: ...
    def reset(self) -> None: ...

class Module:
    @property
    def name(self) -> str: ...
    @property
    def inputs(self) -> list[TensorInfo]: ...
    @property
    def outputs(self) -> list[TensorInfo]: ...
    @property
    def states(self) -> list[TensorInfo]: ...
    @property
    def state(self) -> _StateView: ...
    @property
    def backend(self) -> str: ...
    @property
    def backend_reason(self) -> str: ...
    def run(self, *args: _Array, device_outputs: bool = False,
            **inputs: _Array) -> dict[str, Any]: ...
    def __call__(self, *args: _Array, **inputs: _Array) -> dict[str, numpy.ndarray]: ...
    def ir(self, elide_weights: bool = True) -> str: ...
    def save(self, path: _Path) -> None: ...
    def save_checkpoint(self, path: _Path, user_blob: bytes = b"") -> None: ...
    def load_checkpoint(self, path: _Path) -> bytes: ...

class _Document:
    json: dict[str, Any]
    text: str
    def __getitem__(self, key: str) -> Any: ...
    def to_pandas(self) -> Any: ...

class Report(_Document):
    @property
    def ops(self) -> list[dict[str, Any]]: ...
    @property
    def summary(self) -> dict[str, Any]: ...

class Validation(_Document):
    @property
    def outputs(self) -> list[dict[str, Any]]: ...
    @property
    def ops(self) -> list[dict[str, Any]]: ...
    @property
    def first_nonfinite(self) -> Optional[dict[str, Any]]: ...
    @property
    def status(self) -> str: ...
    @property
    def exit_status(self) -> int: ...
    @property
    def ok(self) -> bool: ...

def compile(model: _Model, precision: Optional[str] = None,
            shapes: Optional[Mapping[str, Union[int, Sequence[int]]]] = None,
            calibrate: Optional[Mapping[str, _Array]] = None,
            policy: Union[_Path, Mapping[str, Any], None] = None,
            keep_fp32: Union[str, Sequence[str], None] = None,
            force: Union[str, Sequence[str], None] = None, backend: str = "auto",
            **options: Any) -> Module: ...
def load(path: _Path, backend: str = "auto") -> Module: ...
def report(model: _Model, precision: Optional[str] = None,
           shapes: Optional[Mapping[str, Union[int, Sequence[int]]]] = None,
           calibrate: Optional[Mapping[str, _Array]] = None,
           policy: Union[_Path, Mapping[str, Any], None] = None,
           keep_fp32: Union[str, Sequence[str], None] = None,
           force: Union[str, Sequence[str], None] = None, graph: bool = False,
           **options: Any) -> Report: ...
def validate(model: _Model, precision: Optional[str] = None,
             inputs: Optional[Mapping[str, _Array]] = None, seed: int = 0,
             tolerance: Optional[float] = None,
             shapes: Optional[Mapping[str, Union[int, Sequence[int]]]] = None,
             calibrate: Optional[Mapping[str, _Array]] = None,
             policy: Union[_Path, Mapping[str, Any], None] = None,
             keep_fp32: Union[str, Sequence[str], None] = None,
             force: Union[str, Sequence[str], None] = None, **options: Any) -> Validation: ...
class TrainResult(dict):
    steps: int
    skipped: int
    last_loss: float
    test_loss: float
    test_accuracy: float
    compare_last_loss: float
    status: int
    message: str
    notes: list
    verdict: str
    metrics: Optional[dict]

def train(model: _Model, data: Mapping[str, _Array], labels: Optional[_Array] = None,
          test_data: Optional[Mapping[str, _Array]] = None,
          test_labels: Optional[_Array] = None, precision: Optional[str] = None,
          shapes: Optional[Mapping[str, Union[int, Sequence[int]]]] = None,
          policy: Union[_Path, Mapping[str, Any], None] = None,
          keep_fp32: Union[str, Sequence[str], None] = None,
          force: Union[str, Sequence[str], None] = None,
          callback: Optional[Callable[[dict], Optional[bool]]] = None, verbose: bool = True,
          **options: Any) -> TrainResult: ...
def from_torch(module: Any, example_inputs: Any, precision: Optional[str] = None,
               input_names: Optional[Sequence[str]] = None,
               output_names: Optional[Sequence[str]] = None, opset_version: int = 17,
               export_options: Optional[Mapping[str, Any]] = None,
               **compile_options: Any) -> Module: ...
