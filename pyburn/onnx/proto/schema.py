"""The ONNX protobuf messages, declared once: `codec.decode` walks this table to read a message
and `codec.encode` walks it to write one.

The table is written like a .proto file (onnx.proto, onnx-ml's additions and onnx-data.proto
for the SequenceProto/MapProto/OptionalProto files of the node test suite): a message name
on its own line, then one line per field, ``number name type [repeated|packed]``. A type is
a scalar (int32, int64, uint64, enum, float, double, string, bytes) or a message name;
``packed`` marks the repeated numbers that onnx.proto declares ``[packed = true]`` (written
packed; a reader accepts both forms for any repeated number, as protobuf does).
``bytes ... large`` marks the one field that holds tensor data (TensorProto.raw_data), which
a reader of a file may leave in the file (see `codec.decode`). Fields the table lacks
(device configurations, sharding) are skipped when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .wire import FIXED32, FIXED64, LENGTH, VARINT, varint_bytes

_SCHEMA = """
ModelProto
  1 ir_version int64
  2 producer_name string
  3 producer_version string
  4 domain string
  5 model_version int64
  6 doc_string string
  7 graph GraphProto
  8 opset_import OperatorSetIdProto repeated
  14 metadata_props StringStringEntryProto repeated
  20 training_info TrainingInfoProto repeated
  25 functions FunctionProto repeated

OperatorSetIdProto
  1 domain string
  2 version int64

StringStringEntryProto
  1 key string
  2 value string

GraphProto
  1 node NodeProto repeated
  2 name string
  5 initializer TensorProto repeated
  10 doc_string string
  11 input ValueInfoProto repeated
  12 output ValueInfoProto repeated
  13 value_info ValueInfoProto repeated
  14 quantization_annotation TensorAnnotation repeated
  15 sparse_initializer SparseTensorProto repeated
  16 metadata_props StringStringEntryProto repeated

TensorAnnotation
  1 tensor_name string
  2 quant_parameter_tensor_names StringStringEntryProto repeated

NodeProto
  1 input string repeated
  2 output string repeated
  3 name string
  4 op_type string
  5 attribute AttributeProto repeated
  6 doc_string string
  7 domain string
  8 overload string
  9 metadata_props StringStringEntryProto repeated

AttributeProto
  1 name string
  2 f float
  3 i int64
  4 s bytes
  5 t TensorProto
  6 g GraphProto
  7 floats float repeated
  8 ints int64 repeated
  9 strings bytes repeated
  10 tensors TensorProto repeated
  11 graphs GraphProto repeated
  13 doc_string string
  14 tp TypeProto
  15 type_protos TypeProto repeated
  20 type enum
  21 ref_attr_name string
  22 sparse_tensor SparseTensorProto
  23 sparse_tensors SparseTensorProto repeated

ValueInfoProto
  1 name string
  2 type TypeProto
  3 doc_string string
  4 metadata_props StringStringEntryProto repeated

TensorProto
  1 dims int64 repeated
  2 data_type int32
  3 segment TensorProto.Segment
  4 float_data float packed
  5 int32_data int32 packed
  6 string_data bytes repeated
  7 int64_data int64 packed
  8 name string
  9 raw_data bytes large
  10 double_data double packed
  11 uint64_data uint64 packed
  12 doc_string string
  13 external_data StringStringEntryProto repeated
  14 data_location enum
  16 metadata_props StringStringEntryProto repeated

TensorProto.Segment
  1 begin int64
  2 end int64

SparseTensorProto
  1 values TensorProto
  2 indices TensorProto
  3 dims int64 repeated

TensorShapeProto
  1 dim TensorShapeProto.Dimension repeated

TensorShapeProto.Dimension
  1 dim_value int64
  2 dim_param string
  3 denotation string

TypeProto
  1 tensor_type TypeProto.Tensor
  4 sequence_type TypeProto.Sequence
  5 map_type TypeProto.Map
  6 denotation string
  7 opaque_type TypeProto.Opaque
  8 sparse_tensor_type TypeProto.SparseTensor
  9 optional_type TypeProto.Optional

