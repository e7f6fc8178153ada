"""The CartPole page: PPO learns in the page on wasm (its returns rise far above a random
policy's, about 22), the newest policy's cart is played back, every episode reaches the
chart as a run event; stop ends a run at once, and the run's log says "stopped"."""

from __future__ import annotations

import pytest

#: a schedule the test adds to the page's choices: long enough to learn, short enough to wait
STEPS = 20_000
#: a random policy's mean return is about 22; the seeded run reaches about 64 here
LEARNED = 40
ADD_STEPS = """(steps) => {
  const select = document.getElementById("steps");
  select.add(new Option(String(steps), String(steps)));
  select.value = String(steps);
}"""
FINISHED = "() => ['done', 'failed', 'stopped'].includes(window.cartpoleDemo.state)"


@pytest.fixture(scope="module")
def cartpole(module_web: object) -> object:
    return module_web.open("cartpole.html?device=wasm")


def test_the_agent_learns_and_its_cart_is_drawn(cartpole: object, screenshot: object) -> None:
    cartpole.evaluate(ADD_STEPS, STEPS)
    cartpole.click("#start")
    cartpole.wait_for_function(FINISHED, timeout=300_000)
    demo = cartpole.evaluate("() => window.cartpoleDemo")
    assert demo["state"] == "done", cartpole.inner_text("#status")
    summary = demo["summary"]
    assert summary["steps"] >= STEPS and not summary["stopped"]
    assert summary["mean_return"] >= LEARNED
    # every finished episode reached the page, as the run's log holds it
    assert len(demo["returns"]) == summary["episodes"] == len(demo["run"]["curves"]
                                                              ["episode_return"]["train"])
    assert demo["run"]["status"] == "ended"
    # the last greedy episode is played back: as many frames as its steps, plus the start
    assert demo["shown"] == len(demo["frames"]) > 1
    assert "steps (the policy after" in cartpole.inner_text("#shown")
    screenshot(cartpole, "cartpole-learned")


def test_stop_ends_the_run(cartpole: object) -> None:
    cartpole.select_option("#steps", "100000")
    cartpole.click("#start")
    cartpole.wait_for_function("() => window.cartpoleDemo.returns.length > 0", timeout=60_000)
    cartpole.click("#stop")
    cartpole.wait_for_function(FINISHED, timeout=30_000)
    demo = cartpole.evaluate("() => window.cartpoleDemo")
    assert demo["state"] == "stopped" and demo["summary"]["stopped"]
    assert demo["summary"]["steps"] < 100_000
    assert demo["run"]["status"] == "stopped"
