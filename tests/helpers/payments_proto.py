"""A Protobuf message class for the tests of ``format = "protobuf"``, built in code (no protoc): the
file ``payments.proto`` with ``Payment`` (a transaction id, an amount, a nested ``Merchant``, an
int64 event time, an int32 label, a status enum) and ``Merchant`` (a risk and a country), in a
descriptor pool of its own; a source names it ``protobuf_message = "helpers.payments_proto:Payment"``."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Payment", "Merchant"]

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


_POOL = descriptor_pool.DescriptorPool()
_FILE = _POOL.Add(_file())
Payment = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamxai.tests.Payment"))
Merchant = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamxai.tests.Merchant"))
