"""Teach an agent to balance CartPole with DQN or PPO (burn-rl's dqn-agent example), log the
run so that `pyburn dash` shows it, then score the learned policy played greedily.

    python examples/cartpole_agents.py                  # PPO, until solved: seconds on cpu
    python examples/cartpole_agents.py --agent dqn      # DQN: about two minutes on cpu
    pyburn dash runs/cartpole-ppo                       # the run's episodes, live or after
    python examples/cartpole_agents.py --quick          # a few updates: a smoke test

CartPole is solved when the mean return of the last 100 episodes reaches 195 (the most an
episode can earn is 500); training stops there. A random policy earns about 22.
"""

from __future__ import annotations

import argparse

import pyburn
from pyburn.rl import CartPole, dqn_training, ppo_training

SOLVED = 195.0
STEP_CAP = {"ppo": 200_000, "dqn": 150_000}


def greedy_return(agent: str, network: pyburn.nn.Module, seed: int) -> float:
    """The return of one episode played with the network's best action at every step."""
    env = CartPole()
    observation, _ = env.reset(seed=seed)
    device = next(iter(network.parameters())).device
    total = 0.0
    with pyburn.no_grad():
        while True:
            x = pyburn.tensor([observation], device=device)
            scores = network.actor(x) if agent == "ppo" else network(x)
            observation, reward, terminated, truncated, _ = env.step(scores.argmax(dim=1).item())
            total += reward
            if terminated or truncated:
                return total


def main() -> None:
    """Train until solved (or the step cap), then score the greedy policy."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", choices=("ppo", "dqn"), default="ppo")
    parser.add_argument("--device", default=None, help="default: the default device")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few thousand steps only")
    args = parser.parse_args()

    start = ppo_training if args.agent == "ppo" else dqn_training
    steps = 2_048 if args.quick else STEP_CAP[args.agent]
    run = start(CartPole, total_steps=steps, seed=args.seed, device=args.device,
                run_dir=f"runs/cartpole-{args.agent}")
    result = None
    for result in run:
        if result.stats.mean_return(100) >= SOLVED:
            run.close()  # solved: the run's log says "stopped" here
            break
    stats = result.stats
    print(f"{args.agent}: {stats.step:,} steps, {len(stats.episodes)} episodes, mean return of "
          f"the last 100: {stats.mean_return(100):.1f}")
    network = result.policy if args.agent == "ppo" else result.q_network
    scores = [greedy_return(args.agent, network, seed) for seed in range(10)]
    print(f"greedy mean return over 10 episodes: {sum(scores) / len(scores):.1f}")


if __name__ == "__main__":
    main()
