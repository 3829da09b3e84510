"""keras-seq as a user installs it: the sdist and wheel `python -m build` makes, and the wheel
installed in a fresh virtualenv outside the source tree.

`build_distributions` runs `python -m build --no-isolation`: an isolated build would first
download setuptools into a scratch environment, and these tests must not need the network. The
build backend is the dev venv's setuptools, which satisfies `[build-system] requires`
(`build` checks that, and says which is missing).

`WheelVenv` is a virtualenv made with `python -m venv` in a temporary directory, with the wheel
installed by pip with `--no-deps --no-index`. Its dependencies are not installed from PyPI:
they are the distributions `make venv` already installed in the dev venv, linked in. That
gives the same versions the rest of the suite runs against, needs no network, and takes
seconds where installing TensorFlow, Gradio and the rest takes minutes. Only what the wheel
asks for is linked: the closure of the wheel's own `Requires-Dist` (its METADATA, built from
pyproject.toml) for the extras under test, markers evaluated by `packaging`, recursing through
each installed dependency's own requirements. A dependency pyproject.toml forgot to declare is
therefore missing in the venv and the test that needs it fails, as it would for a user; and a
package of another extra (`ray` in the `app` venv, `gradio` in the base one) is not importable.

Each distribution of the closure has its top-level modules, packages and `.dist-info` (the
first component of each file in its RECORD) symlinked into `<venv>/deps`, which one `.pth`
file in the venv's site-packages puts on `sys.path`. `deps` is a plain path entry, so the
`.pth` files of the dev venv (its editable install of keras-seq above all) are never processed
there; `check_isolated` asserts that, and that nothing on `sys.path` is in the source tree.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
OWN_PACKAGES = ("keras_seq", "builder_ui")  # the import packages the wheel ships
# The canvas's Svelte source (and its node_modules): built into static/graph_canvas.js by
# `make canvas`; the script ships, its source does not.
NOT_SHIPPED = ("builder_ui/app/canvas/frontend",)
# The files the app and the lab read at run time (importlib.resources), beside the modules.
CANVAS_SCRIPT = "builder_ui/app/canvas/static/graph_canvas.js"
PRESETS_DIR = "builder_ui/builders/presets/specs"
COMMAND_TIMEOUT_S = 600  # a hang guard for one command; a quiet machine needs a fraction
# Where an environment variable would put the source tree or another environment in reach.
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV")


@dataclass(frozen=True)
class Built:
    """What `python -m build` left: the sdist, and the wheel it built from that sdist."""

    sdist: Path
    wheel: Path

    def wheel_files(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return {name for name in archive.namelist() if not name.endswith("/")}

    def sdist_files(self) -> set[str]:
        """The sdist's files, without its top folder (`keras_seq-<version>/`)."""
        with tarfile.open(self.sdist) as archive:
            return {
                member.name.split("/", 1)[1]
                for member in archive.getmembers()
                if member.isfile() and "/" in member.name
            }

    def metadata(self) -> Message:
        """The wheel's METADATA (Name, Version, Requires-Dist, Provides-Extra)."""
        with zipfile.ZipFile(self.wheel) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))

    def entry_points(self) -> str:
        with zipfile.ZipFile(self.wheel) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
            return archive.read(name).decode("utf-8")


