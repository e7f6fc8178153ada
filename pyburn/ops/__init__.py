"""The ops layer, below nn and above the backend protocol: the op tables (`elementwise`), the
op families that put Tensor's methods together from backend calls (`math_ops`, `reduction`,
`movement`, `indexing`, `linalg`, `creation`), the index range checks (`index_checks`) and
the optional-capability layer (`capability`): composite ops a backend may run as one call.

The package itself imports nothing, so a backend can read a table (`ops.elementwise`)
without loading the families."""
