"""scripts/system_deps.py: which packages each part needs, and what it does about the missing
ones on each kind of machine (root, sudo without a password, neither, not Debian, apt-get
failing), with every call into the machine stood in for by `FakeSystem`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest
import system_deps
from system_deps import PACKAGES, SetupError, System, ensure, missing_packages

ALL = {p.name for p in PACKAGES}


class FakeSystem(System):
    """A machine with `installed` packages; apt-get installs what it is asked for unless
    `apt_fails` names the subcommand ("update" or "install") that fails."""

    def __init__(self, installed: Sequence[str] = (), root: bool = True, sudo: str | None = None,
                 debian: bool = True, apt_fails: str | None = None, apt_installs: bool = True,
                 venv: bool = False, chromium: bool = False):
        self.packages = set(installed)
        self.venv = venv  # whether python3 has ensurepip without python3-venv
        self.chromium = chromium  # whether $CHROMIUM names a browser
        self.root = root
        self.sudo = sudo  # None: no sudo; "free": sudo -n works; "password": it asks
        self.debian = debian
        self.apt_fails = apt_fails
        self.apt_installs = apt_installs
        self.calls: list[list[str]] = []

    def which(self, command: str) -> str | None:
        if command in ("apt-get", "dpkg-query"):
            return f"/usr/bin/{command}" if self.debian else None
        if command == "sudo":
            return "/usr/bin/sudo" if self.sudo else None
        return None

    def is_root(self) -> bool:
        return self.root

    def installed(self, package: str) -> bool:
        return package in self.packages

    def has_venv(self) -> bool:
        return self.venv

    def has_chromium(self) -> bool:
        return self.chromium

    def run(self, argv: Sequence[str], timeout_s: float) -> tuple[int, str]:
        self.calls.append(list(argv))
        args = list(argv)
        if args[:2] == ["sudo", "-n"]:
            if self.sudo != "free":
                return 1, "sudo: a password is required"
            args = args[2:]
            if args == ["true"]:
                return 0, ""
        assert args[0] == "apt-get", args
        if args[1] == self.apt_fails:
            return 100, "E: Could not get lock /var/lib/dpkg/lock-frontend"
        if args[1] == "install" and self.apt_installs:
            self.packages.update(a for a in args[2:] if not a.startswith("-"))
        return 0, ""

    def apt_calls(self) -> list[list[str]]:
        return [c for c in self.calls if "apt-get" in c]


def test_every_part_has_packages_and_every_package_a_reason():
    assert {p.part for p in PACKAGES} == set(system_deps.PARTS)
    assert all(len(p.why) > 20 for p in PACKAGES)


@pytest.mark.parametrize("parts, wanted", [
    (["python"], {"python3-venv"}),
    (["wgpu"], {"mesa-vulkan-drivers"}),
    (["browser"], {"chromium", "fonts-liberation"}),
    (["terminal"], {"tmux"}),
    (["python", "wgpu", "browser", "terminal"], ALL),
    ([], set()),
])
def test_missing_packages_are_those_of_the_parts_asked_for(parts, wanted):
    assert {p.name for p in missing_packages(parts, FakeSystem())} == wanted


def test_nothing_is_run_when_everything_is_installed():
    machine = FakeSystem(installed=ALL, root=False)
    assert ensure(["python", "wgpu", "browser"], machine, say=lambda _: None) == []
    assert machine.calls == []


def test_root_updates_once_then_installs_only_what_is_missing():
    machine = FakeSystem(installed={"fonts-liberation", "python3-venv"})
    installed = ensure(["python", "wgpu", "browser"], machine, say=lambda _: None)
    assert installed == ["mesa-vulkan-drivers", "chromium"]
    update, install = machine.apt_calls()
    assert update == ["apt-get", "update", "-qq"]
    assert install[:3] == ["apt-get", "install", "-y"]  # -y: apt never asks
    assert install[-2:] == ["mesa-vulkan-drivers", "chromium"]
    assert "--no-install-recommends" in install


def test_sudo_without_a_password_is_used_when_not_root():
    machine = FakeSystem(root=False, sudo="free")
    assert ensure(["wgpu"], machine, say=lambda _: None) == ["mesa-vulkan-drivers"]
    assert all(c[:2] == ["sudo", "-n"] for c in machine.calls)
    assert [c[2:4] for c in machine.apt_calls()] == [["apt-get", "update"],
                                                     ["apt-get", "install"]]


@pytest.mark.parametrize("sudo", [None, "password"])
def test_without_root_or_free_sudo_it_stops_with_the_command_to_run(sudo):
    machine = FakeSystem(root=False, sudo=sudo)
    with pytest.raises(SetupError) as caught:
        ensure(["wgpu", "browser"], machine, say=lambda _: None)
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith("run: sudo apt-get update -qq && sudo apt-get install -y -qq "
                            "--no-install-recommends mesa-vulkan-drivers chromium "
                            "fonts-liberation")
    assert machine.apt_calls() == []  # only `sudo -n true` was tried, nothing installed


@pytest.mark.parametrize("failing", ["update", "install"])
def test_a_failing_apt_get_stops_with_its_output_and_the_command(failing):
    machine = FakeSystem(apt_fails=failing)
    with pytest.raises(SetupError) as caught:
        ensure(["browser"], machine, say=lambda _: None)
    message = str(caught.value)
    assert f"apt-get {failing}" in message and "(exit 100)" in message
    assert "Could not get lock" in message
    assert "apt-get install -y -qq --no-install-recommends chromium fonts-liberation" in message
    assert len(machine.apt_calls()) == (1 if failing == "update" else 2)
    assert "chromium" not in machine.packages


def test_apt_get_that_installs_nothing_is_an_error():
    with pytest.raises(SetupError, match="still not installed"):
        ensure(["wgpu"], FakeSystem(apt_installs=False), say=lambda _: None)


def test_a_machine_without_apt_get_is_told_and_left_alone():
    machine = FakeSystem(debian=False)
    said: list[str] = []
    assert ensure(["wgpu"], machine, say=said.append) == []
    assert machine.calls == []
    assert "not a Debian-like system" in said[0] and "mesa-vulkan-drivers" in said[0]


@pytest.mark.parametrize("machine, parts, missing", [
    (FakeSystem(venv=True), ["python"], set()),
    (FakeSystem(chromium=True), ["browser"], {"fonts-liberation"}),
])
def test_what_is_there_another_way_is_not_installed(machine, parts, missing):
    assert {p.name for p in missing_packages(parts, machine)} == missing


def test_the_real_probes_look_at_this_python_and_chromium(monkeypatch, tmp_path):
    browser = tmp_path / "chrome"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    monkeypatch.setenv("CHROMIUM", str(browser))
    assert System().has_chromium()
    monkeypatch.setenv("CHROMIUM", str(tmp_path / "absent"))
    assert not System().has_chromium()
    assert System().has_venv()  # the Python running the tests made a venv


def test_unknown_parts_are_refused():
    with pytest.raises(SetupError,
                       match="unknown part gpu: the parts are python, wgpu, browser, terminal"):
        missing_packages(["gpu"], FakeSystem())


def test_main_leaves_out_the_parts_pyburn_skip_names(monkeypatch, capsys):
    monkeypatch.setenv("PYBURN_SKIP", "wgpu,browser,terminal")
    machine = FakeSystem(installed={"python3-venv"}, root=False)
    assert system_deps.main([], machine) == 0
    assert machine.calls == []


def test_main_prints_one_line_and_fails_where_it_cannot_install(monkeypatch, capsys):
    monkeypatch.delenv("PYBURN_SKIP", raising=False)
    assert system_deps.main(["wgpu"], FakeSystem(root=False)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sudo apt-get install" in err


def test_the_real_calls_never_wait_for_input_and_are_bounded_in_time():
    machine = System()
    status, output = machine.run(["sh", "-c", 'read line; echo "read:$line $DEBIAN_FRONTEND"'],
                                 timeout_s=10)
    assert (status, output) == (0, "read: noninteractive")  # stdin is empty, not a terminal
    status, output = machine.run([sys.executable, "-c", "import time; time.sleep(30)"],
                                 timeout_s=0.5)
    assert status == 124 and "no answer" in output
    assert machine.installed("surely-no-such-package-pyburn") is False
