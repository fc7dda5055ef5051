"""A token bucket: ``capacity`` tokens, refilled at ``rate`` tokens per second."""


class TokenBucket:
    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self._tokens = capacity
        self._last = now

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._tokens = min(self.capacity, self._tokens + elapsed * self.rate)
        self._last = max(self._last, now)

    def take(self, now: float, n: float = 1) -> bool:
        """Take ``n`` tokens at time ``now`` (seconds); False when there are not enough."""
        self._refill(now)
        if self._tokens >= n:
            self._tokens -= n
            return True
        return False
