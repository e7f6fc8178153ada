"""pyburn.nn without numpy (as under Pyodide): a model is built, initialised, trained, saved
and reloaded on `flex` with the standard library only."""

from __future__ import annotations

from test_no_numpy import run_without_numpy


def test_train_and_reload_without_numpy():
    result = run_without_numpy("""
        import pyburn
        from pyburn import nn
        from pyburn.optim import SGD

        dev = pyburn.device("flex").autodiff()
        pyburn.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 8, device=dev), nn.BatchNorm1d(8, device=dev),
                              nn.Tanh(), nn.Linear(8, 1, device=dev))
        nn.init.orthogonal_(model[0].weight)
        opt = SGD(model.parameters(), lr=0.1)
        x = pyburn.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]], device=dev)
        y = pyburn.tensor([[1.0], [1.0], [0.0], [0.0]], device=dev)
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = nn.MSELoss()(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        state = {k: v.tolist() for k, v in model.state_dict().items()}
        twin = nn.Sequential(nn.Linear(2, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
        twin.load_state_dict(state)
        model.eval(), twin.eval()
        same = twin(x.detach().to("flex")).tolist() == model(x).tolist()
        print(losses[-1] < losses[0], same, "numpy" in __import__("sys").modules)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "False"]
