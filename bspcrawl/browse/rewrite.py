"""Archived HTML made safe to show and to browse at one moment (pywb's URL scheme).

:func:`rewrite_html` points every navigation (``<a>``, ``<area>``, ``<form>``) at
``/web/{ts}/{url}`` (``target="_top"``) and every resource a page loads at
``/web/{ts}if_/{url}``, and drops what runs or loads on its own (scripts, ``<base>``,
``<meta http-equiv>``, frames, objects, ``on*`` handlers, ``srcset``, ``ping``, and every
non-http(s) URL but ``#fragments``). The rewriting keeps browsing in the archive; the
server's ``ARCHIVED_CSP`` and sandboxed iframe keep it safe where rewriting misses
something.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from bspcrawl.urls import resolve

NAVIGATION = {"a": "href", "area": "href", "form": "action"}
RESOURCE_ATTRS = ("src", "poster", "data", "background")
DROPPED_TAGS = "script, base, meta[http-equiv], iframe, frame, frameset, object, embed, applet"
DROPPED_ATTRS = ("srcset", "ping", "formaction", "integrity", "nonce")


def archive_url(ts: str, url: str, raw: bool = False) -> str:
    """The app's path of ``url`` at ``ts``: its banner page, or (``raw``) its content."""
    return f"/web/{ts}{'if_' if raw else ''}/{url}"


def rewrite_html(html: bytes | str, page_url: str, ts: str) -> str:
    """``html`` (archived at ``page_url``) with its links and resources pointed at the
    archive at ``ts`` and everything active removed (see the module docstring)."""
    tree = LexborHTMLParser(html if isinstance(html, str) else html.decode("utf-8", "replace"))
    base = page_url
    for node in tree.css("base[href]"):
        base = resolve(node.attributes.get("href") or "", page_url) or base
        break
    for node in tree.css(DROPPED_TAGS):
        node.decompose()
    for node in tree.css("*"):
        for name in [n for n in node.attributes if n.lower().startswith("on")
                     or n.lower() in DROPPED_ATTRS]:
            del node.attrs[name]
        nav = NAVIGATION.get(node.tag)
        if nav and nav in node.attributes and _point(node, nav, base, ts, raw=False):
            node.attrs["target"] = "_top"
        if node.tag == "link" and "href" in node.attributes:
            _point(node, "href", base, ts, raw=True)
        if "xlink:href" in node.attributes:  # SVG: a link, or an image
            _point(node, "xlink:href", base, ts, raw=node.tag != "a")
        for name in RESOURCE_ATTRS:
            if name in node.attributes:
                _point(node, name, base, ts, raw=True)
    return tree.html or ""


def _point(node: LexborNode, name: str, base: str, ts: str, raw: bool) -> bool:
    """Set attribute ``name`` of ``node`` to its archive path (True), or drop it (not
    http(s)); keep an in-page ``#fragment`` as it is."""
    value = (node.attributes.get(name) or "").strip()
    if value.startswith("#"):
        return False
    target = resolve(value, base)
    if target is None:
        del node.attrs[name]
        return False
    node.attrs[name] = archive_url(ts, target, raw)
    return True
