"""Constants the web tests share with their fixtures (a uniquely named module: `conftest` is
ambiguous when several test folders are collected together)."""

HOSTILE = (
    "<script>document.title='PWNED';window.__pwned=1</script>"
    "<img src=x onerror=\"document.title='PWNED-img'\"><b>bold?</b>"
)
"""What the hostile episode writes into a file, its command output and its final message."""
TOKEN = "test-token-0123456789abcdef"
"""The configured access token of the served app."""
