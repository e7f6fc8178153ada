"""The backends: one subpackage per device kind (``flex``, ``cpu``, ``wgpu``, ...), each found
by name when ``pyburn.device(kind)`` first asks for it, and ``base``, the protocol they
implement. Importing this package imports no backend."""
