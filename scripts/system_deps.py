"""The Debian packages pyburn's make targets need, and their installation.

``python3 scripts/system_deps.py PART...`` checks the packages of each named part (`PACKAGES`
says which part needs what, and why) and installs the missing ones with apt-get: one
``apt-get update``, then one ``apt-get install``. It runs apt-get directly as root, through
``sudo -n`` where that works without a password, and otherwise stops at once with the one
command that would install them. It never prompts (no terminal is read, apt answers yes) and
never hangs (every apt-get call has a time limit). A part named in $PYBURN_SKIP (for example
``PYBURN_SKIP=wgpu,browser``) is not set up: skipping a part is the user's choice.

Standard library only: it runs before the project's virtual environment exists.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: the parts of the project a package can be for (`make test` needs all of them)
PARTS = ("python", "wgpu", "browser", "terminal")
#: seconds one apt-get call may take before it counts as failed
APT_TIMEOUT_S = 900


@dataclass(frozen=True)
class Package:
    """A Debian package, the part of the project that needs it and why; `otherwise` asks
    the machine whether what it gives is already there some other way."""

    name: str
    part: str
    why: str
    otherwise: Callable[[System], bool] | None = None


PACKAGES = (
    Package("python3-venv", "python",
            "`python3 -m venv` makes .venv/ with pip, through ensurepip (Debian ships it apart)",
            lambda system: system.has_venv()),
    Package("mesa-vulkan-drivers", "wgpu",
            "Mesa's CPU Vulkan driver (llvmpipe): a GPU adapter for the wgpu tests where the "
            "machine has no GPU"),
    Package("chromium", "browser",
            "the end-to-end tests and the conformance suite on WebGPU drive it through "
            "Playwright (WebGPU on its SwiftShader)", lambda system: system.has_chromium()),
    Package("fonts-liberation", "browser",
            "a font for the pages, so the end-to-end tests' screenshots are readable"),
    Package("tmux", "terminal",
            "a real terminal for the training dashboard's tests (keys sent, the screen read)"),
)


class SetupError(Exception):
    """The packages could not be installed; the message says what to run instead."""


class System:
    """The calls into the machine, apart so that tests can stand in for them."""

    def which(self, command: str) -> str | None:
        """The path of `command` on $PATH, or None."""
        return shutil.which(command)

    def is_root(self) -> bool:
        """Whether this process runs as root."""
        return hasattr(os, "geteuid") and os.geteuid() == 0

    def installed(self, package: str) -> bool:
        """Whether dpkg has `package` installed (False where there is no dpkg)."""
        try:
            done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
        except FileNotFoundError:  # not a Debian-like system
            return False
        return done.returncode == 0 and done.stdout.strip().endswith(" installed")

    def has_venv(self) -> bool:
        """Whether this Python can make a virtual environment with pip in it (Debian's own
        python3 ships ensurepip apart, in python3-venv; pyenv's and python.org's have it)."""
        return all(importlib.util.find_spec(m) is not None for m in ("ensurepip", "venv"))

    def has_chromium(self) -> bool:
        """Whether $CHROMIUM names a Chromium the tests can use instead of Debian's."""
        path = os.environ.get("CHROMIUM", "")
        return bool(path) and os.access(path, os.X_OK)

    def run(self, argv: Sequence[str], timeout_s: float) -> tuple[int, str]:
        """Run `argv` with no terminal input; (exit status, last output). A run past
        `timeout_s` is killed and reported as status 124."""
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return 124, f"no answer in {timeout_s:.0f} s"
        return done.returncode, (done.stdout + done.stderr).strip()


def skipped_parts(environ: Mapping[str, str] = os.environ) -> set[str]:
    """The parts $PYBURN_SKIP names (comma- or space-separated)."""
    return set(environ.get("PYBURN_SKIP", "").replace(",", " ").split())


def missing_packages(parts: Sequence[str], system: System) -> list[Package]:
    """The packages `parts` need that are neither installed nor provided otherwise."""
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SetupError(f"unknown part {', '.join(unknown)}: the parts are {', '.join(PARTS)}")
    return [p for p in PACKAGES if p.part in parts and not system.installed(p.name)
            and not (p.otherwise and p.otherwise(system))]


def install_command(names: Sequence[str], prefix: Sequence[str] = ()) -> list[list[str]]:
    """The apt-get calls that install `names`, each after `prefix` (sudo): update, then
    install, never asking."""
    prefix = list(prefix)
    return [prefix + ["apt-get", "update", "-qq"],
            prefix + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *names]]


def _as_shell(commands: list[list[str]]) -> str:
    return " && ".join(" ".join(c) for c in commands)


def ensure(parts: Sequence[str], system: System, say: Callable[[str], None] = print) -> list[str]:
    """Install what `parts` need and is missing; returns the names installed. Raises
    `SetupError` (with the command to run by hand) where that cannot be done here."""
    missing = missing_packages(parts, system)
    if not missing:
        return []
    names = [p.name for p in missing]
    listed = ", ".join(f"{p.name} ({p.part})" for p in missing)
    if system.which("apt-get") is None or system.which("dpkg-query") is None:
        say(f"system packages: not a Debian-like system (no apt-get), so {listed} cannot be "
            f"checked; the stages that need them say what is missing")
        return []
    if system.is_root():
        prefix = []
    elif system.which("sudo") and system.run(["sudo", "-n", "true"], 30)[0] == 0:
        prefix = ["sudo", "-n"]
    else:
        raise SetupError(f"{listed} missing and this is neither root nor sudo without a "
                         f"password; run: {_as_shell(install_command(names, ['sudo']))}")
    by_hand = _as_shell(install_command(names, prefix[:1]))
    for p in missing:
        say(f"system packages: installing {p.name}, {p.why}")
    for argv in install_command(names, prefix):
        say("$ " + " ".join(argv))
        status, output = system.run(argv, APT_TIMEOUT_S)
        if status != 0:
            tail = "\n".join(output.splitlines()[-5:])
            raise SetupError(f"`{' '.join(argv)}` failed (exit {status}):\n{tail}\n"
                             f"fix that, then run: {by_hand}")
    still = [p.name for p in missing_packages(parts, system)]
    if still:
        raise SetupError(f"apt-get finished but {' '.join(still)} is still not installed")
    return names


def main(argv: Sequence[str] | None = None, system: System | None = None) -> int:
    """Set up the parts named on the command line (all of them when none is), less those
    $PYBURN_SKIP names; 0 when everything is in place, 1 with a message otherwise."""
    wanted = list(argv if argv is not None else sys.argv[1:]) or list(PARTS)
    skipped = skipped_parts()
    parts = [p for p in wanted if p not in skipped]
    try:
        ensure(parts, system or System())
    except SetupError as exc:
        print(f"system packages: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
