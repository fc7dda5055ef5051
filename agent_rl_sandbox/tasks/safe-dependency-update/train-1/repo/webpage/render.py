import slugly
import tinyjson


def embed(name: str, data) -> str:
    """A <script> tag defining ``window[name] = data``."""
    return f"<script>window[{tinyjson.dumps(slugly.slug(name))}] = {tinyjson.dumps(data)};</script>"
