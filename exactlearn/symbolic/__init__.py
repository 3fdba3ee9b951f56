"""The generic certificate: the schedule run over Q(E, V)."""
