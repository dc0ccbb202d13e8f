"""Settings shown to people: one ``--help`` line per setting, and the effective settings as a
settings file (``streamxai config``)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import fields

from .settings import Secret, Settings, env_name
from .toml_text import toml_key, toml_value

__all__ = ["settings_help", "settings_toml"]


def settings_toml(s: Settings, stream_id: str | None = None) -> str:
    """``s`` as a settings file that :func:`~streamxai.settings.load_settings` reads back to equal
    settings, each value with its source as a comment. With ``stream_id``: that stream's effective
    settings. Secrets are left out (a masked value pasted back would become the secret).

    >>> import tomllib
    >>> from streamxai.settings import load_settings
    >>> s = load_settings(None, alpha="0.01", streams='{"r-*": {"alpha": 0.1}}')
    >>> text = settings_toml(s)
    >>> [line for line in text.splitlines() if line.startswith("alpha")]
    ['alpha = 0.01  # command line', 'alpha = 0.1  # command line']
    >>> tomllib.loads(text)["streams"]
    {'r-*': {'alpha': 0.1}}
    >>> one = settings_toml(s, "r-1").splitlines()
    >>> print(one[0]); print(next(line for line in one if line.startswith("alpha")))
    # effective settings of stream 'r-1': profile "r-*" on top of the top-level settings
    alpha = 0.1  # profile "r-*"
    """
    if stream_id is None:
        lines = ["# streamxai settings (`streamxai config`): a valid settings file; each comment says where the "
                 "value came from"]
        eff = s
    else:
        glob = s.profile(stream_id)
        eff = s.for_stream(stream_id)
        lines = [f"# effective settings of stream {stream_id!r}: "
                 + (f"profile {json.dumps(glob)} on top of the top-level settings" if glob is not None
                    else "no stream profile matches it; the top-level settings")]
    for f in fields(eff):
        v = getattr(eff, f.name)
        if f.name == "streams":
            continue
        if isinstance(v, Secret):
            state = "set" if v.reveal() else "not set"
            lines.append(f"# {f.name}: secret, {state}, not shown; give it in a private settings file or ${env_name(f.name)}")
        elif v is None:
            lines.append(f"# {f.name}: none (TOML has no null; leave it out for the default)")
        else:
            lines.append(f"{f.name} = {toml_value(v)}  # {eff.source(f.name)}")
    if stream_id is None:
        for glob, table in s.streams.items():
            lines += ["", f"[streams.{toml_key(glob)}]"]
            lines += [f"{k} = {toml_value(v)}  # {s.source('streams')}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def settings_help() -> str:
    """One line per setting with its environment variable, for ``--help``."""
    lines = []
    for f in fields(Settings):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        shown = "***" if f.metadata.get("secret") else json.dumps(default, default=str)
        lines.append(f"  {f.name:<20} {f.metadata['help']} [env: {env_name(f.name)}] (default {shown})")
    return "\n".join(lines)
