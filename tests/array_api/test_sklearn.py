"""scikit-learn's array-API-aware estimators on pyburn tensors (``array_api_dispatch``), on
every device: PCA, LinearDiscriminantAnalysis and Ridge fit and predict through
`pyburn.array_api`, keep their fitted arrays on the tensors' device, and give numpy's results
to float32 precision."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

X, LABELS = load_iris(return_X_y=True)
X = X.astype(np.float32)
TARGET = (X @ np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32) + 3).astype(np.float32)
#: each estimator, the target it fits (None: unsupervised) and the method compared
ESTIMATORS = {
    "pca": (lambda: PCA(n_components=2, svd_solver="full"), None, "transform"),
    "lda": (lambda: LinearDiscriminantAnalysis(), LABELS.astype(np.int32), "decision_function"),
    "ridge": (lambda: Ridge(alpha=1.0, solver="svd"), TARGET, "predict"),
}


@pytest.fixture(autouse=True)
def _dispatch(monkeypatch):
    # scikit-learn asks for SciPy's array API switch before it dispatches
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimator_on_pyburn_matches_numpy(device, name):
    make, target, method = ESTIMATORS[name]
    inputs = pyburn.tensor(X, device=device)
    labels = None if target is None else pyburn.tensor(target, device=device)
    fitted = make().fit(inputs, labels)
    out = getattr(fitted, method)(inputs)
    assert isinstance(out, pyburn.Tensor) and out.device == device
    with sklearn.config_context(array_api_dispatch=False):
        reference = getattr(make().fit(X, target), method)(X)
    np.testing.assert_allclose(np.asarray(out), reference, rtol=1e-4, atol=2e-4)
