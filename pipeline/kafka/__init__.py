"""Kafka plumbing: client settings and topic setup (``config``), producing and consuming
(``io``), replay of a partition (``replay``), checkpoints sealed with an HMAC
(``checkpoint_seal``) and kept on disk (``checkpoints``) or in a compacted topic
(``checkpoint_topic``), the history cache the handlers replay from, the agents' output
producer (``output_producer``) and the outage log filter. Nothing here imports ``streamxai.local``; ``streamxai.core`` imports nothing here."""
