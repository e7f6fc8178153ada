"""The CartPole page's Python: PPO learns CartPole (``pyburn.rl.ppo_training``, one rollout
and its update at a time) in an ``async`` loop that hands control back to the browser after
each update, so that `stop` (a separate call from the page) takes effect at once.

Progress goes to the page as the records of the run's log, each emitted as a "run-event"
(``pyburn_web.emit``): the "status" events and a "metrics" event per finished episode, as
in the ``events.jsonl`` that ``pyburn dash`` reads, with the steps per second added. Every
few seconds, and at the end, the newest policy plays an episode greedily and its states go
to the page as "frames" (the cart's position and the pole's angle at each step), which the
page plays back.
"""

import asyncio
import time

from pyburn_web import emit

import pyburn
from pyburn.rl import CartPole, PPOConfig, ppo_training

#: seconds between the greedy episodes shown while training runs
FRAMES_EVERY = 4.0
#: the seed of the run, and of the episodes shown (the same start each time)
SEED = 0

_state = {"stopped": False}


class _PageSink:
    """The run's log (an ``EventSink``): each record to the page, with the speed so far."""

    def __init__(self):
        self.started = time.perf_counter()

    def write_config(self, config):
        emit("run-config", config)

    def append(self, record):
        if record["event"] == "metrics":
            elapsed = time.perf_counter() - self.started
            record["metrics"]["steps_per_s"] = record["step"] / elapsed if elapsed else 0.0
        emit("run-event", record)

    def close(self):
        pass


async def _greedy_episode(policy):
    """The (x, theta) of each step of an episode the policy plays, always taking its most
    likely action."""
    device = next(iter(policy.parameters())).device
    env = CartPole()
    observation, _ = env.reset(seed=SEED)
    states = [[env.state[0], env.state[2]]]
    with pyburn.no_grad():
        while True:
            logits = policy.actor(pyburn.tensor([observation], device=device))
            action = int(await logits.argmax(dim=1).item_async())
            observation, _, terminated, truncated, _ = env.step(action)
            states.append([env.state[0], env.state[2]])
            if terminated or truncated:
                return states


async def _show(result):
    emit("frames", {"states": await _greedy_episode(result.policy),
                    "step": result.stats.step})


def stop():
    """End training after the update in progress (the policy so far is kept)."""
    _state["stopped"] = True


async def train(device, steps=50_000):
    """Train a fresh policy by PPO for `steps` environment steps on `device` ("wgpu",
    "wasm", "flex", "cpu"); returns a summary when done or when `stop` was called."""
    _state["stopped"] = False
    run = ppo_training(CartPole, PPOConfig(), total_steps=steps, seed=SEED, device=device,
                       run_dir=_PageSink())
    started = shown = time.perf_counter()
    result = None
    try:
        for result in run:
            if time.perf_counter() - shown > FRAMES_EVERY:
                await _show(result)
                shown = time.perf_counter()
            await asyncio.sleep(0)  # the browser handles a stop request here
            if _state["stopped"]:
                break
    finally:
        run.close()  # logs "stopped" when it did not end
    if result is not None:
        await _show(result)
    stats = None if result is None else result.stats
    return {"steps": stats.step if stats else 0,
            "episodes": len(stats.episodes) if stats else 0,
            "mean_return": stats.mean_return(20) if stats and stats.episodes else None,
            "stopped": _state["stopped"], "seconds": time.perf_counter() - started}
