"""Pure data and rules, no I/O and no Django: the event envelope and its hash, the agent
registry, the retry policy, the engine's configuration, every Redis key name, the error classes,
the records settle writes, and the log formatters. Everything else in workers/ builds on this."""