def build_distributions(outdir: Path) -> Built:
    """Build the sdist and, from it, the wheel of the project at `ROOT` into `outdir`."""
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        cwd=outdir,
    )
    if result.returncode != 0:
        raise AssertionError(f"python -m build failed:\n{result.stdout}\n{result.stderr}")
    sdists = sorted(outdir.glob("*.tar.gz"))
    wheels = sorted(outdir.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, f"built {sdists + wheels}"
    return Built(sdists[0], wheels[0])


def expected_package_files() -> set[str]:
    """What the wheel must hold besides its .dist-info: every module of the two packages in
    the source tree, the canvas script and the presets' YAML (paths relative to `ROOT`).

    Every `.py` file under the packages counts, so a subpackage that lost its `__init__.py`
    (which setuptools' package discovery would then leave out) shows as missing.
    """
    found = {CANVAS_SCRIPT}
    found |= {p.relative_to(ROOT).as_posix() for p in (ROOT / PRESETS_DIR).glob("*.yaml")}
    for package in OWN_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if "__pycache__" not in relative and not relative.startswith(NOT_SHIPPED):
                found.add(relative)
    return found


# --- The dependencies' closure --------------------------------------------------------------


def dev_distributions() -> dict[str, importlib.metadata.Distribution]:
    """The distributions installed in this interpreter's (the dev venv's) site-packages, by
    canonical name."""
    paths = sysconfig.get_paths()
    sites = list(dict.fromkeys([paths["purelib"], paths["platlib"]]))
    return {
        canonicalize_name(dist.metadata["Name"]): dist
        for dist in importlib.metadata.distributions(path=sites)
    }


def dependency_closure(
    metadata: Message, extras: tuple[str, ...]
) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions the wheel needs with `extras`, by canonical name.

    Starts from the wheel's `Requires-Dist` with `extra` set to "" (the base requirements) and
    to each of `extras`, then follows each dependency's own requirements (and the extras asked
    of it, as `jax[cpu]`). A dependency missing from the dev venv, or installed there in a
    version the requirement excludes, raises `LookupError` naming who asked for it.
    """
    own = canonicalize_name(metadata["Name"])
    installed = dev_distributions()
    found: dict[str, importlib.metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    pending = [(own, extra, "the wheel") for extra in ("", *extras)]
    while pending:
        name, extra, asked_by = pending.pop()
        if (name, extra) in done:
            continue
        done.add((name, extra))
        if name == own:
            requires = metadata.get_all("Requires-Dist") or []
        else:
            if name not in installed:
                raise LookupError(
                    f"{name} (required by {asked_by}) is not installed in the dev venv "
                    f"({sys.prefix}): run `make venv`"
                )
            found[name] = installed[name]
            requires = installed[name].requires or []
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
                continue
            dependency = canonicalize_name(requirement.name)
            if dependency != own and dependency in installed:
                version = installed[dependency].version
                if not requirement.specifier.contains(version, prereleases=True):
                    raise LookupError(
                        f"{name} requires {requirement}, the dev venv has {dependency} "
                        f"{version}: run `make venv`"
                    )
            for wanted in ("", *sorted(requirement.extras)):
                pending.append((dependency, wanted, f"{name}[{extra}]" if extra else name))
    return found


def _link_unit(site: Path, parts: tuple[str, ...]) -> tuple[str, ...]:
    """The part of a RECORD path to symlink: its first component, or deeper inside a
    namespace package (`google/` holds protobuf's `google/protobuf` and other distributions'
    packages), so that only the distribution's own files are linked."""
    for depth in range(1, len(parts)):
        head = parts[:depth]
        if not head[-1].isidentifier() or (site.joinpath(*head) / "__init__.py").exists():
            return head
    return parts


