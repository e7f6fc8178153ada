"""`AsyncVectorEnv`: environments stepped in parallel, each in a worker process of its own,
behind `SyncVectorEnv`'s interface (gymnasium's AsyncVectorEnv).

A pure-Python environment holds the GIL while it steps, so threads would take turns; worker
processes run side by side. Each worker makes its environment, then answers the requests of a
pipe: reset, step (resetting an ended episode in the same step, as `SyncVectorEnv` does) and
close. `step_async` sends every action at once and `step_wait` collects the answers, so the
caller may compute while the environments step. Every wait is bounded by `timeout`; a worker
that died or did not answer in time raises `WorkerError` and the vector is closed (its
workers stopped). An action outside the action space is refused before anything is sent; an
environment's own exception comes back as itself, and closes the vector too. Where processes
cannot start (Pyodide), use `SyncVectorEnv`.

Under the "spawn" and "forkserver" start methods (the default from Python 3.14 on Linux, and
on macOS and Windows) the makers travel to the workers by pickling: pass a module-level
function or ``functools.partial(pyburn.rl.make, "CartPole-v1")``, not a lambda.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from ..errors import ArgumentError, WorkerError
from ..runtime import IN_BROWSER
from .env import Env
from .vector import VectorStep, autoreset_step, check_actions, check_makers, gather

#: seconds a worker may take to answer a request, unless told otherwise
TIMEOUT = 60.0


def _serve(connection: Connection, make: Callable[[], Env]) -> None:
    """A worker's loop: its environment answers the pipe's requests until "close"."""
    try:
        env = make()
        connection.send(("ok", (env.observation_space, env.action_space)))
        while True:
            request, argument = connection.recv()
            if request == "close":
                break
            if request == "reset":
                answer: Any = env.reset(seed=argument)[0]
            else:
                answer = autoreset_step(env, argument)
            connection.send(("ok", answer))
    except (EOFError, KeyboardInterrupt):  # the parent went away, or ^C reached the group
        pass
    except Exception as exc:  # the environment's own error: it goes back to the caller
        connection.send(("error", exc))
    finally:
        connection.close()


class AsyncVectorEnv:
    """The environments `make_envs` make, each in a worker process; `context` names the
    start method ("fork", "spawn", "forkserver"; None: the platform's default) and `timeout`
    bounds every wait for a worker's answer, in seconds."""

    def __init__(self, make_envs: Sequence[Callable[[], Env]], *, context: str | None = None,
                 timeout: float = TIMEOUT):
        check_makers(make_envs, "AsyncVectorEnv")
        if IN_BROWSER:
            raise ArgumentError("AsyncVectorEnv needs worker processes, which a browser has "
                                "not: use SyncVectorEnv")
        if not timeout > 0:
            raise ArgumentError(f"AsyncVectorEnv timeout must be positive, got {timeout!r}")
        self.timeout = timeout
        self.num_envs = len(make_envs)
        start: Any = multiprocessing.get_context(context)  # typeshed's lacks Process
        self._pipes: list[Connection] = []
        self._workers: list[Any] = []
        self._waiting = False
        try:
            for make in make_envs:
                mine, theirs = start.Pipe()
                worker = start.Process(target=_serve, args=(theirs, make), daemon=True,
                                       name="pyburn-env")
                worker.start()
                theirs.close()
                self._pipes.append(mine)
                self._workers.append(worker)
            spaces = self._answers()
        except BaseException:
            self.close()
            raise
        self.single_observation_space, self.single_action_space = spaces[0]

    def reset(self, seed: int | None = None) -> tuple[list[Any], dict[str, Any]]:
        """Every environment's first observation; environment k is seeded ``seed + k``."""
        self._refuse_while_waiting()
        for k, pipe in enumerate(self._pipes):
            self._send(pipe, ("reset", None if seed is None else seed + k))
        return self._answers(), {}

    def step_async(self, actions: Sequence[Any]) -> None:
        """Send each environment its action; `step_wait` collects the step."""
        self._refuse_while_waiting()
        check_actions(actions, self.num_envs)
        for action in actions:
            if not self.single_action_space.contains(action):
                raise ArgumentError(f"{action!r} is not in the action space "
                                    f"{self.single_action_space}")
        for pipe, action in zip(self._pipes, actions):
            self._send(pipe, ("step", action))
        self._waiting = True

    def step_wait(self) -> VectorStep:
        """The step that `step_async` started."""
        if not self._waiting:
            raise ArgumentError("step_wait() without a step_async() before it")
        self._waiting = False
        return gather(self._answers())

    def step(self, actions: Sequence[Any]) -> VectorStep:
        """One step of every environment (an action each), all at once."""
        self.step_async(actions)
        return self.step_wait()

    def close(self) -> None:
        """Stop the workers (those that do not stop within the timeout are terminated)."""
        for pipe in self._pipes:
            try:
                pipe.send(("close", None))
            except OSError:  # the worker is gone already
                pass
        for worker in self._workers:
            worker.join(self.timeout)
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for pipe in self._pipes:
            pipe.close()
        self._pipes, self._workers = [], []

    def __enter__(self) -> AsyncVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_workers", None):
            self.close()

    def _refuse_while_waiting(self) -> None:
        if self._waiting:
            raise ArgumentError("a step_async() is waiting: call step_wait() first")
        if not self._pipes:
            raise ArgumentError("this AsyncVectorEnv is closed")

    def _send(self, pipe: Connection, request: tuple[str, Any]) -> None:
        try:
            pipe.send(request)
        except OSError as exc:
            self.close()
            raise WorkerError(f"an environment's worker is gone ({exc})") from None

    def _answers(self) -> list[Any]:
        """Each worker's answer to its last request, in order; an environment's error is
        raised as itself once every worker has answered."""
        answers, error = [], None
        for k, pipe in enumerate(self._pipes):
            try:
                if not pipe.poll(self.timeout):
                    raise WorkerError(f"environment {k} did not answer within "
                                      f"{self.timeout:g} s")
                status, answer = pipe.recv()
            except (EOFError, OSError):
                self.close()
                raise WorkerError(f"environment {k}'s worker died") from None
            except WorkerError:
                self.close()
                raise
            if status == "error" and error is None:
                error = answer
            answers.append(answer)
        if error is not None:
            self.close()
            raise error
        return answers
