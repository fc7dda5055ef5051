"""Render the post index (one line per post)."""

POSTS = [("2024-05-01", "Hello"), ("2024-06-12", "Second post")]


def index_lines(posts=POSTS) -> list[str]:
    return [f"{day} {title}" for day, title in sorted(posts, reverse=True)]


if __name__ == "__main__":
    print("\n".join(index_lines()))
