"""The algorithmic core: plain synchronous Python with numpy and river.
This subpackage imports neither Faust, nor a Kafka client, nor ``agents``.
"""
