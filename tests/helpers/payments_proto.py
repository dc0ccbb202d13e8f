"""Protobuf classes for the ``format = "protobuf"`` tests, built in code in a pool of their own: ``Payment``
(``protobuf_message = "helpers.payments_proto:Payment"``) and ``Detail``, with the field kinds a record
maps specially (Timestamp, DoubleValue, a map, bytes, a proto3 ``optional`` int)."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2, wrappers_pb2

__all__ = ["Payment", "Merchant", "Detail"]

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="streamxai_tests/payments.proto", package="streamxai.tests",
                                           syntax="proto3")
    merchant = f.message_type.add(name="Merchant")
    merchant.field.add(name="risk", number=1, type=_F.TYPE_DOUBLE, label=_F.LABEL_OPTIONAL)
    merchant.field.add(name="country", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    status = f.enum_type.add(name="Status")
    status.value.add(name="STATUS_UNKNOWN", number=0)
    status.value.add(name="STATUS_SETTLED", number=1)
    payment = f.message_type.add(name="Payment")
    for number, (name, kind) in enumerate([("txn_id", _F.TYPE_STRING), ("amount", _F.TYPE_DOUBLE),
                                           ("event_time", _F.TYPE_INT64), ("fraud", _F.TYPE_INT32)], start=1):
        payment.field.add(name=name, number=number, type=kind, label=_F.LABEL_OPTIONAL)
    payment.field.add(name="merchant", number=5, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                      type_name=".streamxai.tests.Merchant")
    payment.field.add(name="status", number=6, type=_F.TYPE_ENUM, label=_F.LABEL_OPTIONAL,
                      type_name=".streamxai.tests.Status")
    payment.field.add(name="tags", number=7, type=_F.TYPE_STRING, label=_F.LABEL_REPEATED)
    return f


def _detail_file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="streamxai_tests/detail.proto", package="streamxai.tests",
                                           syntax="proto3", dependency=["google/protobuf/timestamp.proto",
                                                                        "google/protobuf/wrappers.proto"])
    detail = f.message_type.add(name="Detail")
    entry = detail.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_INT64, label=_F.LABEL_OPTIONAL)
    detail.oneof_decl.add(name="_score")
    detail.field.add(name="at", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                     type_name=".google.protobuf.Timestamp")
    detail.field.add(name="limit", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                     type_name=".google.protobuf.DoubleValue")
    detail.field.add(name="counts", number=3, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                     type_name=".streamxai.tests.Detail.CountsEntry")
    detail.field.add(name="blob", number=4, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    detail.field.add(name="score", number=5, type=_F.TYPE_INT32, label=_F.LABEL_OPTIONAL, oneof_index=0,
                     proto3_optional=True)
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
_POOL.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
_POOL.Add(_file())
_POOL.Add(_detail_file())
Payment = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamxai.tests.Payment"))
Merchant = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamxai.tests.Merchant"))
Detail = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamxai.tests.Detail"))
