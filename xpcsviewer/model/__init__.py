"""The values the packages hand each other: a result and its q-map (:mod:`.result`), an age
x lag map (:mod:`.age_lag`), pixel-group maps (:mod:`.groups`), hits of frames
(:mod:`.events`).

Below ``io`` (which reads and writes them) and ``compute`` (which makes them), so that
array code needs no file code (docs/decisions.md, ADR-12); it imports nothing else of the
package.
"""
