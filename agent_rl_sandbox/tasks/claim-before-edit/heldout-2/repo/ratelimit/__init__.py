"""Rate limiting."""

from ratelimit.bucket import TokenBucket

__all__ = ["TokenBucket"]
