"""The ops layer, below nn: what every op family shares above the backend protocol. So far
the optional-capability layer (`capability`): composite ops a backend may run as one call,
their contract, their wrappers and which of them a tensor's backend offers."""
