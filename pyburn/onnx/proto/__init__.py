"""ONNX files read and written in pure Python: the protobuf wire format (`wire`), the ONNX
messages declared once (`schema`) and walked both ways (`codec`), and their mapping to
`pyburn.onnx.ir` (`graph_proto`, `tensor_proto`, `values`). No numpy, no protobuf package:
this runs under Pyodide.

>>> import os, tempfile, pyburn
>>> from pyburn.onnx import proto
>>> folder = tempfile.mkdtemp()
>>> x = pyburn.ones(1, 4, device="flex")
>>> pyburn.onnx.export(pyburn.nn.Linear(4, 2, device="flex"), x, os.path.join(folder, "a.onnx"))
>>> model = proto.load_model(os.path.join(folder, "a.onnx"))
>>> [node.op_type for node in model.graph.nodes]
['Gemm']
>>> proto.save_model(model, os.path.join(folder, "copy.onnx"))
>>> proto.load_model(os.path.join(folder, "copy.onnx")) == model
True

Every malformed input raises `pyburn.FormatError` naming the byte offset and field
(``truncated varint at byte 1234 in NodeProto.input (ModelProto.graph.node[3].input)``) or
the node whose content is wrong; nothing else escapes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ...errors import ArgumentError
from ...store.atomic import atomic_write
from ..ir import Model, TensorData
from . import codec, graph_proto, tensor_proto, values
from .tensor_proto import ExternalSink, Origin, SparseTensorData

#: raw_data of at least this many bytes stays in the file when a model is loaded from a path
#: (read on first use); smaller tensors are copied while the file is parsed
LAZY_BYTES = 1 << 16
#: the largest message protobuf parsers accept (2 GiB - 1); larger models keep their
#: weights in an external data file
MAX_MESSAGE_BYTES = (1 << 31) - 1

Bytes = bytes | bytearray | memoryview


def read_model(data: Bytes, *, base_dir: str | os.PathLike[str] | None = None) -> Model:
    """The ONNX model in `data` (a model file's bytes). Tensor data (raw_data) are zero-copy
    views of `data`, which must not change afterwards. External data files are looked for in
    `base_dir` (read when first used)."""
    origin = Origin(None if base_dir is None else os.fspath(base_dir))
    return graph_proto.read_model(codec.decode("ModelProto", data), origin)


def load_model(path: str | os.PathLike[str]) -> Model:
    """The ONNX model in the file at `path`. Large tensors (raw_data and external data files,
    which are found relative to the model's folder) are read only when first used, one
    tensor at a time, so a model of any size opens at once; no file stays open."""
    path = os.fspath(path)
    origin = Origin(os.path.dirname(os.path.abspath(path)), os.path.abspath(path))
    with open(path, "rb") as file:
        mapped = _map(file)
        if mapped is None:  # no mmap (some browsers' file systems): read it all
            return graph_proto.read_model(codec.decode("ModelProto", file.read()),
                                          Origin(origin.base_dir))
    try:
        with memoryview(mapped) as view:
            message = codec.decode("ModelProto", view, keep=LAZY_BYTES)
    finally:
        _close(mapped)
    return graph_proto.read_model(message, origin)


def read(source: str | os.PathLike[str] | bytes | bytearray | memoryview | Model) -> Model:
    """The model in `source` (a path, the file's bytes, or a `Model`) as a `Model`,
    unchecked."""
    if isinstance(source, Model):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_model(source)
    return load_model(source)


def _map(file: Any) -> Any:
    """The file mapped into memory read-only, or None where that is not possible."""
    try:
        import mmap  # optional: where a platform lacks mmap, the file is read whole

        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (ImportError, OSError, ValueError, AttributeError):  # empty file, no fileno
        return None


def _close(mapped: Any) -> None:
    # decoding keeps no view of the map, but an error's traceback may still hold one: the
    # map is then freed with the traceback instead
    with contextlib.suppress(BufferError):
        mapped.close()


def read_tensor(data: Bytes, *, base_dir: str | os.PathLike[str] | None = None) -> TensorData:
    """The TensorProto in `data` (a .pb file such as the node test suite's inputs)."""
    return read_value(data, "tensor", base_dir=base_dir)


def read_value(data: Bytes, kind: str = "tensor", *,
               base_dir: str | os.PathLike[str] | None = None) -> Any:
    """The value of kind `kind` in `data` (a .pb file): "tensor" gives `ir.TensorData`,
    "sparse_tensor" a `SparseTensorData`, "sequence" (SequenceProto) a list, "optional"
    (OptionalProto) the value or None, "map" (MapProto) a dict; the kind of a graph input or
    output is its `ir.ValueInfo.kind`."""
    message = values.message_of(kind)
    origin = Origin(None if base_dir is None else os.fspath(base_dir))
    return values.read_value(message, codec.decode(message, data), origin)


def write_model(model: Model) -> bytes:
    """`model` as the bytes of an ONNX file (tensor data inline: up to 2 GiB in all; larger
    models need `save_model` with `external_data`)."""
    return b"".join(_model_chunks(model, None))


def save_model(model: Model, path: str | os.PathLike[str], *,
               external_data: str | None = None, threshold: int = 1024) -> None:
    """Write `model` to `path`, atomically. With `external_data` (a file name, relative to
    the model's folder), tensors of `threshold` bytes or more are written there instead, as
    ONNX's external data format (needed past protobuf's 2 GiB limit). Tensors still in
    their file are read one at a time while writing."""
    path = os.fspath(path)
    sink = None if external_data is None else ExternalSink(external_data, threshold)
    chunks = _model_chunks(model, sink)
    if sink is not None:
        folder = os.path.dirname(os.path.abspath(path))
        atomic_write(os.path.join(folder, sink.location), _resolve(sink.chunks))
    atomic_write(path, chunks)


def _model_chunks(model: Model, sink: ExternalSink | None) -> Iterator[Bytes]:
    writer = codec.encode("ModelProto", graph_proto.write_model(model, sink))
    if len(writer) > MAX_MESSAGE_BYTES:
        raise ArgumentError(f"the model takes {len(writer)} bytes, past protobuf's limit of "
                            f"2 GiB: save it with save_model(..., external_data='NAME.data')")
    return writer.chunks()


def _resolve(chunks: list[Any]) -> Iterator[Bytes]:
    for chunk in chunks:
        yield chunk() if callable(chunk) else chunk


def write_tensor(td: TensorData) -> bytes:
    """`td` as the bytes of a TensorProto .pb file."""
    if isinstance(td, SparseTensorData):
        message, value = "SparseTensorProto", tensor_proto.write_sparse(td)
    else:
        message, value = "TensorProto", tensor_proto.write_tensor(td)
    return b"".join(codec.encode(message, value).chunks())


__all__ = ["LAZY_BYTES", "SparseTensorData", "load_model", "read_model", "read_tensor",
           "read_value", "save_model", "write_model", "write_tensor"]