def link_distributions(dists: dict[str, importlib.metadata.Distribution], deps: Path) -> None:
    """Symlink each distribution's top-level files (modules, packages, their `.libs` folders
    and the `.dist-info`, from its RECORD) into `deps`."""
    for name, dist in sorted(dists.items()):
        site = Path(dist.locate_file(""))
        if dist.files is None:
            raise LookupError(f"{name} has no RECORD in {site}: its files cannot be linked")
        units = set()
        for file in dist.files:
            parts = file.parts
            if parts[0] in ("..", "bin", "__pycache__") or parts[0].endswith(".pth"):
                continue  # scripts, caches, and .pth files (which a plain path never runs)
            units.add(_link_unit(site, parts))
        for unit in sorted(units):
            source, target = site.joinpath(*unit), deps.joinpath(*unit)
            if os.path.lexists(source) and not os.path.lexists(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(source, target_is_directory=source.is_dir())


# --- The virtualenv ---------------------------------------------------------------------------


@dataclass
class WheelVenv:
    """A virtualenv at `root` with the wheel installed and the closure for `extras` linked;
    commands run in `work`, a scratch folder outside the source tree."""

    root: Path
    work: Path
    extras: tuple[str, ...]
    linked: list[str] = field(default_factory=list)  # the closure's canonical names

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def deps(self) -> Path:
        return self.root / "deps"

    def env(self) -> dict[str, str]:
        """This process's environment without anything that reaches the source tree or the
        dev venv: no PYTHONPATH, the venv's bin first on PATH and the dev venv's off it."""
        dev_bin = Path(sys.prefix, "bin").resolve()
        path = [
            entry
            for entry in os.environ.get("PATH", "").split(os.pathsep)
            if entry and Path(entry).resolve() != dev_bin
        ]
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env.update(
            PATH=os.pathsep.join([str(self.bin), *path]),
            VIRTUAL_ENV=str(self.root),
            PYTHONNOUSERSITE="1",
            # The linked packages' folders are the dev venv's: leave their caches alone.
            PYTHONDONTWRITEBYTECODE="1",
            KERAS_BACKEND="tensorflow",
        )
        return env

    def run(self, *argv: str | Path) -> subprocess.CompletedProcess:
        """Run a command in `work` with `env()`; its output is kept, not checked."""
        return subprocess.run(
            [str(part) for part in argv],
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )

    def keras_seq(self, *argv: str | Path, check: bool = True) -> subprocess.CompletedProcess:
        """Run the venv's `keras-seq` script (the wheel's entry point); with `check`, fail
        unless it exits 0."""
        command = (self.bin / "keras-seq", *argv)
        return self.check(*command) if check else self.run(*command)

    def check(self, *argv: str | Path) -> subprocess.CompletedProcess:
        """`run`, failing with the command's output unless it exits 0."""
        result = self.run(*argv)
        if result.returncode != 0:
            raise AssertionError(
                f"{' '.join(map(str, argv))} exited {result.returncode}:\n"
                f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
            )
        return result

    def python_json(self, code: str, *args: str) -> dict:
        """Run `code` (with `args` in `sys.argv`) in the venv's Python; return the JSON its
        last stdout line prints."""
        result = self.check(self.python, "-c", code, *args)
        return json.loads(result.stdout.strip().splitlines()[-1])

    def site_packages(self) -> Path:
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        return Path(self.check(self.python, "-c", code).stdout.strip())


def make_venv(directory: Path, built: Built, extras: tuple[str, ...] = ()) -> WheelVenv:
    """A fresh virtualenv under `directory` with the wheel (`keras-seq[extras]`) installed.

    The venv has no pip of its own (`--without-pip`): the dev venv's pip installs the wheel
    into it (`pip --python`), so its site-packages holds the wheel alone (Python 3.11's
    ensurepip would add setuptools too, beside the linked one).
    """
    root, work = directory / "venv", directory / "work"
    for place in (root, work):
        assert not place.resolve().is_relative_to(ROOT), f"{place} is inside the source tree"
    work.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)],
        check=True,
        timeout=COMMAND_TIMEOUT_S,
        cwd=work,
    )
    venv = WheelVenv(root, work, extras)
    install = [sys.executable, "-m", "pip", "--python", str(venv.python), "install"]
    install += ["--no-deps", "--no-index", "--disable-pip-version-check", str(built.wheel)]
    result = subprocess.run(
        install,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        cwd=work,
        env={**venv.env(), "PIP_CONFIG_FILE": os.devnull},
    )
    if result.returncode != 0:
        raise AssertionError(f"installing the wheel failed:\n{result.stdout}\n{result.stderr}")
    closure = dependency_closure(built.metadata(), extras)
    own = {canonicalize_name(built.metadata()["Name"])}
    assert not own & set(closure), "the project itself is never linked from the dev venv"
    link_distributions(closure, venv.deps)
    venv.linked = sorted(closure)
    (venv.site_packages() / "_keras_seq_test_deps.pth").write_text(f"{venv.deps}\n")
    return venv


# Run in the venv: where keras_seq, builder_ui and keras come from, and what is on the path.
WHERE_FROM = """
import json, sys
import keras, keras_seq, builder_ui
print(json.dumps({
    "prefix": sys.prefix,
    "path": sys.path,
    "keras_seq": keras_seq.__file__,
    "builder_ui": builder_ui.__file__,
    "keras": keras.__file__,
    "editable": sorted(
        [m for m in sys.modules if "__editable__" in m]
        + [repr(f) for f in sys.meta_path if "editable" in type(f).__module__]
    ),
}))
"""


def check_isolated(venv: WheelVenv) -> None:
    """Assert that the venv imports keras-seq from its own site-packages, its dependencies
    through `deps`, and nothing from the source tree or the dev venv's editable install."""
    found = venv.python_json(WHERE_FROM)
    site = venv.site_packages().resolve()
    assert Path(found["prefix"]).resolve() == venv.root.resolve()
    for package in OWN_PACKAGES:
        assert Path(found[package]).resolve().is_relative_to(site), (package, found[package])
    assert Path(found["keras"]).is_relative_to(venv.deps), found["keras"]
    on_path = [p for p in found["path"] if p and Path(p).resolve().is_relative_to(ROOT)]
    assert not on_path, f"the source tree or the dev venv is on sys.path: {on_path}"
    assert found["editable"] == [], f"the dev venv's editable install leaked in: {found}"
