"""streamxai: live, model-agnostic explanations of online river models on Kafka."""

__version__ = "0.1.0"
