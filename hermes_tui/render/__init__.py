"""How store data looks to a person: Rich renderables and wording built from ``hermes_state`` data.

Nothing here imports textual, so the renderers are usable (and tested) without an app; the
widgets put them on screen. ``hermes_state`` holds the facts and never imports this package.
"""
