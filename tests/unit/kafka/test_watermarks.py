"""The watermarks of a partition whose leader is being elected are asked again, not failed."""

import pytest
from confluent_kafka import KafkaError, KafkaException
from streamxai.kafka.watermarks import watermarks


class Answers:
    """A consumer whose ``get_watermark_offsets`` raises the given errors in turn, then answers."""

    def __init__(self, *errors: int):
        self.errors = list(errors)
        self.asked = 0

    def get_watermark_offsets(self, tp, timeout):
        self.asked += 1
        assert tp.topic == "t" and tp.partition == 1 and timeout > 0
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 3, 7


def test_errors_of_a_leader_election_or_a_broker_restart_are_asked_again():
    c = Answers(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
                KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC, KafkaError._TRANSPORT,
                KafkaError._ALL_BROKERS_DOWN)
    assert watermarks(c, "t", 1, timeout=10) == (3, 7)
    assert c.asked == 8


def test_another_error_is_raised_at_once():
    c = Answers(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException) as e:
        watermarks(c, "t", 1, timeout=10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED and c.asked == 1


def test_a_leader_that_stays_away_fails_at_the_deadline():
    c = Answers(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 100)
    with pytest.raises(KafkaException) as e:
        watermarks(c, "t", 1, timeout=0.5)
    assert e.value.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION
    assert 2 <= c.asked <= 4  # asked every 0.2 s within 0.5 s
