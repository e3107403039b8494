"""End to end: questions answered from the chat, real `tapgate serve` processes,
replicas killed."""
