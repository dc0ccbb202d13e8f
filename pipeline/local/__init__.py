"""What only local runs need: the local Kafka broker (``broker``), free ports, the demo and its
event streams, the terminal view, the plot and the web dashboard. Workers never import this package."""
