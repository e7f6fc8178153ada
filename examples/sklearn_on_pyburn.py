"""scikit-learn on pyburn tensors: PCA, linear discriminant analysis and ridge regression fit
on the iris data set through the Python array API (`pyburn.array_api`), on every device
available here, each checked against the same estimator on numpy arrays.

    python examples/sklearn_on_pyburn.py

scikit-learn dispatches to an array library's namespace when ``array_api_dispatch`` is on,
and asks for SciPy's switch, SCIPY_ARRAY_API=1, to be set before either is imported (this
script sets it). The fitted arrays (``pca.components_``, ``ridge.coef_``) are pyburn tensors
on the device the data came on.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scikit-learn imports SciPy

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

import pyburn  # noqa: E402


def fit_all(X, y, target):
    """The three estimators fitted on (X, y, target), with what each computes on X."""
    pca = PCA(n_components=2, svd_solver="full").fit(X)
    lda = LinearDiscriminantAnalysis().fit(X, y)
    ridge = Ridge(alpha=1.0, solver="svd").fit(X, target)
    return {"pca": pca.transform(X), "lda": lda.decision_function(X), "ridge": ridge.predict(X)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 60 samples only")
    args = parser.parse_args()
    X, y = load_iris(return_X_y=True)
    # 60 samples in order hold classes 0 and 1 only: take every other one instead
    X, y = (X[::2], y[::2]) if args.quick else (X, y)
    X = X.astype(np.float32)
    target = (X @ np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32) + 3).astype(np.float32)
    reference = fit_all(X, y, target)
    for device in pyburn.available_devices():
        with sklearn.config_context(array_api_dispatch=True):
            results = fit_all(pyburn.tensor(X, device=device),
                              pyburn.tensor(y.astype(np.int32), device=device),
                              pyburn.tensor(target, device=device))
        for name, result in results.items():
            gap = float(np.abs(np.asarray(result) - reference[name]).max())
            print(f"{device.name:>5} {name:>5}: {type(result).__name__} on "
                  f"{result.device}, largest difference from numpy {gap:.2e}")


if __name__ == "__main__":
    main()
