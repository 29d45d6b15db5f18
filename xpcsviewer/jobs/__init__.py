"""File-level work shared by the GUI and the command line: read -> compute / fit -> write.

The only place where files and computation meet; the array code is in ``compute``
and ``fitting``, the readers and writers in ``io``.
"""
