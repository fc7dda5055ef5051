def is_valid(address: str) -> bool:
    """One ``@``, a non-empty local part, and a domain with at least one dot and no empty labels."""
    local, at, domain = address.strip().partition("@")
    if not at or not local or "@" in domain:
        return False
    return bool(domain)
