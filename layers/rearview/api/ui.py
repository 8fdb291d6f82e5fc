"""The inspector's static files (`rearview/ui/` in the package: the page, its script and style, and the vendored
Preact + htm build), served at `/ui` by the local server and by the HTTP API on AWS. They hold no data: the page
asks the API for everything, with the key the user enters."""

from __future__ import annotations

from functools import cache
from importlib import resources

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
# The page loads nothing but its own files and talks to nothing but its own API: no CDN, no inline script.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "Referrer-Policy": "no-referrer",
}


@cache
def _files() -> dict[str, str]:
    """Every file the inspector ships, by name. The folder is flat and only listed names are served, so a
    request can never reach outside it."""
    root = resources.files("rearview").joinpath("ui")
    found: dict[str, str] = {}
    for entry in root.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _CONTENT_TYPES:
            found[entry.name] = entry.read_text(encoding="utf-8")
    return found


def asset(name: str) -> tuple[str, str] | None:
    """(content type, text) of one inspector file, or None if there is no such file."""
    text = _files().get(name)
    if text is None:
        return None
    return _CONTENT_TYPES["." + name.rsplit(".", 1)[-1]], text
