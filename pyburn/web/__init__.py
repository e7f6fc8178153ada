"""Shipping apps as static sites: ``pyburn web build`` (`build`, `app`, `wheel`, `pyodide`,
`compress`) and ``pyburn web serve`` (`serve`), with the browser runtime they copy
(``runtime/``: the loader, its worker and the default page). docs/deploy.md tells the whole.
"""