TypeProto.Tensor
  1 elem_type int32
  2 shape TensorShapeProto

TypeProto.Sequence
  1 elem_type TypeProto

TypeProto.Optional
  1 elem_type TypeProto

TypeProto.SparseTensor
  1 elem_type int32
  2 shape TensorShapeProto

TypeProto.Map
  1 key_type int32
  2 value_type TypeProto

TypeProto.Opaque
  1 domain string
  2 name string

FunctionProto
  1 name string
  4 input string repeated
  5 output string repeated
  6 attribute string repeated
  7 node NodeProto repeated
  8 doc_string string
  9 opset_import OperatorSetIdProto repeated
  10 domain string
  11 attribute_proto AttributeProto repeated
  12 value_info ValueInfoProto repeated
  13 overload string
  14 metadata_props StringStringEntryProto repeated

TrainingInfoProto
  1 initialization GraphProto
  2 algorithm GraphProto
  3 initialization_binding StringStringEntryProto repeated
  4 update_binding StringStringEntryProto repeated

SequenceProto
  1 name string
  2 elem_type int32
  3 tensor_values TensorProto repeated
  4 sparse_tensor_values SparseTensorProto repeated
  5 sequence_values SequenceProto repeated
  6 map_values MapProto repeated
  7 optional_values OptionalProto repeated

MapProto
  1 name string
  2 key_type int32
  3 keys int64 repeated
  4 string_keys bytes repeated
  5 values SequenceProto

OptionalProto
  1 name string
  2 elem_type int32
  3 tensor_value TensorProto
  4 sparse_tensor_value SparseTensorProto
  5 sequence_value SequenceProto
  6 map_value MapProto
  7 optional_value OptionalProto
"""

#: the wire type of each scalar type
SCALAR_WIRE = {"int32": VARINT, "int64": VARINT, "uint64": VARINT, "enum": VARINT,
               "float": FIXED32, "double": FIXED64, "string": LENGTH, "bytes": LENGTH}


@dataclass(eq=False)
class Field:
    """One field of a message."""

    number: int
    name: str
    #: a scalar type name, or "message"
    kind: str
    repeated: bool = False
    #: written packed (repeated numbers declared ``[packed = true]``)
    packed: bool = False
    #: TensorProto.raw_data: may stay in the file when a file is read
    large: bool = False
    #: the nested message type (kind "message"; linked once every message is declared)
    message: Message | None = None
    #: the wire type of one value
    wire: int = field(init=False)
    #: the tag of one value, as written
    key: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.wire = LENGTH if self.kind == "message" else SCALAR_WIRE[self.kind]
        self.key = varint_bytes(self.number << 3 | self.wire)


@dataclass(eq=False)
class Message:
    """One message type: its fields in number order, and by number for reading."""

    name: str
    fields: list[Field] = field(default_factory=list)
    by_number: dict[int, Field] = field(default_factory=dict)


def _parse(text: str) -> dict[str, Message]:
    messages: dict[str, Message] = {}
    pending: list[tuple[Field, str]] = []
    current: Message | None = None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if not line.startswith(" "):
            current = messages[words[0]] = Message(words[0])
            continue
        assert current is not None, "a field line before any message name"
        number, name, kind, *flags = words
        f = Field(int(number), name, kind if kind in SCALAR_WIRE else "message",
                  repeated="repeated" in flags or "packed" in flags,
                  packed="packed" in flags, large="large" in flags)
        if f.kind == "message":
            pending.append((f, kind))
        current.fields.append(f)
        current.by_number[f.number] = f
    for f, name in pending:
        f.message = messages[name]
    for m in messages.values():
        m.fields.sort(key=lambda f: f.number)
    return messages


#: every message type by name
MESSAGES: dict[str, Message] = _parse(_SCHEMA)
